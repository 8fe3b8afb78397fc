"""`replay`'s driver of the core: every group of the input in one process, on one watermark.

The per-group rules (ordering, lateness, cluster-wide fan-out, output records) are `core/runner.py`'s, the same
the Spark job runs. What is replay's own: one `GroupRunner` per group in memory, one `ClusterLog` for the whole
input, and the watermark, the highest event time seen less `max_disorder_ms`. A group runs (releases its events
and fires its timers up to the watermark) when the watermark passes its next due time; at the end of input
every group moves to the last event time. An event behind the watermark is applied at once if its group has not
yet processed past it; otherwise it is late: rejected with reason `late_event` (counted and dead-lettered by
the caller), never silently dropped.
"""
from __future__ import annotations

import dataclasses
import heapq
import json
from dataclasses import dataclass, field

from .events import REASON_LATE, Event, GroupConfig, Rejected, event_to_dict
from .runner import REASON_NO_GROUP, ClusterLog, GroupRunner, cluster_route, end_offsets_record
from .settings import CoreSettings

CLUSTER_GROUP = ""


@dataclass
class ReplayStats:
    events: int = 0
    used: int = 0
    rejected: dict = field(default_factory=dict)
    groups_filtered: int = 0
    groups_dropped: int = 0
    records: dict = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())


class EventItems:
    """Replay's pending items are the events themselves (see `core/runner.py`, codec). Heartbeats and polls take
    the monitor's fast path (`process_beat`, the same effect as `process`), as in the Spark job."""

    @staticmethod
    def beat(monitor, item, ts) -> bool:
        return monitor.try_beat(item)  # (an event's own ts is the one it is released at)

    @staticmethod
    def event(item, ts, group):
        return item

    @staticmethod
    def raw(item, ts, group):
        return item


class DueTimes:
    """When groups may next need a run: (event time, group) entries, a group's entry possibly stale (too early) or
    twice, taken in (time, group) order. Kept as a heap of the distinct times and the groups at each: the
    watermark moves a millisecond at a time, and each time holds a few groups."""

    __slots__ = ("times", "groups")

    def __init__(self):
        self.times: list[int] = []  # heap
        self.groups: dict[int, list[str]] = {}

    def add(self, ts: int, group: str) -> None:
        names = self.groups.get(ts)
        if names is None:
            self.groups[ts] = [group]
            heapq.heappush(self.times, ts)
        else:
            names.append(group)

    def take(self, upto: int) -> list[str] | None:
        """The groups of the earliest time if it is at or before `upto`, by name (and taken out); else None."""
        times = self.times
        if not times or times[0] > upto:
            return None
        names = self.groups.pop(heapq.heappop(times))
        if len(names) > 1:
            names.sort()
        return names


class Reconstructor:
    def __init__(self, settings: CoreSettings | None = None, max_disorder_ms: int = 2_000,
                 emit_status: bool = False, group_filter=None, offsets_partitions: int | None = None):
        settings = settings or CoreSettings()
        if offsets_partitions is not None and offsets_partitions != settings.offsets_partitions:
            settings = dataclasses.replace(settings, offsets_partitions=offsets_partitions)
        self.settings = settings
        self.max_disorder_ms = max_disorder_ms
        self.emit_status = emit_status
        self.group_filter = group_filter  # callable(group) -> bool, or None
        self.runners: dict[str, GroupRunner] = {}
        self.cluster = ClusterLog()
        self.due = DueTimes()
        self.max_ts: int | None = None
        self.watermark: int | None = None
        self.stats = ReplayStats()
        self.rejects: list[Rejected] = []

    @property
    def groups(self) -> dict[str, GroupRunner]:
        """The groups in state, by name."""
        return self.runners

    # --- input --------------------------------------------------------------------------------
    def feed(self, item) -> list[dict]:
        """Take one parsed event (or a `Rejected`, which is only counted) and return released records."""
        stats = self.stats
        stats.events += 1
        if isinstance(item, Rejected):
            self._reject(item)
            return []
        ev: Event = item
        group = ev.group
        if group == CLUSTER_GROUP:
            return self._feed_cluster(ev)
        if self.group_filter is not None and not self.group_filter(group):
            stats.groups_filtered += 1
            return []
        stats.used += 1
        out: list[dict] = []
        ts = ev.ts
        runner = self.runners.get(group)
        if runner is None:
            runner = self.runners[group] = GroupRunner.new(group, self.settings)
        if self.watermark is not None and ts < self.watermark:
            # behind the watermark: usable only if its group has not moved past it (as in the Spark job)
            frontier = runner.monitor.clock_ms
            if ts < frontier and type(ev) is GroupConfig:  # a standing setting: it holds from now on
                return runner.take_standing(ev)
            if ts < frontier:
                self._reject(Rejected(REASON_LATE, ev, f"ts {ts} is behind what the group already "
                                                       f"processed ({frontier})"))
                return []
            runner.queue(ts, ev)
            self.due.add(ts, group)
            out.extend(self._run_due(self.watermark))
        elif runner.queue(ts, ev):  # the group's earliest pending event: it may be due sooner
            self.due.add(ts, group)
        if self.max_ts is None or ts > self.max_ts:
            self.max_ts = ts
            out.extend(self._advance(ts - self.max_disorder_ms))
        if out:
            self._count(out)
        return out

    def _feed_cluster(self, ev: Event) -> list[dict]:
        """`feed` of an event with group "": cluster-wide (`core/runner.py`, cluster_route)."""
        route = cluster_route(ev.type, ev.group)
        if route == "reject":
            self._reject(Rejected(REASON_NO_GROUP, json.dumps(event_to_dict(ev), separators=(",", ":")),
                                  f"a {ev.type} event needs a group"))
            return []
        self.stats.used += 1
        out: list[dict] = []
        if route == "record":
            out.append(end_offsets_record(ev))
        else:  # "fan_out"
            self.cluster.add(ev.ts, ev)
            for name in self.runners:
                self.due.add(ev.ts, name)
            if self.watermark is not None and ev.ts <= self.watermark:
                out.extend(self._run_due(self.watermark))
        if self.max_ts is None or ev.ts > self.max_ts:
            self.max_ts = ev.ts
            out.extend(self._advance(self.max_ts - self.max_disorder_ms))
        self._count(out)
        return out

    def finish(self) -> list[dict]:
        """End of input: release everything and fire the timers due up to the last event time."""
        out = []
        if self.max_ts is not None:
            out = self._advance(self.max_ts)
            self._count(out)
        if self.emit_status:
            out.extend(self.status_records())
        return out

    def prune_idle(self) -> int:
        """Drop groups idle past the group TTL (nothing pending); returns how many were dropped. (Runs also
        drop them, at their TTL.)"""
        if self.watermark is None:
            return 0
        idle = [name for name, r in self.runners.items() if r.is_done(self.watermark)]
        for name in idle:
            del self.runners[name]
        self.stats.groups_dropped += len(idle)
        return len(idle)

    def status_records(self, now_ms: int | None = None) -> list[dict]:
        out = []
        for r in self.runners.values():
            if r.monitor.dirty:
                out.append(r.monitor.status(now_ms))
        self._count(out)
        return out

    def _reject(self, rej: Rejected) -> None:
        self.stats.reject(rej.reason)
        self.rejects.append(rej)

    # --- time ---------------------------------------------------------------------------------
    def _advance(self, watermark: int) -> list[dict]:
        if self.watermark is not None and watermark <= self.watermark:
            return []
        self.watermark = watermark
        return self._run_due(watermark)

    def _run_due(self, watermark: int) -> list[dict]:
        """Run every group due at or before the watermark, up to it."""
        out: list[dict] = []
        due, runners, cluster = self.due, self.runners, self.cluster
        ran: list = []
        seen: set[str] = set()
        while True:
            names = due.take(watermark)
            if names is None:
                break
            for name in names:
                if name in seen:
                    continue
                runner = runners.get(name)
                if runner is None:
                    continue
                pending = runner.pending
                if not pending or pending[0][0] > watermark:  # (an event to release: due, whatever else is)
                    nxt = runner.due_ms(cluster)
                    if nxt > watermark:  # (then later than the entry taken)
                        due.add(nxt, name)
                        continue
                seen.add(name)
                out.extend(runner.release(watermark, EventItems, cluster))
                if not runner.pending and runner.is_done(watermark):
                    del runners[name]
                    self.stats.groups_dropped += 1
                    continue
                nxt = runner.due_ms(cluster)  # (no other group's run changes it)
                if nxt > watermark:
                    due.add(nxt, name)
                else:  # (at the next watermark, not again now)
                    ran.append((nxt, name))
        for nxt, name in ran:
            due.add(nxt, name)
        if cluster.entries:
            cluster.trim(self.settings.group_idle_ttl_ms)
        return out

    def _count(self, records: list[dict]) -> None:
        counts = self.stats.records
        for r in records:
            counts[r["kind"]] = counts.get(r["kind"], 0) + 1
