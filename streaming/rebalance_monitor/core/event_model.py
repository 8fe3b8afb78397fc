"""The canonical event model, schema v1 (contract section 1): one immutable dataclass per event type, and
`Rejected` with its closed set of reasons. Parsing is `event_parsing.py`; `events.py` is the one import."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Union

__all__ = ["SCHEMA_VERSION", "DEFAULT_MAX_BYTES", "TopicPartition", "OffsetEntry", "REASON_NOT_JSON",
           "REASON_NOT_OBJECT", "REASON_TOO_LARGE", "REASON_UNSUPPORTED_VERSION", "REASON_UNKNOWN_TYPE",
           "REASON_MISSING_FIELD", "REASON_BAD_TYPE", "REASON_BAD_VALUE", "REASON_FUTURE_TS", "REASON_LATE",
           "REJECT_REASON_PREFIXES", "Rejected", "Event", "MemberEvent", "Join", "Sync", "Heartbeat", "Poll",
           "Leave", "ClientMetrics", "Commit", "Revoked", "Lost", "MemberInfo", "RebalanceStarted",
           "GenerationCompleted", "MemberRemoved", "GroupEmpty", "GroupDeleted", "CoordinatorChange", "TopicPartitions",
           "EndOffsets", "BrokerRelease", "GroupConfig", "GroupDescribed", "DescribedMember",
           "StreamsSubtopology", "StreamsTopology", "SharePartitions", "AnyEvent"]

SCHEMA_VERSION = 1
DEFAULT_MAX_BYTES = 1 << 20  # a record value above this is rejected as too_large

TopicPartition = tuple  # (topic: str, partition: int)
OffsetEntry = tuple  # (topic: str, partition: int, offset: int)


# --- rejection reasons --------------------------------------------------------------------------
# The closed set of reason prefixes. `missing_field:`, `bad_type:` and `bad_value:` carry a field name.
REASON_NOT_JSON = "not_json"
REASON_NOT_OBJECT = "not_object"
REASON_TOO_LARGE = "too_large"
REASON_UNSUPPORTED_VERSION = "unsupported_version"
REASON_UNKNOWN_TYPE = "unknown_type"
REASON_MISSING_FIELD = "missing_field"
REASON_BAD_TYPE = "bad_type"
REASON_BAD_VALUE = "bad_value"
REASON_FUTURE_TS = "future_ts"
REASON_LATE = "late_event"
REJECT_REASON_PREFIXES = (
    REASON_NOT_JSON, REASON_NOT_OBJECT, REASON_TOO_LARGE, REASON_UNSUPPORTED_VERSION,
    REASON_UNKNOWN_TYPE, REASON_MISSING_FIELD, REASON_BAD_TYPE, REASON_BAD_VALUE,
    REASON_FUTURE_TS, REASON_LATE,
)


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record that could not be used: why, and the raw value (kept for the dead-letter output)."""

    reason: str
    raw: Any
    detail: str = ""

    @property
    def reason_class(self) -> str:
        """The reason without its field suffix, e.g. `missing_field` for `missing_field:ts`."""
        return self.reason.split(":", 1)[0]


# --- events -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Event:
    type: str
    ts: int
    group: str
    v: int = 1


@dataclass(frozen=True, slots=True)
class MemberEvent(Event):
    member_id: str = ""
    group_instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None


@dataclass(frozen=True, slots=True)
class Join(MemberEvent):
    protocols: tuple = ()
    topics: tuple = ()
    owned: tuple = ()
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    heartbeat_interval_ms: int | None = None
    reason: str | None = None
    rack: str | None = None
    generation: int | None = None  # the generation the owned partitions belong to (sticky user data)
    group_protocol: str | None = None  # "consumer": a KIP-848 member (the broker assigns); else classic
    # a streams group's member (group_protocol "streams", KIP-1071): the Kafka Streams process it is a thread
    # of, the topology epoch it runs and its client tags (rack-aware standby placement)
    process_id: str | None = None
    topology_epoch: int | None = None
    client_tags: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Sync(MemberEvent):
    generation: int = -1
    protocol: str | None = None
    leader: str | None = None
    assignment: tuple = ()
    # KIP-848 (from __consumer_offsets): "stable", or "unrevoked_partitions" / "unreleased_partitions" while the
    # member reconciles to its epoch's target assignment (not yet its settled state in that epoch)
    member_state: str | None = None
    # a streams group's member: its tasks, each (subtopology id, partition); `assignment` is then empty
    active_tasks: tuple | None = None
    standby_tasks: tuple | None = None
    warmup_tasks: tuple | None = None
    # a share member's (KIP-932, from __consumer_offsets): the ids of its assignment's topics, {name: Kafka Uuid}
    # (the simple assignor's tie-breaks follow them)
    topic_ids: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Heartbeat(MemberEvent):
    generation: int = -1
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Poll(MemberEvent):
    records: int | None = None


@dataclass(frozen=True, slots=True)
class Leave(MemberEvent):
    reason: str | None = None
    # extension: "kip714" or "reporter" when the leave is a Java client's telemetry saying it closed (the broker
    # plugin's terminating push, the metrics reporter's close), not a LeaveGroup seen: whether the member also
    # left the group, the coordinator's view tells (core/group/client_events.on_leave)
    source: str | None = None
    # extension: when the broker received the push (the broker plugin's leave); see ClientMetrics.received_ms
    received_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ClientMetrics(MemberEvent):
    """Extension: a snapshot of the member's own clocks at `ts`, as a Java client measures them (pushed to the
    broker under KIP-714, or read by a metrics reporter in the client), not a heartbeat or poll of its own: the last
    heartbeat was `last_heartbeat_ms_ago` before `ts` (Kafka counts whole seconds). `member_id` is "" when the
    source cannot name the member (a reporter): the core matches it by client id (and host) instead."""

    source: str | None = None  # "kip714" (a broker plugin) or "reporter" (a metrics reporter in the client)
    interval_ms: int | None = None  # how often the snapshots come
    client_instance_id: str | None = None
    last_heartbeat_ms_ago: int | None = None
    last_poll_ms_ago: int | None = None
    poll_interval_max_ms: int | None = None  # the longest time between two polls in the client's sample window
    assigned_partitions: int | None = None
    poll_idle_ratio: float | None = None
    session_timeout_ms: int | None = None  # the client's configuration, where the source knows it (a reporter)
    rebalance_timeout_ms: int | None = None  # max.poll.interval.ms, likewise
    # KIP-714's standard consumer metrics, as the client reports them (every client that pushes: librdkafka too)
    rebalance_latency_avg_ms: int | None = None
    rebalance_latency_max_ms: int | None = None
    rebalances: int | None = None  # rebalances since the client's previous snapshot
    rebalance_latency_ms: int | None = None  # their summed latency
    # extension: when the broker received the push (the broker plugin), beside the client's own time `ts`. A `ts`
    # more than kafka.max_future_skew ahead of it is a client clock ahead of the broker's: the event then takes
    # this as its time (event_parsing.parse_event)
    received_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Commit(MemberEvent):
    offsets: tuple = ()
    generation: int | None = None


@dataclass(frozen=True, slots=True)
class Revoked(MemberEvent):
    """Extension: the client's rebalance listener revoked these partitions (onPartitionsRevoked)."""

    partitions: tuple = ()
    generation: int | None = None


@dataclass(frozen=True, slots=True)
class Lost(MemberEvent):
    """Extension: the client lost these partitions without a clean revoke (onPartitionsLost)."""

    partitions: tuple = ()
    generation: int | None = None


@dataclass(frozen=True, slots=True)
class MemberInfo:
    member_id: str
    group_instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    topics: tuple | None = None
    owned: tuple | None = None
    assignment: tuple | None = None
    rack: str | None = None
    generation: int | None = None  # generation of `owned` (sticky user data), where known


@dataclass(frozen=True, slots=True)
class RebalanceStarted(Event):
    generation: int = -1
    reason: str | None = None
    member_id: str | None = None  # the member the coordinator names in its reason (who caused it), if any
    # a streams group's bump: the hash of its topics' metadata, and the topology epoch it validated (log only)
    metadata_hash: int | None = None
    topology_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class GenerationCompleted(Event):
    generation: int = -1
    protocol: str | None = None
    leader: str | None = None
    members: tuple | None = None  # tuple[MemberInfo] or None when the source lacks them
    protocol_type: str | None = None


@dataclass(frozen=True, slots=True)
class MemberRemoved(Event):
    member_id: str = ""
    cause: str = "unknown"
    reason: str | None = None
    group_instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None


@dataclass(frozen=True, slots=True)
class GroupEmpty(Event):
    generation: int = -1


@dataclass(frozen=True, slots=True)
class GroupDeleted(Event):
    """Extension: the group's metadata was deleted (a tombstone in __consumer_offsets, or Dead)."""


@dataclass(frozen=True, slots=True)
class CoordinatorChange(Event):
    """Extension: a broker became (elected) or stopped being (resigned) coordinator of an
    `__consumer_offsets` partition. `group` may be empty: the event then applies to every group whose
    coordinator partition is `partition`."""

    partition: int = -1
    action: str = "elected"
    broker: int | None = None
    epoch: int | None = None


@dataclass(frozen=True, slots=True)
class TopicPartitions(Event):
    topics: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EndOffsets(Event):
    offsets: tuple = ()


@dataclass(frozen=True, slots=True)
class BrokerRelease(Event):
    """Extension: the Apache Kafka release a broker runs (its start-up line `Kafka version: 4.0.0`), group "":
    every group's server assignor follows that release's rules from then on (unless the configuration names one)."""

    release: str = ""
    broker: int | None = None
    # where it was read: None (the broker's log line, exact to the patch) or "api_versions" (the broker poller's
    # guess from the ApiVersions answer: minor releases only, broker_facts/release.py); a guess never replaces a
    # release a log line gave
    source: str | None = None


@dataclass(frozen=True, slots=True)
class GroupConfig(Event):
    """Extension: a group type's settings as the broker holds them (DescribeConfigs), for KIP-848 groups' session
    timeouts, heartbeat intervals and default server assignor. `source` "broker" with group "": the brokers'
    `group.<type>.*` defaults, for every group; "group": one group's own overrides (`<type>.session.timeout.ms`,
    ...), only the keys it sets (none: it overrides nothing). `group_type`: consumer (KIP-848), streams or share."""

    source: str = "broker"
    group_type: str = "consumer"
    session_timeout_ms: int | None = None
    heartbeat_interval_ms: int | None = None
    assignors: tuple | None = None  # the server assignors the broker offers, its default first
    num_standby_replicas: int | None = None  # streams: `group.streams.num.standby.replicas` / a group's own


@dataclass(frozen=True, slots=True)
class DescribedMember:
    """A member as its coordinator describes it (ConsumerGroupDescribe, ShareGroupDescribe, StreamsGroupDescribe,
    DescribeGroups)."""

    member_id: str
    group_instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None  # the address the broker saw
    member_epoch: int | None = None  # KIP-848 groups
    assignment: tuple | None = None  # the partitions it owns now
    target_assignment: tuple | None = None  # KIP-848 groups: its partitions in the coordinator's target
    # a streams group's member: its process (Kafka Streams client), and its tasks ((subtopology id, partition)
    # pairs) now and in the coordinator's target
    process_id: str | None = None
    active_tasks: tuple | None = None
    standby_tasks: tuple | None = None
    warmup_tasks: tuple | None = None
    target_active_tasks: tuple | None = None
    target_standby_tasks: tuple | None = None
    target_warmup_tasks: tuple | None = None


@dataclass(frozen=True, slots=True)
class GroupDescribed(Event):
    """Extension: the group as its coordinator describes it when asked (the broker poller: ConsumerGroupDescribe for
    KIP-848 groups, ShareGroupDescribe and StreamsGroupDescribe for share and streams groups, DescribeGroups for
    classic ones), held against the monitor's own reconstruction (a `broker_view` record) and, for a KIP-848
    group, naming its assignor."""

    group_type: str | None = None  # classic, consumer, streams, share
    state: str | None = None
    protocol: str | None = None  # the assignor
    group_epoch: int | None = None  # KIP-848 groups
    assignment_epoch: int | None = None
    members: tuple = ()  # DescribedMember
    error: str | None = None  # the Kafka error of the answer, e.g. GROUP_ID_NOT_FOUND
    topology_epoch: int | None = None  # a streams group's: the epoch of its topology


@dataclass(frozen=True, slots=True)
class StreamsSubtopology:
    """A subtopology of a streams group's topology (StreamsGroupTopologyValue): its tasks number the most partitions
    among its source topics and repartition source topics (Kafka's InternalTopicManager); it is stateful when it has
    state changelog topics (only stateful tasks get standby replicas)."""

    subtopology_id: str
    source_topics: tuple = ()
    # a repartition topic the topology reads: {name: partitions} (0: the coordinator derives it from its upstream)
    repartition_source_topics: dict | None = None
    state_changelog_topics: tuple = ()
    source_topic_regex: tuple = ()


@dataclass(frozen=True, slots=True)
class SharePartitions(Event):
    """Extension: the partitions whose share-group state a share group's coordinator has initialised (KIP-932,
    `__consumer_offsets` record type 15): the only ones its simple assignor hands out."""

    initialized: tuple = ()  # ((topic, partition), ...)


@dataclass(frozen=True, slots=True)
class StreamsTopology(Event):
    """Extension: a streams group's topology as its coordinator keeps it (KIP-1071, `__consumer_offsets` record type
    23), or the assignment configs it last used (its group metadata record's LastAssignmentConfigs): each field
    absent (None) leaves what the core knows of it unchanged."""

    topology_epoch: int | None = None
    subtopologies: tuple | None = None  # StreamsSubtopology
    num_standby_replicas: int | None = None  # the coordinator's `num.standby.replicas` of its last assignment


AnyEvent = Union[Join, Sync, Heartbeat, Poll, Leave, ClientMetrics, Commit, Revoked, Lost, RebalanceStarted,
                 GenerationCompleted, MemberRemoved, GroupEmpty, GroupDeleted, CoordinatorChange,
                 TopicPartitions, EndOffsets, BrokerRelease, GroupConfig, GroupDescribed, StreamsTopology,
                 SharePartitions]
