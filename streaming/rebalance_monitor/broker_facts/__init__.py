"""What the monitor asks the broker: what Kafka holds of groups in the broker since KIP-848, read with its own
requests (kafka-python, the base install), decoded and handed to the core as canonical events. Thin: it asks,
decodes and forwards; the core decides (core/group/group_config.py).

| module | holds |
| --- | --- |
| `group_configs.py` | DescribeConfigs of the brokers (`group.<type>.*`) and of each group (its overrides) -> `group_config` events |
| `poller.py` | the broker poller of `run`: asks at start, every `broker_facts.refresh` and for each group the job first sees; publishes to the events topic |
| `release.py` | the brokers' release from their ApiVersions answer (`release_from_api_versions`, pure; `ask_release` asks live brokers with kafka-python): what it can and cannot tell apart |
| `release_fingerprints.py` | generated (scripts/api_versions_table.py): what a broker of each Apache Kafka release from 3.9.0 to 4.4.0 advertises in ApiVersions |
| `describe.py` | `describe_groups(client, groups)`: each group's state at its coordinator, through ConsumerGroupDescribe (KIP-848 groups) or DescribeGroups (classic), chosen by ListGroups v5's group type; `BrokerUnreachable` |
| `descriptions.py` | `GroupDescription`, `MemberDescription` (frozen, plain Python values), Kafka error names |
| `consumer_group_describe.py` | ConsumerGroupDescribe (API 69) on kafka-python's schema machinery, from this package's `ConsumerGroupDescribe{Request,Response}.json`; the strict decoder (`DecodeError`) |
| `classic_describe.py` | DescribeGroups (API 15) answers, the consumer protocol's subscription and assignment bytes decoded |
"""
