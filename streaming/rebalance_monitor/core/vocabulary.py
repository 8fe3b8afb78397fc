"""The monitor's one vocabulary: the names its events, records, states, causes and timeouts use.

Each is a `StrEnum`: a member is its text (`GroupState.STABLE == "Stable"`), so records serialise to the same JSON
as before and inputs written by other programs compare equal, while code names the value once, here. The core,
the inputs, the Spark job, the exporter, the sinks and the tests use these instead of repeating the strings.
Pure: standard library only.
"""
from __future__ import annotations

from enum import StrEnum


class EventType(StrEnum):
    """The `type` of a canonical event (contract section 1; docs/contract.md)."""

    JOIN = "join"
    SYNC = "sync"
    HEARTBEAT = "heartbeat"
    POLL = "poll"
    LEAVE = "leave"
    COMMIT = "commit"
    REVOKED = "revoked"
    LOST = "lost"
    REBALANCE_STARTED = "rebalance_started"
    GENERATION_COMPLETED = "generation_completed"
    MEMBER_REMOVED = "member_removed"
    GROUP_EMPTY = "group_empty"
    GROUP_DELETED = "group_deleted"
    COORDINATOR_CHANGE = "coordinator_change"
    TOPIC_PARTITIONS = "topic_partitions"
    END_OFFSETS = "end_offsets"
    BROKER_RELEASE = "broker_release"
    CLIENT_METRICS = "client_metrics"  # a snapshot of a member's own heartbeat and poll clocks (KIP-714 push, reporter)
    GROUP_CONFIG = "group_config"  # a group's settings as the broker holds them (DescribeConfigs; broker_facts/)
    GROUP_DESCRIBED = "group_described"  # the group as its coordinator describes it (the describe APIs; broker_facts/)
    # a streams group's topology (its subtopologies, source and state topics) and the coordinator's last assignment
    # configs (num.standby.replicas), from __consumer_offsets (KIP-1071): what the task assignor is handed
    STREAMS_TOPOLOGY = "streams_topology"
    SHARE_PARTITIONS = "share_partitions"


class RecordKind(StrEnum):
    """The `kind` of an output record (contract section 2; docs/records.md)."""

    GENERATION = "generation"
    MEMBER_TIMEOUT = "member_timeout"
    MEMBER_AT_RISK = "member_at_risk"
    STORM = "storm"
    REBALANCE_STARTED = "rebalance_started"
    GROUP_STATUS = "group_status"
    OFFSETS_COMMITTED = "offsets_committed"
    END_OFFSETS = "end_offsets"
    GROUP_DELETED = "group_deleted"
    COORDINATOR = "coordinator"
    DEAD_LETTER = "dead_letter"
    BROKER_VIEW = "broker_view"  # the coordinator's own description of a group, held against the reconstruction


# What the history sink keeps (and `rebalance-monitor history` reads): the record kinds that say what happened.
HISTORY_KINDS = (RecordKind.GENERATION, RecordKind.MEMBER_TIMEOUT, RecordKind.MEMBER_AT_RISK, RecordKind.STORM,
                 RecordKind.REBALANCE_STARTED, RecordKind.GROUP_DELETED, RecordKind.COORDINATOR,
                 RecordKind.BROKER_VIEW)


# The record kinds whose `ts` and `detected_ms` say when a driver noticed (the next event of the group, or its clock
# passing): the one thing in which replay and the Spark job may differ (docs/records.md).
DETECTED_KINDS = (RecordKind.MEMBER_TIMEOUT, RecordKind.MEMBER_AT_RISK)


class GroupState(StrEnum):
    """A consumer group's state, as the coordinator names it (the `state` of a `group_status` record)."""

    EMPTY = "Empty"  # no members
    PREPARING = "PreparingRebalance"  # a rebalance started: members are (re)joining
    COMPLETING = "CompletingRebalance"  # the new generation formed: members are syncing its assignment
    STABLE = "Stable"  # every member has its assignment for the current generation
    DEAD = "Dead"  # the group's metadata was deleted


REBALANCING_STATES = (GroupState.PREPARING, GroupState.COMPLETING)


class TimeoutKind(StrEnum):
    """Which deadline of a member passed (the `timeout` of a `member_timeout` record)."""

    SESSION = "session"  # no heartbeat for session.timeout.ms
    POLL = "poll"  # no poll for max.poll.interval.ms (rebalance_timeout_ms on the wire)


class TimeoutSource(StrEnum):
    """Where a member's session timeout came from (the `timeout_source` of a member's timeout, warning and cause)."""

    CLIENT = "client"  # the member's own JoinGroup (classic), or its client's configuration (a reporter)
    BROKER = "broker"  # the brokers' group.consumer.session.timeout.ms (DescribeConfigs on a broker)
    GROUP = "group"  # the group's own consumer.session.timeout.ms (DescribeConfigs on the group)
    CONFIG = "config"  # the monitor's fallback, core.kip848_session_timeout(s): the broker did not say


class GroupProtocol(StrEnum):
    """A `join`'s `group_protocol`: the rebalance protocol of the member's group (null: classic)."""

    CLASSIC = "classic"
    CONSUMER = "consumer"  # KIP-848: the broker assigns; a member never rejoins, its syncs carry its member epoch
    SHARE = "share"  # KIP-932 share group: as `consumer`, and members share partitions (no revocation)
    # KIP-1071 streams group (Kafka Streams): as `consumer`; a member is a stream thread of a process and is
    # assigned tasks (a subtopology and a partition: active, standby, warm-up), not partitions
    STREAMS = "streams"


# the group protocols whose coordinator assigns (a member stays in every group epoch until it goes)
BROKER_ASSIGNED = frozenset({GroupProtocol.CONSUMER, GroupProtocol.SHARE, GroupProtocol.STREAMS})
# a share group's assignor: Kafka's SimpleAssignor (`group.share.assignors`; core/assignors/share_simple.py)
SHARE_ASSIGNOR = "simple"
# a streams group's task assignor: Kafka's StickyTaskAssignor (`group.streams.assignors`), not recomputed yet (its
# name is also the classic StickyAssignor's: a streams member is told by its `streams` state, Member.streams)
STREAMS_ASSIGNOR = "sticky"


class GroupType(StrEnum):
    """A group's type as the broker runs it (the `group_type` of its records and the label of its metrics)."""

    CLASSIC = "classic"  # members join with JoinGroup/SyncGroup; a client leader assigns
    CONSUMER = "consumer"  # KIP-848 (a group being upgraded from classic, with members of both, is one already)
    STREAMS = "streams"  # KIP-1071: Kafka Streams on group.protocol=streams; the broker assigns tasks
    SHARE = "share"  # KIP-932: members share partitions
    UNKNOWN = "unknown"  # no member, description or record has said yet (a group known by its commits alone)


class ConfigSource(StrEnum):
    """Which resource a `group_config` event describes."""

    BROKER = "broker"  # group "": the brokers' defaults for every group of the type
    GROUP = "group"  # one group's own overrides (only the keys it sets; none: it overrides nothing)


class Cause(StrEnum):
    """Why a rebalance happened (contract section 2): the `cause` of an entry of a record's `causes`."""

    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"
    SESSION_TIMEOUT = "session_timeout"
    POLL_TIMEOUT = "poll_timeout"
    JOIN_TIMEOUT = "join_timeout"
    SYNC_TIMEOUT = "sync_timeout"
    LEADER_REJOIN = "leader_rejoin"
    METADATA_CHANGE = "metadata_change"
    SUBSCRIPTION_CHANGE = "subscription_change"
    STATIC_MEMBER_REPLACED = "static_member_replaced"
    ADMIN_REMOVAL = "admin_removal"
    COORDINATOR_CHANGE = "coordinator_change"
    # a streams group's (KIP-1071): its topology initialised (or changed) by a member; its assignment
    # configurations (`streams.num.standby.replicas`, ...) changed, an operator's doing
    TOPOLOGY_CHANGE = "topology_change"
    ASSIGNMENT_CONFIG_CHANGE = "assignment_config_change"
    UNKNOWN = "unknown"
