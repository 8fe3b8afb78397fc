"""Small admin steps the tests, workloads and the demo take on a real broker (kafka-python's admin client):
create topics and wait until every broker's metadata shows them, add partitions."""
from __future__ import annotations

import time


def _admin(bootstrap: str):
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="rm-test-admin", request_timeout_ms=30000)


def create_topics(bootstrap: str, topics: dict[str, int], replication: int = 1, timeout_s: float = 60.0,
                  configs: dict[str, str] | None = None) -> None:
    """Create topics ({name: partitions}) if missing and wait until their leaders are known."""
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = _admin(bootstrap)
    try:
        for name, parts in topics.items():
            try:
                admin.create_topics([NewTopic(name, parts, replication, topic_configs=configs or {})])
            except TopicAlreadyExistsError:
                pass
        wait_for_topics(admin, topics, timeout_s)
    finally:
        admin.close()


def wait_for_topics(admin, topics: dict[str, int], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    missing: dict[str, int] = dict(topics)
    while missing and time.monotonic() < deadline:
        described = admin.describe_topics(list(missing))
        for t in described:
            parts = t.get("partitions") or []
            if t.get("error_code", 0) == 0 and len(parts) >= missing.get(t.get("name") or t.get("topic"), 1) and \
                    all(p.get("leader_id", p.get("leader", -1)) >= 0 for p in parts):
                missing.pop(t.get("name") or t.get("topic"), None)
        if missing:
            time.sleep(0.2)
    if missing:
        raise TimeoutError(f"topics not ready within {timeout_s}s: {sorted(missing)}")


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    """CreatePartitions: grow `topic` to `total` partitions and wait until they have leaders."""
    from kafka.admin import NewPartitions

    admin = _admin(bootstrap)
    try:
        admin.create_partitions({topic: NewPartitions(total_count=total)})
        wait_for_topics(admin, {topic: total})
    finally:
        admin.close()
