"""The one list of every metric the monitor exports.

The exporter, the reference page ``docs/metrics.md`` (``docs.py``) and the Grafana dashboards are all generated
from :data:`CATALOGUE`; add a metric here first, never elsewhere. Each family is also a module constant
(``REBALANCES``, ``LAG``, ...): the exporter's renderers write the lines of a family through its spec (its name and
its ``labels``, in order) and never spell a name or a label themselves, like KMinion's descriptors
(``redpanda-data/kminion``, ``prometheus/exporter.go``). ``tests/metrics/test_catalogue_drift.py`` checks both.

Names follow the Prometheus conventions: counters end in ``_total``; units are spelled in the name
(``_seconds``); ``info``-type metrics are exposed as gauges whose value is always 1 (``*_info``).
Histogram names are the base name: the exposition adds ``_bucket``/``_sum``/``_count``.
"""
from __future__ import annotations

from dataclasses import dataclass

# Rebalances last from a fraction of a second (a lone consumer joining an empty group) up to the
# rebalance timeout (max.poll.interval.ms, default 5 minutes; often raised to 10). Buckets: 0.1 s .. 10 min.
REBALANCE_DURATION_BUCKETS: tuple[float, ...] = (
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
)

# A streaming micro-batch of the monitor: tens of milliseconds .. a few minutes.
BATCH_DURATION_BUCKETS: tuple[float, ...] = (
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
)

METRIC_TYPES = ("counter", "gauge", "histogram", "info")

# The first label of every family: the Kafka cluster the series is of (the configuration's kafka.cluster_name,
# "default" unless set; one run may watch several clusters, each with its own store: fleet_exposition.py). The
# name is Grafana's Kafka integration's; `cluster` is left to the scrape (kube-prometheus' external labels use it).
CLUSTER_LABEL = "kafka_cluster"
DEFAULT_CLUSTER = "default"               # its value when the configuration names no cluster
# The labels of every series that belongs to a consumer group, first in the labels of those families, in this
# order: the cluster, the group's name, and its type (classic, consumer, streams, share, or unknown until something
# says it: core/group/group_type.py). The exporter writes them once per group and reuses the text.
GROUP_LABEL = "group"
GROUP_TYPE_LABEL = "group_type"
GROUP_KEY = (CLUSTER_LABEL, GROUP_LABEL, GROUP_TYPE_LABEL)
CLUSTER_KEY = (CLUSTER_LABEL,)          # the first labels of a family of the whole cluster (or of the monitor)

# lag.granularity: how finely the per-partition offset families are exported (like KMinion's `granularity`).
# "partition": a series per group, topic and partition; "topic": summed over each topic's partitions; "group":
# summed over all of the group's partitions. Finest first.
LAG_GRANULARITIES = ("partition", "topic", "group")


@dataclass(frozen=True)
class MetricSpec:
    """One exported metric family.

    ``name`` is the family name as it appears in the exposition (for counters including ``_total``).
    ``labels`` are in the order the exporter emits them. ``unit`` is informative ("seconds", "offsets",
    "partitions", "members", "records", "rows", "groups", "bytes" or "" when dimensionless/boolean).
    ``buckets`` is set for histograms only (upper bounds, ``+Inf`` implied).
    ``rollup`` names the labels (coarsest first: ``topic``, ``partition``) that a coarser ``lag.granularity``
    sums away: see :meth:`labels_at`.
    """

    name: str
    type: str
    help: str
    labels: tuple[str, ...] = ()
    unit: str = ""
    buckets: tuple[float, ...] | None = None
    rollup: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.type not in METRIC_TYPES:
            raise ValueError(f"{self.name}: unknown metric type {self.type!r}")
        if self.type == "counter" and not self.name.endswith("_total"):
            raise ValueError(f"{self.name}: counter names end in _total")
        if self.type == "histogram" and not self.buckets:
            raise ValueError(f"{self.name}: a histogram needs buckets")
        if self.type != "histogram" and self.buckets is not None:
            raise ValueError(f"{self.name}: only histograms have buckets")
        if self.labels[:1] != (CLUSTER_LABEL,):
            raise ValueError(f"{self.name}: every family starts with the label {CLUSTER_LABEL}")
        if GROUP_LABEL in self.labels and self.labels[:len(GROUP_KEY)] != GROUP_KEY:
            raise ValueError(f"{self.name}: a group's family starts with the labels {', '.join(GROUP_KEY)}")
        if self.rollup and (self.type != "gauge" or self.labels[-len(self.rollup):] != self.rollup):
            raise ValueError(f"{self.name}: only a gauge's last labels can be summed away")

    def labels_at(self, granularity: str) -> tuple[str, ...]:
        """The labels exported at ``lag.granularity`` ``granularity`` (one of :data:`LAG_GRANULARITIES`): at
        "topic" the ``partition`` label is summed away, at "group" ``topic`` too."""
        if granularity not in LAG_GRANULARITIES:
            raise ValueError(f"unknown lag granularity {granularity!r}; allowed values: "
                             f"{', '.join(LAG_GRANULARITIES)}")
        if not self.rollup:
            return self.labels
        kept = len(self.rollup) - LAG_GRANULARITIES.index(granularity)
        return self.labels[: len(self.labels) - len(self.rollup) + max(0, kept)]

    def exported_at(self, granularity: str) -> bool:
        """False when every label of a summed family but the cluster is summed away (the end offsets at "group": a
        sum over the whole cluster would say nothing)."""
        return not self.rollup or self.labels_at(granularity) != (CLUSTER_LABEL,)

    @property
    def group_scoped(self) -> bool:
        """True when the series carry a ``group`` label (dropped with their group); the others are the cluster's
        (the topics' end offsets) or the monitor's."""
        return GROUP_LABEL in self.labels

    @property
    def prom_type(self) -> str:
        """The type written in the ``# TYPE`` line (info metrics are exposed as gauges = 1)."""
        return "gauge" if self.type == "info" else self.type


def _g(name, type_, help_, labels=(), unit="", buckets=None, rollup=()) -> MetricSpec:
    return MetricSpec(name=name, type=type_, help=help_, labels=labels, unit=unit, buckets=buckets,
                      rollup=tuple(rollup))


_PER_PARTITION = ("topic", "partition")   # summed away at coarser lag.granularity levels


# ---- rebalances and generations -------------------------------------------------------------------------
REBALANCES = _g(
    "kafka_consumergroup_rebalances_total", "counter",
    "Completed rebalances by cause. A generation with several causes counts once per cause; "
    "a generation whose cause is not known counts under cause=\"unknown\".",
    (*GROUP_KEY, "cause"))
GENERATIONS = _g(
    "kafka_consumergroup_generations_total", "counter",
    "Completed generations (each counted once, whatever the number of causes).",
    GROUP_KEY)
REBALANCE_DURATION = _g(
    "kafka_consumergroup_rebalance_duration_seconds", "histogram",
    "Time from the first trigger of a rebalance to the completion of the new generation "
    "(generations whose start is unknown are not observed).",
    GROUP_KEY, "seconds", REBALANCE_DURATION_BUCKETS)
GENERATION = _g(
    "kafka_consumergroup_generation", "gauge",
    "Current generation id of the group.", GROUP_KEY)
STATE = _g(
    "kafka_consumergroup_state", "gauge",
    "Group state: 1 for the current state, 0 for the others "
    "(Empty, PreparingRebalance, CompletingRebalance, Stable, Dead).",
    (*GROUP_KEY, "state"))
MEMBERS = _g(
    "kafka_consumergroup_members", "gauge",
    "Number of members of the group.", GROUP_KEY, "members")
PROTOCOL_INFO = _g(
    "kafka_consumergroup_protocol_info", "info",
    "The assignor (protocol) the group chose; value is always 1.", (*GROUP_KEY, "protocol"))
REBALANCE_IN_PROGRESS = _g(
    "kafka_consumergroup_rebalance_in_progress", "gauge",
    "1 while the group is rebalancing (PreparingRebalance or CompletingRebalance), else 0.", GROUP_KEY)
LAST_REBALANCE_TS = _g(
    "kafka_consumergroup_last_rebalance_timestamp_seconds", "gauge",
    "Epoch time the latest generation completed.", GROUP_KEY, "seconds")
PARTITIONS_MOVED = _g(
    "kafka_consumergroup_partitions_moved_total", "counter",
    "Partitions whose owner changed between consecutive generations.", GROUP_KEY, "partitions")
MISMATCHED_PARTITIONS = _g(
    "kafka_consumergroup_assignment_mismatched_partitions", "gauge",
    "Partitions of the latest generation assigned differently from what the group's assignor would "
    "compute (absent when it cannot be computed).", GROUP_KEY, "partitions")
UNASSIGNED_PARTITIONS = _g(
    "kafka_consumergroup_unassigned_partitions", "gauge",
    "Subscribed partitions no member owns in the latest generation.", GROUP_KEY, "partitions")
ASSIGNMENT_IMBALANCE = _g(
    "kafka_consumergroup_assignment_imbalance", "gauge",
    "Max minus min partitions per member in the latest generation.", GROUP_KEY, "partitions")
NEEDLESS_MOVES = _g(
    "kafka_consumergroup_needless_moves", "gauge",
    "Partitions moved in the latest generation beyond the minimum needed (partitions_moved - min_moves).",
    GROUP_KEY, "partitions")
# ---- members and liveness --------------------------------------------------------------------------------
MEMBER_TIMEOUTS = _g(
    "kafka_consumergroup_member_timeouts_total", "counter",
    "Members detected past their session timeout (timeout=\"session\") or max.poll.interval.ms "
    "(timeout=\"poll\").",
    (*GROUP_KEY, "timeout", "client_id", "host"))
HEARTBEAT_GAP_RATIO = _g(
    "kafka_consumergroup_heartbeat_gap_ratio", "gauge",
    "Largest ratio, over the members, of time since the last heartbeat to the session timeout "
    "(1 means the member is about to be expired).", GROUP_KEY)
POLL_GAP_RATIO = _g(
    "kafka_consumergroup_poll_gap_ratio", "gauge",
    "Largest ratio, over the members whose polls are known, of time since the last poll to max.poll.interval.ms "
    "(1 means the member is about to be removed for not polling).", GROUP_KEY)
MEMBER_AT_RISK_DEADLINE = _g(
    "kafka_consumergroup_member_at_risk_deadline_timestamp_seconds", "gauge",
    "Epoch time a member at risk will be removed: silent for core.early_warning_percent of its session timeout "
    "(risk=\"session\") or max.poll.interval.ms (risk=\"poll\"), one series per member at risk (a member_at_risk "
    "record). The series goes when the member times out (member_timeout), when a group_status no longer lists it "
    "(heard from again, left or removed), and with its group (deleted or expired).",
    (*GROUP_KEY, "risk", "member_id", "client_id", "host"), "seconds")
# ---- the clients' own standard metrics (KIP-714's standard consumer set, as each client pushes it) -----------
# Per client instance, as the client reports itself: not evidence of a member's heartbeats or polls (librdkafka
# pushes only these, naming no member). From group_status records' client_standard_metrics.
_PER_CLIENT = (*GROUP_KEY, "client_id", "client_instance_id")
CLIENT_POLL_IDLE_RATIO = _g(
    "kafka_consumergroup_client_poll_idle_ratio", "gauge",
    "The client's own standard metric (KIP-714, consumer.poll.idle.ratio.avg): the share of its time spent waiting "
    "in poll; as the client pushes it.", _PER_CLIENT)
CLIENT_REBALANCE_LATENCY_AVG = _g(
    "kafka_consumergroup_client_rebalance_latency_avg_seconds", "gauge",
    "The client's own standard metric (KIP-714, consumer.coordinator.rebalance.latency.avg): its average "
    "rebalance in its sample window; as the client pushes it.", _PER_CLIENT, "seconds")
CLIENT_REBALANCE_LATENCY_MAX = _g(
    "kafka_consumergroup_client_rebalance_latency_max_seconds", "gauge",
    "The client's own standard metric (KIP-714, consumer.coordinator.rebalance.latency.max): its longest "
    "rebalance in its sample window; as the client pushes it.", _PER_CLIENT, "seconds")
CLIENT_REBALANCES = _g(
    "kafka_consumergroup_client_rebalances_total", "counter",
    "The client's own standard metric (KIP-714, consumer.coordinator.rebalance.total): rebalances it took part "
    "in since the monitor first heard of it (Java clients; librdkafka does not push it).", _PER_CLIENT)
CLIENT_REBALANCE_LATENCY_TOTAL = _g(
    "kafka_consumergroup_client_rebalance_latency_seconds_total", "counter",
    "The client's own standard metric (KIP-714, consumer.coordinator.rebalance.latency.total): time it spent "
    "in rebalances since the monitor first heard of it.", _PER_CLIENT, "seconds")
STORM = _g(
    "kafka_consumergroup_storm", "gauge",
    "1 while the group is in a rebalance storm (storm.min_rebalances generations inside storm.window).",
    GROUP_KEY)
STORMS = _g(
    "kafka_consumergroup_storms_total", "counter",
    "Rebalance storms that started.", GROUP_KEY)
STORM_PATTERN = _g(
    "kafka_consumergroup_storm_pattern", "gauge",
    "What the group's running (or last) storm looks like, as the label pattern: rolling_restart, scaling, "
    "flapping_member, timeouts or mixed; 1 while the storm runs, 0 after it.", (*GROUP_KEY, "pattern"))
BROKER_VIEW_DISAGREEMENTS = _g(
    "kafka_consumergroup_broker_view_disagreements_total", "counter",
    "Times the group's coordinator, asked to describe it (ConsumerGroupDescribe, ShareGroupDescribe, "
    "StreamsGroupDescribe, DescribeGroups), named other members, partitions or tasks than the monitor reconstructed at the same epoch (a broker_view record says what "
    "differed).", GROUP_KEY)
# ---- streams groups (KIP-1071): tasks -------------------------------------------------------------------------
STREAMS_MEMBER_TASKS = _g(
    "kafka_streamsgroup_member_tasks", "gauge",
    "A streams group's tasks held in its latest generation, by member (its client id: a Kafka Streams stream "
    "thread, stable across restarts where the member id is not) and kind (active, standby, warmup).",
    (*GROUP_KEY, "client_id", "kind"), "tasks")
STREAMS_TASKS_MOVED = _g(
    "kafka_streamsgroup_tasks_moved_total", "counter",
    "Tasks a streams group's rebalances handed from one member to another, by scope: between_processes (the task's "
    "state is restored on the new process unless a standby of it was there) or within_process (another stream "
    "thread of the same Kafka Streams process).", (*GROUP_KEY, "scope"), "tasks")
STREAMS_MISMATCHED_TASKS = _g(
    "kafka_streamsgroup_assignment_mismatched_tasks", "gauge",
    "Tasks (of any kind) of a streams group's latest generation held by other members than the sticky task "
    "assignor (Kafka 4.4's StickyTaskAssignor, recomputed) would give them (absent when it cannot be computed).",
    GROUP_KEY, "tasks")
# ---- lag -------------------------------------------------------------------------------------------------
LAG = _g(
    "kafka_consumergroup_lag", "gauge",
    "Offset lag: log-end offset minus committed offset, never negative (a share group's: its share coordinator's "
    "lag, the records not yet acknowledged); per partition, or summed per topic (lag.granularity topic) or per "
    "group (group).",
    (*GROUP_KEY, "topic", "partition"), "offsets", rollup=_PER_PARTITION)
LAG_SUM = _g(
    "kafka_consumergroup_lag_sum", "gauge",
    "Offset lag summed over the group's partitions.", GROUP_KEY, "offsets")
LAG_SECONDS = _g(
    "kafka_consumergroup_lag_seconds", "gauge",
    "Time lag, max over the group's partitions: now minus the estimated time the committed offset "
    "was the log end (see docs/metrics.md, time lag).", GROUP_KEY, "seconds")
COMMITTED_OFFSET = _g(
    "kafka_consumergroup_committed_offset", "gauge",
    "Latest committed offset of the group on the partition (a share group's: the share-partition start offset), "
    "or their sum over a topic's (lag.granularity topic) or all the group's partitions (group): its rate is the "
    "group's consumption rate.",
    (*GROUP_KEY, "topic", "partition"), "offsets", rollup=_PER_PARTITION)
LAG_SUM_AT_REBALANCE_START = _g(
    "kafka_consumergroup_lag_sum_at_rebalance_start", "gauge",
    "kafka_consumergroup_lag_sum when the latest rebalance started (snapshot taken on the rebalance_started "
    "record, or when the group entered PreparingRebalance); lag growth since = lag_sum minus this.",
    GROUP_KEY, "offsets")
LAST_REBALANCE_START_TS = _g(
    "kafka_consumergroup_last_rebalance_start_timestamp_seconds", "gauge",
    "Epoch time the latest rebalance started (first trigger seen).", GROUP_KEY, "seconds")
END_OFFSET = _g(
    "kafka_topic_partition_end_offset", "gauge",
    "Log-end offset (high watermark) of the partition, or the sum over the topic's partitions some group "
    "committed on (lag.granularity topic); not exported at lag.granularity group.",
    (*CLUSTER_KEY, "topic", "partition"), "offsets", rollup=_PER_PARTITION)
COORDINATOR_INFO = _g(
    "kafka_consumergroup_coordinator_info", "info",
    "The __consumer_offsets partition and broker coordinating the group; value is always 1.",
    (*GROUP_KEY, "partition", "broker"))
# ---- the monitor itself ----------------------------------------------------------------------------------
UP = _g(
    "rebalance_monitor_up", "gauge",
    "1 while the monitor process runs (0 while it shuts down).", CLUSTER_KEY)
READY = _g(
    "rebalance_monitor_ready", "gauge",
    "1 when the streaming job reported ready and its last batch is recent, else 0.", CLUSTER_KEY)
KAFKA_CLUSTER_UP = _g(
    "rebalance_monitor_kafka_cluster_up", "gauge",
    "1 while the cluster's Kafka answers and the monitor's streaming query of it runs, 0 while it does not "
    "(absent until the job first says).", CLUSTER_KEY)
KAFKA_CLUSTER_LAST_READ_TS = _g(
    "rebalance_monitor_kafka_cluster_last_read_timestamp_seconds", "gauge",
    "Epoch time of the last successful read from the cluster: a completed micro-batch, or an idle check that found "
    "nothing new to read (absent until the first).", CLUSTER_KEY, "seconds")
EVENTS_READ = _g(
    "rebalance_monitor_events_read_total", "counter",
    "Input records read, by source.", (*CLUSTER_KEY, "source"), "records")
REJECTS = _g(
    "rebalance_monitor_rejects_total", "counter",
    "Input records rejected (kept in the dead-letter output), by reason.", (*CLUSTER_KEY, "reason"), "records")
INPUT_NOTES = _g(
    "rebalance_monitor_input_notes_total", "counter",
    "Input records used with a caveat, by reason: unresolved_topic_id (a KIP-848 __consumer_offsets record "
    "names a topic id that kafka.topic_ids could not name; it stays an id).", (*CLUSTER_KEY, "reason"), "references")
BATCHES = _g(
    "rebalance_monitor_batches_total", "counter",
    "Micro-batches processed.", CLUSTER_KEY)
BATCH_DURATION = _g(
    "rebalance_monitor_batch_duration_seconds", "histogram",
    "Wall time of a micro-batch.", CLUSTER_KEY, "seconds", BATCH_DURATION_BUCKETS)
STATE_ROWS = _g(
    "rebalance_monitor_state_rows", "gauge",
    "Rows in the streaming state store.", CLUSTER_KEY, "rows")
WATERMARK_DELAY = _g(
    "rebalance_monitor_watermark_delay_seconds", "gauge",
    "Wall time minus the event-time watermark at the end of the last batch.", CLUSTER_KEY, "seconds")
LAST_BATCH_TS = _g(
    "rebalance_monitor_last_batch_timestamp_seconds", "gauge",
    "Epoch time the last micro-batch ended.", CLUSTER_KEY, "seconds")
GROUPS_TRACKED = _g(
    "rebalance_monitor_groups_tracked", "gauge",
    "Consumer groups with exported series.", CLUSTER_KEY, "groups")
GROUPS_DROPPED = _g(
    "rebalance_monitor_groups_dropped_total", "counter",
    "Groups not exported: reason=\"max_groups\" (cardinality cap reached) or \"denied\" "
    "(group_allow/group_deny).", (*CLUSTER_KEY, "reason"), "groups")
OUTPUT_RECORDS = _g(
    "rebalance_monitor_output_records_total", "counter",
    "Output records emitted, by kind.", (*CLUSTER_KEY, "kind"), "records")
SINK_ERRORS = _g(
    "rebalance_monitor_sink_errors_total", "counter",
    "Errors writing to an output sink.", (*CLUSTER_KEY, "sink"))
BROKER_FACTS_ERRORS = _g(
    "rebalance_monitor_broker_facts_errors_total", "counter",
    "What the monitor asked the brokers (broker_facts/) and did not get, by reason: describe_configs_denied "
    "(grant DESCRIBE_CONFIGS; the configuration's fallback is used), describe_configs_failed, list_groups_failed, "
    "api_versions_failed, describe_groups_failed, describe_<kafka error> (a group its coordinator could not describe, "
    "e.g. describe_group_id_not_found), publish_failed (the answers could not be written to the events topic).",
    (*CLUSTER_KEY, "reason"))

# The exposition order: the exporter writes the families in this order.
CATALOGUE: tuple[MetricSpec, ...] = (
    REBALANCES, GENERATIONS, REBALANCE_DURATION, GENERATION, STATE, MEMBERS, PROTOCOL_INFO, REBALANCE_IN_PROGRESS,
    LAST_REBALANCE_TS, PARTITIONS_MOVED, MISMATCHED_PARTITIONS, UNASSIGNED_PARTITIONS, ASSIGNMENT_IMBALANCE,
    NEEDLESS_MOVES, MEMBER_TIMEOUTS, HEARTBEAT_GAP_RATIO, POLL_GAP_RATIO, MEMBER_AT_RISK_DEADLINE,
    CLIENT_POLL_IDLE_RATIO,
    CLIENT_REBALANCE_LATENCY_AVG, CLIENT_REBALANCE_LATENCY_MAX, CLIENT_REBALANCES, CLIENT_REBALANCE_LATENCY_TOTAL, STORM, STORMS, STORM_PATTERN, BROKER_VIEW_DISAGREEMENTS,
    STREAMS_MEMBER_TASKS, STREAMS_TASKS_MOVED, STREAMS_MISMATCHED_TASKS, LAG, LAG_SUM, LAG_SECONDS,
    COMMITTED_OFFSET, LAG_SUM_AT_REBALANCE_START, LAST_REBALANCE_START_TS, END_OFFSET, COORDINATOR_INFO, UP, READY,
    KAFKA_CLUSTER_UP, KAFKA_CLUSTER_LAST_READ_TS,
    EVENTS_READ, REJECTS, INPUT_NOTES, BATCHES, BATCH_DURATION, STATE_ROWS, WATERMARK_DELAY, LAST_BATCH_TS,
    GROUPS_TRACKED, GROUPS_DROPPED, OUTPUT_RECORDS, SINK_ERRORS, BROKER_FACTS_ERRORS,
)

_BY_NAME: dict[str, MetricSpec] = {m.name: m for m in CATALOGUE}
assert len(_BY_NAME) == len(CATALOGUE), "duplicate metric name in CATALOGUE"


def by_name(name: str) -> MetricSpec:
    """The spec of ``name``; KeyError when the catalogue has no such metric."""
    return _BY_NAME[name]


def names() -> tuple[str, ...]:
    return tuple(_BY_NAME)
