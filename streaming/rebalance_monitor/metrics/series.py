"""What is exported about one consumer group: :class:`GroupSeries`, the values its records set (``apply.py``), read
by the renderers (``render.py``), and the part of it that outlives the process (``to_state``/``from_state``, in the
snapshot of ``persistence.py``; its JSON keys are the snapshot's format).

A series object only holds values. Three marks tell the renderer which of the group's cached lines are stale:
``stale_meta`` (every family but the offsets), ``stale_offsets`` (the committed offsets, hence the lag too) and
``stale_lag`` (the lag alone: an end offset of a partition the group committed on moved); ``new_keys`` says the
group committed on a partition for the first time.
"""
from __future__ import annotations

from collections import OrderedDict

from . import risk_families
from .catalogue import DEFAULT_CLUSTER, REBALANCE_DURATION_BUCKETS
from .exposition import Histogram, group_label

DEDUPE_KEYS_PER_GROUP = 256


class Dedupe:
    """A bounded set of recently seen keys (oldest forgotten first)."""

    __slots__ = ("keys", "cap")

    def __init__(self, cap: int = DEDUPE_KEYS_PER_GROUP) -> None:
        self.keys: OrderedDict = OrderedDict()
        self.cap = cap

    def first_time(self, key) -> bool:
        if key in self.keys:
            return False
        self.keys[key] = None
        if len(self.keys) > self.cap:
            self.keys.popitem(last=False)
        return True


# What of a group outlives the process: counters, the gauges its records set, the storm keys. Offsets (committed,
# end, time-lag samples) are not kept: the next commit or broker poll brings them back.
_STATE_COUNTERS = ("generations_total", "partitions_moved_total", "storms_total",      # default 0
                   "broker_view_disagreements_total")
_STATE_GAUGES = ("generation", "state", "members", "protocol", "in_progress", "last_rebalance_ts",
                 "last_rebalance_start_ts", "lag_at_rebalance_start", "mismatched", "unassigned", "imbalance",
                 "needless_moves", "heartbeat_gap_ratio", "poll_gap_ratio", "storm", "storm_started_ms",
                 "storm_pattern", "mismatched_tasks")  # default None
_STATE_FLAGS = ("has_status",)                                                         # default False


class GroupSeries:
    """Everything exported about one consumer group of the Kafka cluster ``cluster`` (its store's: the label's
    value, never in the snapshot)."""

    def __init__(self, name: str, now_ms: int, cluster: str = DEFAULT_CLUSTER) -> None:
        self.name = name
        self.cluster = cluster
        self.group_type = "unknown"           # classic, consumer, streams, share (core/group/group_type.py)
        self.label = group_label(name, self.group_type, cluster)   # the group's label text, first in its lines
        self.last_activity_ms = now_ms
        # counters
        self.rebalances: dict[str, int] = {}  # cause -> completed generations
        self.generations_total = 0
        self.duration = Histogram(REBALANCE_DURATION_BUCKETS)
        self.partitions_moved_total = 0
        self.member_timeouts: dict[tuple[str, str, str], int] = {}   # (timeout, client id, host) -> count
        self.storms_total = 0
        self.broker_view_disagreements_total = 0
        # gauges (None = absent)
        self.generation: int | None = None
        self.state: str | None = None
        self.has_status = False               # a group_status record said the state (else it is inferred)
        self.members: int | None = None
        self.protocol: str | None = None
        self.in_progress: int | None = None
        self.last_rebalance_ts: float | None = None
        self.last_rebalance_start_ts: float | None = None
        self.lag_at_rebalance_start: int | None = None
        self.mismatched: int | None = None
        self.unassigned: int | None = None
        self.imbalance: int | None = None
        self.needless_moves: int | None = None
        self.heartbeat_gap_ratio: float | None = None
        self.poll_gap_ratio: float | None = None
        # the members at risk (risk_families.py): (risk, member id) -> (client id, host, deadline in epoch seconds)
        self.at_risk: dict[tuple[str, str], tuple[str, str, float]] = {}
        self.client_standard: list = []  # the clients' own standard metrics (client_families.py), not persisted
        self.storm: int | None = None
        self.storm_started_ms: int | None = None
        self.storm_pattern: str | None = None  # the running (or last) storm's pattern (core/storm_pattern.py)
        self.coordinator: tuple[int, object] | None = None   # (partition, broker or None)
        # a streams group's tasks (task_families.py): (client id, kind) -> tasks held, scope -> tasks moved
        self.member_tasks: dict[tuple[str, str], int] = {}
        self.tasks_moved: dict[str, int] = {}
        self.mismatched_tasks: int | None = None
        # offsets
        self.committed: dict[tuple[str, int], int] = {}
        self.committed_ts: dict[tuple[str, int], int] = {}
        self.stream_commits = False     # offsets_committed records from the stream (not the broker poller)
        # a share group's lag per partition as its share coordinator computes it (broker_facts/share_group_offsets.py;
        # its `committed` are the share-partition start offsets); a partition left out: end - start offset
        self.share_lag: dict[tuple[str, int], int] = {}
        # dedupe of replayed records
        self.seen_generations = Dedupe()
        self.seen_started = Dedupe()
        self.seen_timeouts = Dedupe()
        self.seen_storms = Dedupe()
        self.seen_views = Dedupe()
        # what the renderer must write again (see the module docstring), and its cache of this group's lines
        self.stale_meta = True
        self.stale_offsets = True
        self.stale_lag = True
        self.new_keys = True
        self.lines = None

    def set_group_type(self, group_type) -> None:
        """The group's type as its records say it: every line of the group is written again with the new label."""
        if not isinstance(group_type, str) or not group_type or group_type == self.group_type:
            return
        self.group_type = group_type
        self.label = group_label(self.name, group_type, self.cluster)
        self.lines = None
        self.new_keys = self.stale_meta = self.stale_offsets = self.stale_lag = True

    # -- persistence -----------------------------------------------------------------------------------------
    def to_state(self) -> dict:
        """The group's counters and record-fed gauges as JSON-ready data (defaults left out)."""
        d: dict = {"t": self.last_activity_ms}
        for k in _STATE_COUNTERS:
            v = getattr(self, k)
            if v:
                d[k] = v
        for k in _STATE_GAUGES:
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        for k in _STATE_FLAGS:
            if getattr(self, k):
                d[k] = True
        if self.group_type != "unknown":
            d["group_type"] = self.group_type
        if self.rebalances:
            d["rebalances"] = self.rebalances
        if self.duration.count:
            d["duration"] = self.duration.to_state()
        if self.member_timeouts:
            d["member_timeouts"] = [[*k, n] for k, n in self.member_timeouts.items()]
        if self.coordinator is not None:
            d["coordinator"] = list(self.coordinator)
        if self.at_risk:
            d["at_risk"] = risk_families.to_state(self.at_risk)
        if self.member_tasks:
            d["member_tasks"] = [[*k, n] for k, n in self.member_tasks.items()]
        if self.tasks_moved:
            d["tasks_moved"] = self.tasks_moved
        if self.seen_storms.keys:
            # a storm's end record repeats its start's key: it must not count the storm again after a restart
            d["seen_storms"] = list(self.seen_storms.keys)
        return d

    @classmethod
    def from_state(cls, name: str, d: dict, cluster: str = DEFAULT_CLUSTER) -> "GroupSeries":
        """The group of :meth:`to_state` in cluster ``cluster`` (the store the snapshot is loaded into)."""
        g = cls(name, int(d["t"]), cluster)
        for k in _STATE_COUNTERS:
            setattr(g, k, int(d.get(k, 0)))
        for k in _STATE_GAUGES:
            setattr(g, k, d.get(k))
        for k in _STATE_FLAGS:
            setattr(g, k, bool(d.get(k, False)))
        g.set_group_type(d.get("group_type"))     # (snapshots before it: unknown until the group's next record)
        g.rebalances = {str(c): int(n) for c, n in (d.get("rebalances") or {}).items()}
        if "duration" in d:
            g.duration.load_state(d["duration"])
        g.member_timeouts = {(str(t), str(c), str(h)): int(n) for t, c, h, n in d.get("member_timeouts") or ()}
        if d.get("coordinator") is not None:
            g.coordinator = tuple(d["coordinator"])
        g.at_risk = risk_families.from_state(d.get("at_risk"))
        g.member_tasks = {(str(c), str(k)): int(n) for c, k, n in d.get("member_tasks") or ()}
        g.tasks_moved = {str(k): int(n) for k, n in (d.get("tasks_moved") or {}).items()}
        for key in d.get("seen_storms") or ():
            g.seen_storms.first_time(key)
        return g
