"""What the monitor asks the broker: the brokers' own answers, decoded and handed over as plain values.

| module | holds |
| --- | --- |
| `describe.py` | `describe_groups(client, groups)`: each group's state at its coordinator, through ConsumerGroupDescribe (KIP-848 groups) or DescribeGroups (classic), chosen by ListGroups v5's group type; `BrokerUnreachable` |
| `descriptions.py` | `GroupDescription`, `MemberDescription` (frozen, plain Python values), Kafka error names |
| `consumer_group_describe.py` | ConsumerGroupDescribe (API 69) on kafka-python's schema machinery, from this package's `ConsumerGroupDescribe{Request,Response}.json`; the strict decoder (`DecodeError`) |
| `classic_describe.py` | DescribeGroups (API 15) answers, the consumer protocol's subscription and assignment bytes decoded |
"""
