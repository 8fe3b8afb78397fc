"""The settings of a test broker of its own for share groups (KIP-932)."""
from __future__ import annotations

SESSION_MS = 6000
# share groups are on by default in 4.4 (the `share.version` feature is finalised at format); the share-group
# state topic must fit one broker, and members may have short sessions
SHARE_BROKER_SETTINGS = {
    "group.share.session.timeout.ms": str(SESSION_MS), "group.share.min.session.timeout.ms": "1000",
    "group.share.heartbeat.interval.ms": "1000", "group.share.min.heartbeat.interval.ms": "500",
    "share.coordinator.state.topic.replication.factor": "1", "share.coordinator.state.topic.min.isr": "1",
}
