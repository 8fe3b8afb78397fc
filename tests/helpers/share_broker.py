"""A test broker of its own for share groups (KIP-932): its settings, and the broker started with its topics."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rebalance_monitor.testing.broker import Broker

SESSION_MS = 6000
# share groups are on by default in 4.4 (the `share.version` feature is finalised at format); the share-group
# state topic must fit one broker, and members may have short sessions
SHARE_BROKER_SETTINGS = {
    "group.share.session.timeout.ms": str(SESSION_MS), "group.share.min.session.timeout.ms": "1000",
    "group.share.heartbeat.interval.ms": "1000", "group.share.min.heartbeat.interval.ms": "500",
    "share.coordinator.state.topic.replication.factor": "1", "share.coordinator.state.topic.min.isr": "1",
}


@contextmanager
def share_broker(topics: dict[str, int]) -> Iterator[Broker]:
    """A started broker with SHARE_BROKER_SETTINGS (the shared ones keep Kafka's 45 s share session) and `topics`
    ({name: partitions}), stopped at the end."""
    b = Broker(settings=SHARE_BROKER_SETTINGS).start()
    try:
        b.create_topics(topics)
        yield b
    finally:
        b.stop()
