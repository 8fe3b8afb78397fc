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

Counters and restarts: every counter lives in this process and starts at 0 when the process starts; it never
goes backwards within a process. After a restart the counters start again from 0, which Prometheus treats as
a counter reset (``rate``/``increase`` handle it). They are not rebuilt from the streaming state: the job
re-emits only the batch it was processing when it stopped, so rebuilding would double count. Within one
process a replayed record does not count twice: generations are deduplicated on
``(group, generation, completed_ms)``, member timeouts on ``(group, member_id, timeout, detected_ms)``,
storms on ``(group, started_ms)`` and batches (``record_batch``) on ``batch_id``. A group dropped by
``group_deleted`` or the idle TTL loses its counters: if it comes back its series start again from 0.
"""
from __future__ import annotations

import gzip
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable

from .catalogue import BATCH_DURATION_BUCKETS, CATALOGUE, REBALANCE_DURATION_BUCKETS, MetricSpec
from .lag import EndOffsetTable, offset_lag

GROUP_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance")
DEDUPE_KEYS_PER_GROUP = 256

# group families whose lines depend on offsets (re-rendered when an end offset moves)
LAG_FAMILIES = ("kafka_consumergroup_lag", "kafka_consumergroup_lag_sum", "kafka_consumergroup_lag_seconds",
                "kafka_consumergroup_committed_offset")


# ------------------------------------------------------------------------------------------------------------
# exposition helpers
def escape_label(value) -> str:
    s = str(value)
    if "\\" in s or '"' in s or "\n" in s:
        s = s.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return s


def fmt_value(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if v != v:
        return "NaN"
    if v == math.inf:
        return "+Inf"
    if v == -math.inf:
        return "-Inf"
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v)}.0"
    return repr(float(v))


def fmt_le(b: float) -> str:
    if b == math.inf:
        return "+Inf"
    return repr(float(b))


def labels_text(pairs) -> str:
    """``{a="x",b="y"}`` (empty string when no labels)."""
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in pairs) + "}"


def header(spec: MetricSpec) -> str:
    help_ = spec.help.replace("\\", "\\\\").replace("\n", "\\n")
    return f"# HELP {spec.name} {help_}\n# TYPE {spec.name} {spec.prom_type}\n"


class Histogram:
    """Cumulative-bucket histogram state."""

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.sum = 0.0
        self.count = 0

    def observe(self, v: float) -> None:
        for i, b in enumerate(self.bounds):
            if v <= b:
                self.counts[i] += 1
                break
        self.sum += v
        self.count += 1

    def lines(self, name: str, label_prefix: str) -> list[str]:
        """``label_prefix`` is the text inside the braces before ``le`` (may be empty)."""
        out = []
        sep = "," if label_prefix else ""
        acc = 0
        for b, c in zip(self.bounds, self.counts):
            acc += c
            out.append(f'{name}_bucket{{{label_prefix}{sep}le="{fmt_le(b)}"}} {acc}\n')
        out.append(f'{name}_bucket{{{label_prefix}{sep}le="+Inf"}} {self.count}\n')
        lbl = "{" + label_prefix + "}" if label_prefix else ""
        out.append(f"{name}_count{lbl} {self.count}\n")
        out.append(f"{name}_sum{lbl} {fmt_value(self.sum)}\n")
        return out


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

    def render_committed(self) -> str:
        pref, com = self.tp_prefix, self.committed
        return "".join([f"kafka_consumergroup_committed_offset{pref[k]}{com[k]}\n" for k in self._keys()])

    def render_lag(self, ends: EndOffsetTable, now_ms: int) -> dict[str, str]:
        """Lag lines; the time lag follows lag.PartitionSamples.produce_time_ms (inlined: the hot path)."""
        keys = self._keys()
        pref, com = self.tp_prefix, self.committed
        end_get, samples_get = ends.ends.get, ends.samples.get
        lag_lines = []
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
                lag_lines.append(f"kafka_consumergroup_lag{pref[k]}0\n")
                continue
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
        out = {"kafka_consumergroup_lag": "".join(lag_lines)}
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
                 clock=time.time, prerender: bool = True) -> None:
        self.max_groups = max_groups
        # re-render changed groups at the end of apply() (the job's thread) rather than on the next scrape
        self.prerender = prerender
        self.group_allow = re.compile(group_allow) if group_allow else None
        self.group_deny = re.compile(group_deny) if group_deny else None
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
        self._events_read: dict[str, int] = {}
        self._rejects: dict[str, int] = {}
        self._batches = 0
        self._batch_duration = Histogram(BATCH_DURATION_BUCKETS)
        self._state_rows: int | None = None
        self._watermark_delay: float | None = None
        self._last_batch_ts: float | None = None
        self._output_records: dict[str, int] = {}
        self._sink_errors: dict[str, int] = {}
        self._seen_batches = _Dedupe(1024)

    # ---- group admission -----------------------------------------------------------------------------------
    def _group(self, name: str, now_ms: int) -> _Group | None:
        g = self._groups.get(name)
        if g is not None:
            g.last_activity_ms = max(g.last_activity_ms, now_ms)
            return g
        if (self.group_allow is not None and not self.group_allow.fullmatch(name)) or \
                (self.group_deny is not None and self.group_deny.fullmatch(name)):
            self._note_dropped(name, "denied")
            return None
        if len(self._groups) >= self.max_groups:
            self._expire(now_ms)
            if len(self._groups) >= self.max_groups:
                self._note_dropped(name, "max_groups")
                return None
        self._dropped_names.pop(name, None)
        g = self._groups[name] = _Group(name, now_ms)
        return g

    def _note_dropped(self, name: str, reason: str) -> None:
        if self._dropped_names.get(name) == reason:
            return
        self._dropped_names[name] = reason
        self._dropped[reason] += 1
        if len(self._dropped_names) > self._dropped_cap:
            self._dropped_names.popitem(last=False)

    def _remove_group(self, name: str) -> None:
        g = self._groups.pop(name, None)
        if g is None:
            return
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
                     output_counts: dict[str, int] | None = None) -> None:
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
                           (self._output_records, output_counts)):
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

    def set_ready(self, ready: bool) -> None:
        with self._lock:
            if ready and not self._ready:
                self._ready_since = self.clock()
            self._ready = bool(ready)

    def note_sink_error(self, sink: str) -> None:
        with self._lock:
            self._sink_errors[sink] = self._sink_errors.get(sink, 0) + 1

    def is_ready(self) -> bool:
        """Ready: the job said so, and its last batch (or the ready report) is at most ``ready_max_age_s`` old."""
        with self._lock:
            if not self._ready:
                return False
            last = max(x for x in (self._last_batch_ts, self._ready_since, 0.0) if x is not None)
            return self.clock() - last <= self.ready_max_age_s

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
            return self._render_body() + self._render_self()

    def render_bytes(self, gzip_ok: bool = False) -> tuple[bytes, str | None]:
        """The exposition as bytes for HTTP, gzip-compressed when ``gzip_ok``: ``(body, content_encoding)``.

        The groups' part is cached (text, bytes and gzip) until something changes; the gzip answer is two
        gzip members (groups, then the self metrics), which gzip readers, Prometheus' included, concatenate.
        """
        with self._lock:
            body = self._render_body()
            if self._body_bytes is None:
                self._body_bytes = body.encode("utf-8")
            tail = self._render_self().encode("utf-8")
            if not gzip_ok:
                return self._body_bytes + tail, None
            if self._body_gzip is None:
                self._body_gzip = gzip.compress(self._body_bytes, compresslevel=1)
            return self._body_gzip + gzip.compress(tail, compresslevel=1), "gzip"

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
                g.lag_frags = g.render_lag(ends, lag_now)
            if g.committed_frag is None:
                g.committed_frag = g.render_committed()
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
            self._end_frags[t] = "".join([f"{pref[k]}{ends.ends[k]}\n" for k in keys])
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

    def _self_frags(self) -> dict[str, str]:
        f: dict[str, str] = {}
        f["rebalance_monitor_up"] = f"rebalance_monitor_up {self._up}\n"
        ready = self._ready and self.is_ready()
        f["rebalance_monitor_ready"] = f"rebalance_monitor_ready {1 if ready else 0}\n"

        def labelled(name, label, d):
            return "".join(f'{name}{{{label}="{escape_label(k)}"}} {d[k]}\n' for k in sorted(d))

        f["rebalance_monitor_events_read_total"] = labelled("rebalance_monitor_events_read_total", "source",
                                                            self._events_read)
        f["rebalance_monitor_rejects_total"] = labelled("rebalance_monitor_rejects_total", "reason", self._rejects)
        f["rebalance_monitor_batches_total"] = f"rebalance_monitor_batches_total {self._batches}\n"
        f["rebalance_monitor_batch_duration_seconds"] = "".join(
            self._batch_duration.lines("rebalance_monitor_batch_duration_seconds", ""))
        if self._state_rows is not None:
            f["rebalance_monitor_state_rows"] = f"rebalance_monitor_state_rows {self._state_rows}\n"
        if self._watermark_delay is not None:
            f["rebalance_monitor_watermark_delay_seconds"] = \
                f"rebalance_monitor_watermark_delay_seconds {fmt_value(self._watermark_delay)}\n"
        if self._last_batch_ts is not None:
            f["rebalance_monitor_last_batch_timestamp_seconds"] = \
                f"rebalance_monitor_last_batch_timestamp_seconds {fmt_value(self._last_batch_ts)}\n"
        f["rebalance_monitor_groups_tracked"] = f"rebalance_monitor_groups_tracked {len(self._groups)}\n"
        f["rebalance_monitor_groups_dropped_total"] = labelled("rebalance_monitor_groups_dropped_total", "reason",
                                                               self._dropped)
        f["rebalance_monitor_output_records_total"] = labelled("rebalance_monitor_output_records_total", "kind",
                                                               self._output_records)
        f["rebalance_monitor_sink_errors_total"] = labelled("rebalance_monitor_sink_errors_total", "sink",
                                                            self._sink_errors)
        return f

    # ---- prometheus_client Collector protocol --------------------------------------------------------------
    def collect(self):
        """Yield the families as prometheus_client ``Metric`` objects (parsed from :meth:`render`)."""
        from prometheus_client.parser import text_string_to_metric_families

        yield from text_string_to_metric_families(self.render())

    def describe(self):
        return []
