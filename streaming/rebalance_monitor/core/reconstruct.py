"""The multi-group driver of the core: reorders events within a disorder bound, routes them to one
`GroupMonitor` per group, and moves event time (the watermark) so that timers fire for groups that have
gone silent. `replay` runs this directly; the Spark job runs the same `GroupMonitor` per group key, with
Spark's watermark as the clock.

Watermark: the highest event time seen minus `max_disorder_ms`. Events at or below it are released in
timestamp order (ties in arrival order). An event that arrives below the watermark is applied at once if
its group has not yet processed past it; otherwise it is late: rejected with reason `late_event` (counted
and dead-lettered by the caller), never silently dropped. The Spark job applies the same rule per group.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from .coordinator_placement import offsets_partition_for
from .events import (
    REASON_LATE, CoordinatorChange, EndOffsets, Event, Rejected, TopicPartitions,
)
from .group import GroupMonitor
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


class Reconstructor:
    def __init__(self, settings: CoreSettings | None = None, max_disorder_ms: int = 2_000,
                 emit_status: bool = False, group_filter=None, offsets_partitions: int = 50):
        self.settings = settings or CoreSettings()
        self.max_disorder_ms = max_disorder_ms
        self.emit_status = emit_status
        self.group_filter = group_filter  # callable(group) -> bool, or None
        self.offsets_partitions = offsets_partitions
        self.groups: dict[str, GroupMonitor] = {}
        self.metadata: dict[str, int] = {}  # cluster-wide partition counts (topic_partitions, group "")
        self.pending: list = []
        self.timers: list = []
        self.seq = 0
        self.max_ts: int | None = None
        self.watermark: int | None = None
        self.stats = ReplayStats()
        self.rejects: list[Rejected] = []
        self.prune_every = 10_000  # events between sweeps for idle groups (bounded memory)

    # --- input --------------------------------------------------------------------------------
    def feed(self, item) -> list[dict]:
        """Take one parsed event (or a `Rejected`, which is only counted) and return released records."""
        self.stats.events += 1
        if isinstance(item, Rejected):
            self._reject(item)
            return []
        ev: Event = item
        if self.group_filter is not None and ev.group != CLUSTER_GROUP and not self.group_filter(ev.group):
            self.stats.groups_filtered += 1
            return []
        if self.watermark is not None and ev.ts < self.watermark:
            # Behind the watermark: usable only if its group has not moved past it (as in the Spark job).
            g = self.groups.get(ev.group)
            frontier = g.clock_ms if g is not None else 0
            if ev.ts < frontier:
                self._reject(Rejected(REASON_LATE, ev, f"ts {ev.ts} is behind what the group already "
                                                       f"processed ({frontier})"))
                return []
            self.stats.used += 1
            out: list[dict] = []
            self._route(ev, out)
            self._count(out)
            return out
        self.stats.used += 1
        self.seq += 1
        if self.seq % self.prune_every == 0:
            self.prune_idle()
        heapq.heappush(self.pending, (ev.ts, self.seq, ev))
        if self.max_ts is None or ev.ts > self.max_ts:
            self.max_ts = ev.ts
            return self._advance(self.max_ts - self.max_disorder_ms)
        return []

    def finish(self) -> list[dict]:
        """End of input: release everything and fire the timers due up to the last event time."""
        out = []
        if self.max_ts is not None:
            out = self._advance(self.max_ts)
        if self.emit_status:
            out.extend(self.status_records())
        return out

    def prune_idle(self) -> int:
        """Drop groups idle past the group TTL (nothing pending); returns how many were dropped."""
        if self.watermark is None:
            return 0
        idle = [name for name, g in self.groups.items() if g.is_idle(self.watermark)]
        for name in idle:
            del self.groups[name]
        self.stats.groups_dropped += len(idle)
        return len(idle)

    def status_records(self, now_ms: int | None = None) -> list[dict]:
        out = []
        for g in self.groups.values():
            if g.dirty:
                out.append(g.status(now_ms))
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
        out: list[dict] = []
        pending = self.pending
        while pending and pending[0][0] <= watermark:
            _, _, ev = heapq.heappop(pending)
            self._route(ev, out)
        timers = self.timers
        while timers and timers[0][0] <= watermark:
            due, name = heapq.heappop(timers)
            g = self.groups.get(name)
            if g is None:
                continue
            nxt = g.next_timer_ms()
            if nxt is None or nxt > watermark:
                if nxt is not None and nxt != due:
                    heapq.heappush(timers, (nxt, name))
                continue
            out.extend(g.advance_to(watermark))
            self._schedule(g)
        self._count(out)
        return out

    def _count(self, records: list[dict]) -> None:
        counts = self.stats.records
        for r in records:
            counts[r["kind"]] = counts.get(r["kind"], 0) + 1

    def _schedule(self, g: GroupMonitor) -> None:
        nxt = g.next_timer_ms()
        if nxt is not None:
            heapq.heappush(self.timers, (nxt, g.group))

    def _group(self, name: str) -> GroupMonitor:
        g = self.groups.get(name)
        if g is None:
            g = self.groups[name] = GroupMonitor(name, self.settings)
            if self.metadata:
                g.partitions.update(self.metadata)
        return g

    def _route(self, ev: Event, out: list) -> None:
        if ev.group == CLUSTER_GROUP:
            if isinstance(ev, TopicPartitions):
                self.metadata.update(ev.topics)
                for g in self.groups.values():
                    self._process(g, ev, out)
                return
            if isinstance(ev, EndOffsets):
                out.append({"kind": "end_offsets", "group": "", "ts": ev.ts,
                            "offsets": [list(o) for o in ev.offsets]})
                return
            if isinstance(ev, CoordinatorChange):
                for g in self.groups.values():
                    if offsets_partition_for(g.group, self.offsets_partitions) == ev.partition:
                        self._process(g, ev, out)
                return
        self._process(self._group(ev.group), ev, out)

    def _process(self, g: GroupMonitor, ev: Event, out: list) -> None:
        before = g.next_timer_ms()
        out.extend(g.process(ev))
        after = g.next_timer_ms()
        if after is not None and after != before:
            heapq.heappush(self.timers, (after, g.group))
