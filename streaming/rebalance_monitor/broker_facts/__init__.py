"""What the monitor asks the brokers themselves, and what their answers can tell.

| module | holds |
| --- | --- |
| `release.py` | the brokers' release from their ApiVersions answer (`release_from_api_versions`, pure; `ask_release` asks live brokers with kafka-python): what it can and cannot tell apart |
| `release_fingerprints.py` | generated (scripts/api_versions_table.py): what a broker of each Apache Kafka release from 3.9.0 to 4.4.0 advertises in ApiVersions |
"""
