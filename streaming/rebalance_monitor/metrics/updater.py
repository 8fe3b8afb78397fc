"""The state of every exported series, fed from the monitor's output records.

:class:`MetricsUpdater` keeps plain Python state per consumer group and renders the Prometheus text
exposition itself, caching each group's lines until the group changes, so a scrape of thousands of groups
costs a string join rather than rebuilding every sample. It is also a prometheus_client ``Collector``
(:meth:`collect`), so it can be registered in a ``CollectorRegistry`` when needed; both paths expose the
same families, in :data:`~rebalance_monitor.metrics.catalogue.CATALOGUE` order.

Series of a group disappear with it: on a ``group_deleted`` record, and when the group has had no record for
``idle_group_ttl_s``. Cardinality is capped: groups not matching ``group_allow`` or matching ``group_deny``
(regular expressions, full match) and groups beyond ``max_groups`` are not exported, and each such group is
counted once in ``rebalance_monitor_groups_dropped_total{reason="denied"|"max_groups"}``.

Counters and restarts: every counter starts at 0 in a new updater and never goes backwards. The streaming
job (``spark/job.py``) feeds each micro-batch through :meth:`apply_batch`, which applies a ``batch_id`` once
(a batch re-run after a crash is skipped) and, with a ``persist`` callback (``state_file.MetricsStateFile``),
keeps the counters and the group gauges across restarts: see ``state_file.py`` for the crash windows.
Within one process a replayed record does not count twice either: generations are deduplicated on
``(group, generation, completed_ms)``, member timeouts on ``(group, member_id, timeout, detected_ms)``,
storms on ``(group, started_ms)`` and batches (``record_batch``) on ``batch_id``. A group dropped by
``group_deleted`` or the idle TTL loses its counters: if it comes back its series start again from 0.
"""
from __future__ import annotations

import gzip
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable

from ..core.group_filter import GroupFilter
from .catalogue import BATCH_DURATION_BUCKETS, CATALOGUE, REBALANCE_DURATION_BUCKETS
from .exposition import Histogram, escape_label, fmt_value, header
from .exposition import labelled as _labelled
from . import lag_levels
from .lag import EndOffsetTable, offset_lag

GROUP_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance")
DEDUPE_KEYS_PER_GROUP = 256
STATE_VERSION = 1            # of state_text(); load_state() refuses another
_JSON_SEP = (",", ":")

# group families whose lines depend on offsets (re-rendered when an end offset moves)
LAG_FAMILIES = ("kafka_consumergroup_lag", "kafka_consumergroup_lag_sum", "kafka_consumergroup_lag_seconds",
                "kafka_consumergroup_committed_offset")


class _Dedupe:
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


# ------------------------------------------------------------------------------------------------------------
# What of a group outlives the process (state_file.py): counters, the gauges its records set, the storm keys.
# Offsets (committed, end, time-lag samples) are not kept: the next commit or broker poll brings them back.
_STATE_COUNTERS = ("generations_total", "partitions_moved_total", "storms_total")      # default 0
_STATE_GAUGES = ("generation", "state", "members", "protocol", "in_progress", "last_rebalance_ts",
                 "last_rebalance_start_ts", "lag_at_rebalance_start", "mismatched", "unassigned", "imbalance",
                 "needless_moves", "heartbeat_gap_ratio", "storm", "storm_started_ms",
                 "storm_pattern")  # default None
_STATE_FLAGS = ("has_status",)                                                         # default False


class _Group:
    """Everything exported about one consumer group."""

    def __init__(self, name: str, now_ms: int) -> None:
        self.name = name
        self.lbl = f'group="{escape_label(name)}"'
        self.last_activity_ms = now_ms
        # counters
        self.rebalances: dict[str, int] = {}
        self.generations_total = 0
        self.duration = Histogram(REBALANCE_DURATION_BUCKETS)
        self.partitions_moved_total = 0
        self.member_timeouts: dict[tuple[str, str, str], int] = {}
        self.storms_total = 0
        # gauges (None = absent)
        self.generation: int | None = None
        self.state: str | None = None
        self.has_status = False
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
        self.storm: int | None = None
        self.storm_started_ms: int | None = None
        self.storm_pattern: str | None = None  # the running (or last) storm's pattern (core/storm_pattern.py)
        self.coordinator: tuple[int, object] | None = None   # (partition, broker or None)
        # offsets
        self.committed: dict[tuple[str, int], int] = {}
        self.committed_ts: dict[tuple[str, int], int] = {}
        self.stream_commits = False     # offsets_committed records from the stream (not the broker poller)
        # dedupe
        self.seen_generations = _Dedupe()
        self.seen_started = _Dedupe()
        self.seen_timeouts = _Dedupe()
        self.seen_storms = _Dedupe()
        # render cache
        self.meta_frags: dict[str, str] | None = None
        self.lag_frags: dict[str, str] | None = None
        self.committed_frag: str | None = None
        self.tp_keys: list[tuple[str, int]] | None = None
        self.tp_prefix: dict[tuple[str, int], str] = {}
        self.lag_sum: int | None = None

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
        if self.rebalances:
            d["rebalances"] = self.rebalances
        if self.duration.count:
            d["duration"] = self.duration.to_state()
        if self.member_timeouts:
            d["member_timeouts"] = [[*k, n] for k, n in self.member_timeouts.items()]
        if self.coordinator is not None:
            d["coordinator"] = list(self.coordinator)
        if self.seen_storms.keys:
            # a storm's end record repeats its start's key: it must not count the storm again after a restart
            d["seen_storms"] = list(self.seen_storms.keys)
        return d

    @classmethod
    def from_state(cls, name: str, d: dict) -> "_Group":
        g = cls(name, int(d["t"]))
        for k in _STATE_COUNTERS:
            setattr(g, k, int(d.get(k, 0)))
        for k in _STATE_GAUGES:
            setattr(g, k, d.get(k))
        for k in _STATE_FLAGS:
            setattr(g, k, bool(d.get(k, False)))
        g.rebalances = {str(c): int(n) for c, n in (d.get("rebalances") or {}).items()}
        if "duration" in d:
            g.duration.load_state(d["duration"])
        g.member_timeouts = {(str(t), str(c), str(h)): int(n) for t, c, h, n in d.get("member_timeouts") or ()}
        if d.get("coordinator") is not None:
            g.coordinator = tuple(d["coordinator"])
        for key in d.get("seen_storms") or ():
            g.seen_storms.first_time(key)
        return g

    # -- rendering -------------------------------------------------------------------------------------------
    def render_meta(self) -> dict[str, str]:
        g = self.lbl
        f: dict[str, list[str]] = {}

        def add(name: str, line: str) -> None:
            f.setdefault(name, []).append(line)

        for cause in sorted(self.rebalances):
            add("kafka_consumergroup_rebalances_total",
                f'kafka_consumergroup_rebalances_total{{{g},cause="{escape_label(cause)}"}} '
                f"{self.rebalances[cause]}\n")
        if self.generations_total or self.generation is not None:
            add("kafka_consumergroup_generations_total",
                f"kafka_consumergroup_generations_total{{{g}}} {self.generations_total}\n")
            f["kafka_consumergroup_rebalance_duration_seconds"] = self.duration.lines(
                "kafka_consumergroup_rebalance_duration_seconds", g)
            add("kafka_consumergroup_partitions_moved_total",
                f"kafka_consumergroup_partitions_moved_total{{{g}}} {self.partitions_moved_total}\n")
        if self.generation is not None:
            add("kafka_consumergroup_generation", f"kafka_consumergroup_generation{{{g}}} {self.generation}\n")
        if self.state is not None:
            for st in GROUP_STATES:
                add("kafka_consumergroup_state",
                    f'kafka_consumergroup_state{{{g},state="{st}"}} {1 if st == self.state else 0}\n')
        if self.members is not None:
            add("kafka_consumergroup_members", f"kafka_consumergroup_members{{{g}}} {self.members}\n")
        if self.protocol:
            add("kafka_consumergroup_protocol_info",
                f'kafka_consumergroup_protocol_info{{{g},protocol="{escape_label(self.protocol)}"}} 1\n')
        if self.in_progress is not None:
            add("kafka_consumergroup_rebalance_in_progress",
                f"kafka_consumergroup_rebalance_in_progress{{{g}}} {self.in_progress}\n")
        if self.last_rebalance_ts is not None:
            add("kafka_consumergroup_last_rebalance_timestamp_seconds",
                f"kafka_consumergroup_last_rebalance_timestamp_seconds{{{g}}} {fmt_value(self.last_rebalance_ts)}\n")
        for name, v in (("kafka_consumergroup_assignment_mismatched_partitions", self.mismatched),
                        ("kafka_consumergroup_unassigned_partitions", self.unassigned),
                        ("kafka_consumergroup_assignment_imbalance", self.imbalance),
                        ("kafka_consumergroup_needless_moves", self.needless_moves)):
            if v is not None:
                add(name, f"{name}{{{g}}} {fmt_value(v)}\n")
        for (timeout, client_id, host) in sorted(self.member_timeouts):
            add("kafka_consumergroup_member_timeouts_total",
                f'kafka_consumergroup_member_timeouts_total{{{g},timeout="{escape_label(timeout)}",'
                f'client_id="{escape_label(client_id)}",host="{escape_label(host)}"}} '
                f"{self.member_timeouts[(timeout, client_id, host)]}\n")
        if self.heartbeat_gap_ratio is not None:
            add("kafka_consumergroup_heartbeat_gap_ratio",
                f"kafka_consumergroup_heartbeat_gap_ratio{{{g}}} {fmt_value(self.heartbeat_gap_ratio)}\n")
        if self.storm is not None or self.storms_total:
            add("kafka_consumergroup_storm", f"kafka_consumergroup_storm{{{g}}} {self.storm or 0}\n")
            add("kafka_consumergroup_storms_total", f"kafka_consumergroup_storms_total{{{g}}} {self.storms_total}\n")
        if self.storm_pattern is not None:
            add("kafka_consumergroup_storm_pattern", f'kafka_consumergroup_storm_pattern{{{g},'
                f'pattern="{escape_label(self.storm_pattern)}"}} {self.storm or 0}\n')
        if self.lag_at_rebalance_start is not None:
            add("kafka_consumergroup_lag_sum_at_rebalance_start",
                f"kafka_consumergroup_lag_sum_at_rebalance_start{{{g}}} {self.lag_at_rebalance_start}\n")
        if self.last_rebalance_start_ts is not None:
            add("kafka_consumergroup_last_rebalance_start_timestamp_seconds",
                f"kafka_consumergroup_last_rebalance_start_timestamp_seconds{{{g}}} "
                f"{fmt_value(self.last_rebalance_start_ts)}\n")
        if self.coordinator is not None:
            part, broker = self.coordinator
            add("kafka_consumergroup_coordinator_info",
                f'kafka_consumergroup_coordinator_info{{{g},partition="{part}",'
                f'broker="{"" if broker is None else escape_label(broker)}"}} 1\n')
        return {k: "".join(v) for k, v in f.items()}

    def compute_lag_sum(self, ends: EndOffsetTable) -> int | None:
        total = None
        for (t, p), c in self.committed.items():
            lag = offset_lag(ends.ends.get((t, p)), c)
            if lag is not None:
                total = lag if total is None else total + lag
        return total

    def _keys(self) -> list[tuple[str, int]]:
        if self.tp_keys is None:
            self.tp_keys = sorted(self.committed)
            g = self.lbl
            for key in self.tp_keys:
                if key not in self.tp_prefix:
                    self.tp_prefix[key] = f'{{{g},topic="{escape_label(key[0])}",partition="{key[1]}"}} '
        return self.tp_keys

    def render_committed(self, granularity: str = "partition") -> str:
        pref, com = self.tp_prefix, self.committed
        if granularity != "partition":
            return lag_levels.committed_lines(self.lbl, com, granularity)
        return "".join([f"kafka_consumergroup_committed_offset{pref[k]}{com[k]}\n" for k in self._keys()])

    def render_lag(self, ends: EndOffsetTable, now_ms: int, granularity: str = "partition") -> dict[str, str]:
        """Lag lines (lag_levels.py sums them at a coarser granularity); the time lag follows
        lag.PartitionSamples.produce_time_ms (inlined: the hot path)."""
        keys = self._keys()
        pref, com = self.tp_prefix, self.committed
        end_get, samples_get = ends.ends.get, ends.samples.get
        lag_lines: list[str] | None = [] if granularity == "partition" else None
        total = 0
        known = False
        oldest = None            # earliest produce time of an unconsumed record over the partitions
        time_unknown = False
        for k in keys:
            e = end_get(k)
            if e is None:
                continue
            known = True
            c = com[k]
            if e <= c:
                if lag_lines is not None:
                    lag_lines.append(f"kafka_consumergroup_lag{pref[k]}0\n")
                continue
            if lag_lines is not None:
                lag_lines.append(f"kafka_consumergroup_lag{pref[k]}{e - c}\n")
            total += e - c
            if time_unknown:
                continue
            s = samples_get(k)
            t = s.produce_time_ms(c) if s is not None else None
            if t is None:
                time_unknown = True          # a lagging partition of unknown age: the max is unknown too
            elif oldest is None or t < oldest:
                oldest = t
        self.lag_sum = total if known else None
        g = self.lbl
        out = {"kafka_consumergroup_lag": "".join(lag_lines) if lag_lines is not None else
               lag_levels.lag_lines(g, com, ends.ends, granularity)}
        if known:
            out["kafka_consumergroup_lag_sum"] = f"kafka_consumergroup_lag_sum{{{g}}} {total}\n"
            if not time_unknown:
                worst = 0.0 if oldest is None else max(0.0, (now_ms - oldest) / 1000.0)
                out["kafka_consumergroup_lag_seconds"] = f"kafka_consumergroup_lag_seconds{{{g}}} {fmt_value(worst)}\n"
        return out


# ------------------------------------------------------------------------------------------------------------
class MetricsUpdater:
    """Holds every exported series; thread-safe (one lock; applying and scraping may run on different threads).

    ``clock`` returns epoch seconds (tests inject a fake one). ``now_ms`` arguments default to it.
    With ``prerender`` (default) each ``apply`` ends by re-rendering the groups it changed, so a scrape only
    joins cached text; the rendering cost lands on the caller of ``apply`` (the streaming job's batch thread).
    """

    def __init__(self, *, max_groups: int = 5000, group_allow: str | None = None, group_deny: str | None = None,
                 idle_group_ttl_s: float = 86400, ready_max_age_s: float = 300.0, time_lag_samples: int = 60,
                 clock=time.time, prerender: bool = True, lag_granularity: str = "partition") -> None:
        self.max_groups = max_groups
        self.lag_granularity = lag_levels.check_granularity(lag_granularity)   # lag.granularity (lag_levels.py)
        # re-render changed groups at the end of apply() (the job's thread) rather than on the next scrape
        self.prerender = prerender
        self.group_filter = GroupFilter(group_allow, group_deny)
        self.idle_group_ttl_s = idle_group_ttl_s
        self.ready_max_age_s = ready_max_age_s
        self.clock = clock
        self._lock = threading.RLock()
        self._groups: dict[str, _Group] = {}
        self._ends = EndOffsetTable(time_lag_samples)
        self._topic_groups: dict[str, set[str]] = {}      # topic -> groups with commits on it
        self._end_frags: dict[str, str] = {}               # topic -> rendered end-offset lines
        self._dirty_topics: set[str] = set()
        self._end_prefix: dict[tuple[str, int], str] = {}
        self._body: str | None = None                      # cached exposition of the groups and topics
        self._body_bytes: bytes | None = None
        self._body_gzip: bytes | None = None
        self._last_now_ms = int(clock() * 1000)
        self._next_expiry_ms = 0
        # drop accounting: each dropped group counted once (bounded memory)
        self._dropped: dict[str, int] = {"max_groups": 0, "denied": 0}
        self._dropped_names: OrderedDict[str, str] = OrderedDict()
        self._dropped_cap = max(10_000, 4 * max_groups)
        # self metrics
        self._up = 1
        self._ready = False
        self._ready_since: float | None = None
        self._not_ready_reason: str | None = None
        self._events_read: dict[str, int] = {}
        self._rejects: dict[str, int] = {}
        self._notes: dict[str, int] = {}  # input used with a caveat (e.g. unresolved_topic_id), by reason
        self._batches = 0
        self._batch_duration = Histogram(BATCH_DURATION_BUCKETS)
        self._state_rows: int | None = None
        self._watermark_delay: float | None = None
        self._last_batch_ts: float | None = None
        self._output_records: dict[str, int] = {}
        self._sink_errors: dict[str, int] = {}
        self._seen_batches = _Dedupe(1024)
        # exactly-once across restarts (apply_batch, state_text, load_state; see state_file.py)
        self.applied_batch_id = -1                         # highest micro-batch whose records are applied
        self._frozen: list | None = None                   # [body text, bytes, gzip, self counter lines]
        self._state_frags: dict[str, str] = {}             # group -> its serialized state (cache)
        self._state_dirty: set[str] = set()                # groups whose cached state is stale
        self._dropped_frag: str | None = None              # serialized _dropped_names (cache)

    # ---- group admission -----------------------------------------------------------------------------------
    def _group(self, name: str, now_ms: int) -> _Group | None:
        g = self._groups.get(name)
        if g is not None:
            g.last_activity_ms = max(g.last_activity_ms, now_ms)
            self._state_dirty.add(name)
            return g
        if not self.group_filter.keeps(name):
            self._note_dropped(name, "denied")
            return None
        if len(self._groups) >= self.max_groups:
            self._expire(now_ms)
            if len(self._groups) >= self.max_groups:
                self._note_dropped(name, "max_groups")
                return None
        if self._dropped_names.pop(name, None) is not None:
            self._dropped_frag = None
        g = self._groups[name] = _Group(name, now_ms)
        self._state_dirty.add(name)
        return g

    def _note_dropped(self, name: str, reason: str) -> None:
        if self._dropped_names.get(name) == reason:
            return
        self._dropped_names[name] = reason
        self._dropped_frag = None
        self._dropped[reason] += 1
        if len(self._dropped_names) > self._dropped_cap:
            self._dropped_names.popitem(last=False)

    def _remove_group(self, name: str) -> None:
        g = self._groups.pop(name, None)
        if g is None:
            return
        self._state_dirty.add(name)
        for (t, _p) in g.committed:
            gs = self._topic_groups.get(t)
            if gs is not None:
                gs.discard(name)
                if not gs:
                    del self._topic_groups[t]

    def _expire(self, now_ms: int) -> None:
        ttl_ms = self.idle_group_ttl_s * 1000
        for name in [n for n, g in self._groups.items() if now_ms - g.last_activity_ms > ttl_ms]:
            self._remove_group(name)
            self._body = None
        for key in self._ends.expire(now_ms - ttl_ms):
            self._dirty_topics.add(key[0])
            self._end_prefix.pop(key, None)
            self._body = None
        self._next_expiry_ms = now_ms + min(ttl_ms, 60_000) / 4

    # ---- records -------------------------------------------------------------------------------------------
    def apply(self, records: Iterable[dict], now_ms: int | None = None) -> None:
        """Update the series from output records (dicts with ``kind`` and ``group``); unknown kinds are ignored."""
        if now_ms is None:
            now_ms = int(self.clock() * 1000)
        with self._lock:
            self._body = None
            self._last_now_ms = max(self._last_now_ms, now_ms)
            for rec in records:
                kind = rec.get("kind")
                if kind not in self._HANDLERS:
                    continue
                handler = self._HANDLERS[kind]
                if kind == "end_offsets":
                    self._on_end_offsets(rec, now_ms)
                    continue
                group = rec.get("group")
                if not isinstance(group, str):
                    continue
                if kind == "group_deleted":
                    self._remove_group(group)
                    continue
                g = self._group(group, now_ms)
                if g is None:
                    continue
                handler(self, g, rec)
            if now_ms >= self._next_expiry_ms:
                self._expire(now_ms)
            if self.prerender:
                self._render_body()

    # ---- micro-batches of the streaming job: exactly once, durable before visible ------------------------
    def apply_batch(self, batch_id: int, records: Iterable[dict], persist=None, left_out: Iterable[str] = (),
                    **figures) -> bool:
        """Apply one micro-batch of the streaming job exactly once; returns True when its records were applied.

        * ``batch_id <= applied_batch_id``: the batch is already in this state (Spark runs a batch it did not
          commit again, with the same records; after a restart the restored state may hold it): skipped.
        * Otherwise the records are applied and the batch accounted (:meth:`record_batch` with ``figures``).
          ``left_out``: groups that groups.allow/deny left out before the exporter saw them (the Spark job
          drops their events in its decode stage); each is counted once, as a group denied here would be.
        * With ``persist`` (``persist(updater, batch_id)``, e.g. ``MetricsStateFile.save``), scrapes keep
          seeing the exposition as it was before the batch until ``persist`` has returned: a counter is never
          exported before it is durable, so a crash cannot make it go back (which Prometheus would take for a
          reset and count again). If ``persist`` raises, the exposition stays as it was, the error is counted
          (``rebalance_monitor_sink_errors_total{sink="metrics_state"}``), the job turns not ready and the
          exception propagates: the batch fails, Spark runs it again, and only ``persist`` is retried.
        """
        with self._lock:
            fresh = batch_id > self.applied_batch_id
            if fresh:
                if persist is not None and self._frozen is None:
                    self._freeze()
                self.apply(records)
                for name in left_out:
                    if name not in self._groups:
                        self._note_dropped(name, "denied")
                self.record_batch(batch_id, **figures)
                self.applied_batch_id = batch_id
        if persist is not None:
            try:
                persist(self, batch_id)
            except Exception:
                self.note_sink_error("metrics_state")
                self.set_ready(False, "the exported-metrics snapshot could not be saved")
                raise
            with self._lock:
                self._frozen = None
        return fresh

    def _freeze(self) -> None:
        """Scrapes show the current groups and counters until the next ``_frozen = None``."""
        self._frozen = [self._render_body(), None, None, self._self_counter_frags()]

    # ---- persistence (state_file.py) -----------------------------------------------------------------------
    def state_text(self, batch_id: int, **meta) -> str:
        """The state that outlives the process, as JSON: ``version``, ``batch_id``, ``meta``, the non-process
        counters, every group's counters and record-fed gauges, and the dropped group names.

        A group is serialized again only when a record touched it since the previous call; the rest of the
        cost is one string join, so a call stays cheap with thousands of quiet groups."""
        with self._lock:
            frags = self._state_frags
            for name in self._state_dirty:
                g = self._groups.get(name)
                if g is None:
                    frags.pop(name, None)
                else:
                    frags[name] = f"{json.dumps(name)}:{json.dumps(g.to_state(), separators=_JSON_SEP)}"
            self._state_dirty.clear()
            if self._dropped_frag is None:
                self._dropped_frag = json.dumps(list(self._dropped_names.items()), separators=_JSON_SEP)
            head = json.dumps({
                "version": STATE_VERSION, "batch_id": batch_id, **meta,
                "counters": {"events_read": self._events_read, "rejects": self._rejects, "notes": self._notes,
                             "batches": self._batches,
                             "batch_duration": self._batch_duration.to_state(),
                             "output_records": self._output_records, "groups_dropped": self._dropped},
            }, separators=_JSON_SEP)
            return "".join((head[:-1], ',"groups":{', ",".join([frags[n] for n in self._groups]),
                            '},"dropped_names":', self._dropped_frag, "}"))

    def load_state(self, data: dict) -> int:
        """Restore what :meth:`state_text` wrote (parsed) into a fresh updater; returns the groups restored.

        ``applied_batch_id`` becomes the state's ``batch_id``. Groups the current ``group_allow``,
        ``group_deny`` or ``max_groups`` would not admit are left out. Raises (ValueError, TypeError, KeyError)
        and changes nothing when the data is not a state of this version."""
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported metrics state version {data.get('version')!r}")
        batch_id = int(data["batch_id"])
        c = data.get("counters") or {}

        def counts(d) -> dict[str, int]:
            return {str(k): int(v) for k, v in (d or {}).items()}

        events_read, rejects = counts(c.get("events_read")), counts(c.get("rejects"))
        notes = counts(c.get("notes"))
        output_records, dropped = counts(c.get("output_records")), counts(c.get("groups_dropped"))
        batches = int(c.get("batches", 0))
        duration = Histogram(BATCH_DURATION_BUCKETS)
        if c.get("batch_duration"):
            duration.load_state(c["batch_duration"])
        dropped_names = [(str(n), str(r)) for n, r in data.get("dropped_names") or ()][-self._dropped_cap:]
        groups: dict[str, _Group] = {}
        for name, d in (data.get("groups") or {}).items():
            if not self.group_filter.keeps(name):
                continue
            if len(groups) >= self.max_groups:
                break
            groups[name] = _Group.from_state(name, d)
        with self._lock:
            self._events_read, self._rejects, self._output_records = events_read, rejects, output_records
            self._notes = notes
            self._batches, self._batch_duration = batches, duration
            self._dropped.update(dropped)
            self._dropped_names = OrderedDict(dropped_names)
            self._dropped_frag = None
            self._groups = groups
            self._state_frags.clear()
            self._state_dirty = set(groups)
            self._topic_groups.clear()
            self.applied_batch_id = batch_id
            self._body = None
            return len(groups)

    def _on_generation(self, g: _Group, r: dict) -> None:
        gen = r.get("generation")
        completed = r.get("completed_ms", r.get("ts"))
        if not g.seen_generations.first_time((gen, completed)):
            return
        g.meta_frags = None
        g.generations_total += 1
        causes = {c.get("cause") or "unknown" for c in (r.get("causes") or []) if isinstance(c, dict)} or {"unknown"}
        for c in causes:
            g.rebalances[c] = g.rebalances.get(c, 0) + 1
        dur = r.get("duration_ms")
        if isinstance(dur, (int, float)) and dur >= 0:
            g.duration.observe(dur / 1000.0)
        moved = r.get("partitions_moved")
        if isinstance(moved, int) and moved > 0:
            g.partitions_moved_total += moved
        if not isinstance(gen, int) or (g.generation is not None and gen < g.generation):
            return  # a late record of an older generation: counted, but the gauges keep the newer values
        g.generation = gen
        if isinstance(completed, (int, float)):
            g.last_rebalance_ts = completed / 1000.0
        if r.get("protocol"):
            g.protocol = r["protocol"]
        members = r.get("members")
        if isinstance(members, list):
            g.members = len(members)
        g.mismatched = r.get("mismatched_partitions")
        g.unassigned = r.get("unassigned_partitions")
        g.imbalance = r.get("imbalance")
        mm = r.get("min_moves")
        g.needless_moves = max(0, moved - mm) if isinstance(moved, int) and isinstance(mm, int) else None
        started = r.get("started_ms")
        if isinstance(started, (int, float)) and (g.last_rebalance_start_ts is None
                                                  or started / 1000.0 > g.last_rebalance_start_ts):
            g.last_rebalance_start_ts = started / 1000.0
        g.in_progress = 0
        if not g.has_status:
            g.state = "Stable" if members else ("Empty" if isinstance(members, list) else g.state)

    def _snapshot_rebalance_start(self, g: _Group, started_ms) -> None:
        g.lag_at_rebalance_start = g.compute_lag_sum(self._ends)
        if isinstance(started_ms, (int, float)):
            g.last_rebalance_start_ts = started_ms / 1000.0

    def _on_rebalance_started(self, g: _Group, r: dict) -> None:
        started = r.get("started_ms", r.get("ts"))
        if not g.seen_started.first_time((r.get("generation"), started)):
            return
        gen = r.get("generation")
        if isinstance(gen, int) and g.generation is not None and gen < g.generation:
            return  # the rebalance out of an older generation: already completed
        g.meta_frags = None
        self._snapshot_rebalance_start(g, started)
        g.in_progress = 1
        if not g.has_status:
            g.state = "PreparingRebalance"

    def _on_member_timeout(self, g: _Group, r: dict) -> None:
        key = (r.get("member_id"), r.get("timeout"), r.get("detected_ms"))
        if not g.seen_timeouts.first_time(key):
            return
        g.meta_frags = None
        k = (str(r.get("timeout") or "unknown"), str(r.get("client_id") or ""), str(r.get("host") or ""))
        g.member_timeouts[k] = g.member_timeouts.get(k, 0) + 1

    def _on_storm(self, g: _Group, r: dict) -> None:
        started = r.get("started_ms")
        g.meta_frags = None
        if g.seen_storms.first_time(started):
            g.storms_total += 1
        if g.storm_started_ms is None or (isinstance(started, int) and started >= g.storm_started_ms):
            g.storm_started_ms = started
            g.storm = 1 if r.get("ended_ms") is None else 0
            if r.get("pattern"):
                g.storm_pattern = str(r["pattern"])

    def _on_group_status(self, g: _Group, r: dict) -> None:
        g.meta_frags = None
        g.has_status = True
        state = r.get("state")
        was_rebalancing = g.in_progress == 1
        if state in GROUP_STATES:
            g.state = state
            g.in_progress = 1 if state in REBALANCING_STATES else 0
        if isinstance(r.get("generation"), int):
            g.generation = r["generation"]
        if r.get("protocol"):
            g.protocol = r["protocol"]
        if isinstance(r.get("members"), int):
            g.members = r["members"]
        ratio = r.get("max_heartbeat_gap_ratio")
        g.heartbeat_gap_ratio = float(ratio) if isinstance(ratio, (int, float)) else None
        if isinstance(r.get("in_storm"), bool):
            g.storm = int(r["in_storm"])
        if g.in_progress == 1 and not was_rebalancing:
            # entered a rebalance without a rebalance_started record (yet): snapshot the lag now
            self._snapshot_rebalance_start(g, r.get("rebalancing_since_ms") or r.get("ts"))
        part = r.get("coordinator_partition")
        if isinstance(part, int):
            broker = g.coordinator[1] if g.coordinator and g.coordinator[0] == part else None
            g.coordinator = (part, broker)

    def _on_coordinator(self, g: _Group, r: dict) -> None:
        g.meta_frags = None
        part = r.get("partition")
        if r.get("action") == "resigned":
            if g.coordinator is not None and g.coordinator[0] == part:
                g.coordinator = None
        elif isinstance(part, int):
            g.coordinator = (part, r.get("broker"))

    def _on_offsets_committed(self, g: _Group, r: dict) -> None:
        ts = r.get("ts") or 0
        if r.get("source") != "broker":
            g.stream_commits = True
        changed = False
        for entry in r.get("offsets") or ():
            try:
                t, p, o = entry
            except (TypeError, ValueError):
                continue
            if not isinstance(o, int) or o < 0:
                continue
            key = (t, p)
            if ts < g.committed_ts.get(key, -1):
                continue      # an older commit than the one we hold
            if key not in g.committed:
                self._topic_groups.setdefault(t, set()).add(g.name)
                g.tp_keys = None
            g.committed_ts[key] = ts
            if g.committed.get(key) != o:
                g.committed[key] = o
                changed = True
        if changed:
            g.lag_frags = None
            g.committed_frag = None

    def _on_end_offsets(self, r: dict, now_ms: int) -> None:
        ts = r.get("ts")
        if not isinstance(ts, int):
            ts = now_ms
        for entry in r.get("offsets") or ():
            try:
                t, p, o = entry
            except (TypeError, ValueError):
                continue
            if not isinstance(o, int) or o < 0:
                continue
            self._ends.update(t, p, o, ts, now_ms)
            self._dirty_topics.add(t)

    _HANDLERS = {
        "generation": _on_generation,
        "rebalance_started": _on_rebalance_started,
        "member_timeout": _on_member_timeout,
        "storm": _on_storm,
        "group_status": _on_group_status,
        "coordinator": _on_coordinator,
        "offsets_committed": _on_offsets_committed,
        "end_offsets": _on_end_offsets,
        "group_deleted": None,    # handled in apply(): drops the group's series
    }

    # ---- self metrics --------------------------------------------------------------------------------------
    def record_batch(self, batch_id, events_read: dict[str, int] | None = None,
                     rejects: dict[str, int] | None = None, duration_s: float | None = None,
                     state_rows: int | None = None, watermark_ms: int | None = None,
                     output_counts: dict[str, int] | None = None, notes: dict[str, int] | None = None) -> None:
        """Account one micro-batch of the streaming job (a batch id seen before is not counted again)."""
        now = self.clock()
        with self._lock:
            self._last_batch_ts = now
            if state_rows is not None:
                self._state_rows = int(state_rows)
            if watermark_ms is not None and watermark_ms > 0:
                self._watermark_delay = max(0.0, now - watermark_ms / 1000.0)
            if not self._seen_batches.first_time(batch_id):
                return
            self._batches += 1
            for d, src in ((self._events_read, events_read), (self._rejects, rejects),
                           (self._output_records, output_counts), (self._notes, notes)):
                for k, v in (src or {}).items():
                    if v and v > 0:
                        d[str(k)] = d.get(str(k), 0) + int(v)
            if duration_s is not None and duration_s >= 0:
                self._batch_duration.observe(float(duration_s))

    def mark_alive(self) -> None:
        """The job is healthy but ran no batch (caught up, nothing to read): /ready stays green."""
        with self._lock:
            self._last_batch_ts = self.clock()

    def set_up(self, up: bool) -> None:
        with self._lock:
            self._up = 1 if up else 0

    def set_ready(self, ready: bool, reason: str | None = None) -> None:
        """`reason`: why the job is not ready, shown on /ready's body (None keeps the previous one)."""
        with self._lock:
            if ready and not self._ready:
                self._ready_since = self.clock()
            self._ready = bool(ready)
            if reason is not None or ready:
                self._not_ready_reason = None if ready else reason

    def note_sink_error(self, sink: str) -> None:
        with self._lock:
            self._sink_errors[sink] = self._sink_errors.get(sink, 0) + 1

    def is_ready(self) -> bool:
        """Ready: the job said so, and its last batch (or the ready report) is at most ``ready_max_age_s`` old."""
        return self.readiness()[0]

    def readiness(self) -> tuple[bool, str]:
        """(ready, why not) for /ready: the reason the job gave, or how old its last batch is."""
        with self._lock:
            if not self._ready:
                return False, self._not_ready_reason or "the streaming job has not started yet"
            last = max(x for x in (self._last_batch_ts, self._ready_since, 0.0) if x is not None)
            age = self.clock() - last
            if age > self.ready_max_age_s:
                return False, (f"the last micro-batch ended {age:.0f} s ago (exporter.ready_max_batch_age: "
                               f"{self.ready_max_age_s:.0f} s)")
            return True, "ready"

    # ---- introspection -------------------------------------------------------------------------------------
    @property
    def groups(self) -> list[str]:
        with self._lock:
            return sorted(self._groups)

    def groups_without_commits(self) -> list[str]:
        """Tracked groups that sent no ``offsets_committed`` record: their offsets come from the brokers."""
        with self._lock:
            return sorted(n for n, g in self._groups.items() if not g.stream_commits)

    def committed_partitions(self) -> list[tuple[str, int]]:
        """Every partition some tracked group committed on (the broker poller reads their log ends)."""
        with self._lock:
            return sorted({k for g in self._groups.values() for k in g.committed})

    # ---- exposition ----------------------------------------------------------------------------------------
    def render(self) -> str:
        """The whole text exposition (format 0.0.4)."""
        with self._lock:
            body = self._frozen[0] if self._frozen is not None else self._render_body()
            return body + self._render_self()

    def render_bytes(self, gzip_ok: bool = False) -> tuple[bytes, str | None]:
        """The exposition as bytes for HTTP, gzip-compressed when ``gzip_ok``: ``(body, content_encoding)``.

        The groups' part is cached (text, bytes and gzip) until something changes; the gzip answer is two
        gzip members (groups, then the self metrics), which gzip readers, Prometheus' included, concatenate.
        """
        with self._lock:
            fr = self._frozen
            if fr is not None:       # a micro-batch is being applied and persisted: the exposition before it
                if fr[1] is None:
                    fr[1] = fr[0].encode("utf-8")
                body_bytes = fr[1]
            else:
                body = self._render_body()
                if self._body_bytes is None:
                    self._body_bytes = body.encode("utf-8")
                body_bytes = self._body_bytes
            tail = self._render_self().encode("utf-8")
            if not gzip_ok:
                return body_bytes + tail, None
            if fr is not None:
                if fr[2] is None:
                    fr[2] = gzip.compress(body_bytes, compresslevel=1)
                body_gzip = fr[2]
            else:
                if self._body_gzip is None:
                    self._body_gzip = gzip.compress(body_bytes, compresslevel=1)
                body_gzip = self._body_gzip
            return body_gzip + gzip.compress(tail, compresslevel=1), "gzip"

    def _render_body(self) -> str:
        now_ms = int(self.clock() * 1000)
        if now_ms >= self._next_expiry_ms:
            self._expire(now_ms)
        if self._body is not None:
            return self._body
        lag_now = self._last_now_ms
        for t in self._dirty_topics:
            for name in self._topic_groups.get(t, ()):
                self._groups[name].lag_frags = None
            self._end_frags.pop(t, None)
        self._dirty_topics.clear()
        groups = list(self._groups.values())
        ends = self._ends
        for g in groups:
            if g.lag_frags is None:
                g.lag_frags = g.render_lag(ends, lag_now, self.lag_granularity)
            if g.committed_frag is None:
                g.committed_frag = g.render_committed(self.lag_granularity)
            if g.meta_frags is None:
                g.meta_frags = g.render_meta()
        by_topic: dict[str, list] = {}
        for key in ends.ends:
            if key[0] not in self._end_frags:
                by_topic.setdefault(key[0], []).append(key)
        pref = self._end_prefix
        for t, keys in by_topic.items():
            keys.sort()
            for k in keys:
                if k not in pref:
                    pref[k] = f'kafka_topic_partition_end_offset{{topic="{escape_label(t)}",partition="{k[1]}"}} '
            self._end_frags[t] = ("".join([f"{pref[k]}{ends.ends[k]}\n" for k in keys]) if self.lag_granularity ==
                                  "partition" else lag_levels.end_offset_lines(keys, ends.ends, self.lag_granularity))
        out: list[str] = []
        for spec in CATALOGUE:
            name = spec.name
            if name == "kafka_topic_partition_end_offset":
                out.append(header(spec))
                out.extend(self._end_frags[t] for t in sorted(self._end_frags))
            elif name == "kafka_consumergroup_committed_offset":
                out.append(header(spec))
                out.extend(g.committed_frag for g in groups)
            elif spec.group_scoped:
                out.append(header(spec))
                if name in LAG_FAMILIES:
                    out.extend(g.lag_frags.get(name, "") for g in groups)
                else:
                    out.extend(g.meta_frags.get(name, "") for g in groups)
        self._body = "".join(out)
        self._body_bytes = None
        self._body_gzip = None
        return self._body

    def _render_self(self) -> str:
        selfm = self._self_frags()
        out = []
        for spec in CATALOGUE:
            if spec.group_scoped or spec.name == "kafka_topic_partition_end_offset":
                continue
            out.append(header(spec))
            out.append(selfm.get(spec.name, ""))
        return "".join(out)

    def _self_counter_frags(self) -> dict[str, str]:
        """The self metrics kept across restarts (state_text): counters of what the job read and wrote."""
        f: dict[str, str] = {}
        f["rebalance_monitor_events_read_total"] = _labelled("rebalance_monitor_events_read_total", "source",
                                                             self._events_read)
        f["rebalance_monitor_rejects_total"] = _labelled("rebalance_monitor_rejects_total", "reason", self._rejects)
        f["rebalance_monitor_input_notes_total"] = _labelled("rebalance_monitor_input_notes_total", "reason",
                                                             self._notes)
        f["rebalance_monitor_batches_total"] = f"rebalance_monitor_batches_total {self._batches}\n"
        f["rebalance_monitor_batch_duration_seconds"] = "".join(
            self._batch_duration.lines("rebalance_monitor_batch_duration_seconds", ""))
        f["rebalance_monitor_groups_dropped_total"] = _labelled("rebalance_monitor_groups_dropped_total", "reason",
                                                                self._dropped)
        f["rebalance_monitor_output_records_total"] = _labelled("rebalance_monitor_output_records_total", "kind",
                                                                self._output_records)
        return f

    def _self_frags(self) -> dict[str, str]:
        f = dict(self._frozen[3]) if self._frozen is not None else self._self_counter_frags()
        f["rebalance_monitor_up"] = f"rebalance_monitor_up {self._up}\n"
        ready = self._ready and self.is_ready()
        f["rebalance_monitor_ready"] = f"rebalance_monitor_ready {1 if ready else 0}\n"
        if self._state_rows is not None:
            f["rebalance_monitor_state_rows"] = f"rebalance_monitor_state_rows {self._state_rows}\n"
        if self._watermark_delay is not None:
            f["rebalance_monitor_watermark_delay_seconds"] = \
                f"rebalance_monitor_watermark_delay_seconds {fmt_value(self._watermark_delay)}\n"
        if self._last_batch_ts is not None:
            f["rebalance_monitor_last_batch_timestamp_seconds"] = \
                f"rebalance_monitor_last_batch_timestamp_seconds {fmt_value(self._last_batch_ts)}\n"
        f["rebalance_monitor_groups_tracked"] = f"rebalance_monitor_groups_tracked {len(self._groups)}\n"
        f["rebalance_monitor_sink_errors_total"] = _labelled("rebalance_monitor_sink_errors_total", "sink",
                                                             self._sink_errors)
        return f

    # ---- prometheus_client Collector protocol --------------------------------------------------------------
    def collect(self):
        """Yield the families as prometheus_client ``Metric`` objects (parsed from :meth:`render`)."""
        from prometheus_client.parser import text_string_to_metric_families

        yield from text_string_to_metric_families(self.render())

    def describe(self):
        return []
