"""What the monitor asks the broker: what Kafka holds of groups in the broker since KIP-848, read with its own
requests (kafka-python, the base install) and handed to the core as canonical events. Thin: it asks, decodes and
forwards; the core decides (core/group/group_config.py).

| module | holds |
| --- | --- |
| `group_configs.py` | DescribeConfigs of the brokers (`group.<type>.*`) and of each group (its overrides) -> `group_config` events |
| `poller.py` | the broker poller of `run`: asks at start, every `broker_facts.refresh` and for each group the job first sees; publishes to the events topic |
"""
