"""The topics a scenario works on: created if missing (waiting for their metadata), and more partitions
for the partition-change scenario (CreatePartitions, probed first)."""
from __future__ import annotations

import time


class ScenarioError(RuntimeError):
    """A scenario's group did not reach an expected state in time (or its topics did not appear)."""


def ensure_topics(bootstrap: str, topics: dict[str, int], timeout_s: float = 15.0) -> None:
    """Create the topics ({name: partitions}) that are missing and wait until their metadata shows."""
    from kafka import KafkaConsumer
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="rm-workload-admin")
    try:
        for name, parts in topics.items():
            try:
                admin.create_topics([NewTopic(name, parts, 1)])
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()
    probe = KafkaConsumer(bootstrap_servers=bootstrap, client_id="rm-workload-probe")
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(probe.partitions_for_topic(t) for t in topics):
                return
            time.sleep(0.2)
    finally:
        probe.close()
    raise ScenarioError(f"topics {sorted(topics)} did not appear within {timeout_s}s")


def create_partitions_supported(bootstrap: str, topic: str, current: int) -> bool:
    """Whether the broker implements CreatePartitions (probed without changing anything: asking for
    the current count is rejected as INVALID_PARTITIONS by a broker that implements it)."""
    from kafka.admin import KafkaAdminClient, NewPartitions
    from kafka.errors import IncompatibleBrokerVersion, UnsupportedVersionError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="rm-workload-admin")
    try:
        admin.create_partitions({topic: NewPartitions(current)})
        return True
    except (IncompatibleBrokerVersion, UnsupportedVersionError):
        return False
    except Exception:
        return True  # e.g. InvalidPartitionsError: the API exists
    finally:
        admin.close()


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    from kafka.admin import KafkaAdminClient, NewPartitions

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="rm-workload-admin")
    try:
        admin.create_partitions({topic: NewPartitions(total)})
    finally:
        admin.close()
