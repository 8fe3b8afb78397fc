"""The one driver of the core: what both `replay` and the Spark job run for each group.

A `GroupRunner` holds one group's `GroupMonitor`, the group's events not yet released (sorted by time, then
arrival), the newest event time it was given, and how far it has read the cluster-wide events of its shard. It
applies, in timestamp order, everything up to the release point its driver gives it, then fires the monitor's
timers up to there. The rules live here once:

- **Ordering.** Events are applied in (time, arrival) order; disorder within the release delay gives the same
  output as ordered input.
- **Lateness.** An event older than what its group already processed (`monitor.clock_ms`) is late: it is handed
  back to the driver, which dead-letters it with reason `late_event`. Never applied, never dropped silently.
- **Cluster-wide events** (`coordinator_change`, `topic_partitions`, `broker_release` and the brokers'
  `group_config` with group ""; see `cluster_route`) are
  kept once per shard in a `ClusterLog`; each runner applies the entries that concern its group, merged with its
  own events in time order (at equal times the cluster entry first). A group that did not exist yet takes the
  partition counts of the entries up to its first event and no older coordinator move. In `replay` the shard is
  the whole input; in the Spark job it is one `__consumer_offsets` partition (a group lives on exactly one, so a
  coordinator move reaches exactly its groups).
- **Output**: the records of the monitor (see docs/records.md).

The release point is the driver's: `replay` uses its global watermark (highest event time less the delay) and,
at its end of input, the last event time; the job uses `group_clock.LiveClock`. The drivers also differ in how
they hold pending events between runs (a list in memory, or the runner's `to_state` in Spark's state store).

Items: a pending event is whatever the driver's `codec` understands (an `Event` in replay; JSON text or the
columns of a heartbeat / poll in the job). The codec has `beat(monitor, item, ts)` (the monitor's fast paths
without an event object: False when none applies, True when applied with no record, else the list of the records it
gave; the job's takes commits too, `GroupMonitor.process_commit`), `event(item, ts, group)` (the event) and
`raw(item, ts, group)` (its canonical text, for dead letters).
Pure: no I/O.
"""
from __future__ import annotations

import bisect

from . import records
from .coordinator_placement import offsets_partition_for
from .events import BrokerRelease, CoordinatorChange, GroupConfig, Rejected, TopicPartitions
from .group import GroupMonitor
from .group.coordinator_events import take_release
from .group.group_config import on_group_config
from .group_clock import ClockReference
from .settings import CoreSettings
from .vocabulary import EventType

CLUSTER_GROUP = ""
# Event types that, with group "", concern many groups (end_offsets passes through as a record of its own).
FANNED_OUT = (EventType.COORDINATOR_CHANGE, EventType.TOPIC_PARTITIONS, EventType.BROKER_RELEASE,
              EventType.GROUP_CONFIG)
CLUSTER_TYPES = FANNED_OUT + (EventType.END_OFFSETS,)
REASON_NO_GROUP = "bad_value:group"


def cluster_route(etype: str, group: str) -> str | None:
    """How a driver routes an event: None for a group's own event; "fan_out" for a cluster-wide event that
    reaches groups (`coordinator_change`, `topic_partitions`); "record" for one passed through as a record
    (`end_offsets`); "reject" for any other event without a group (nothing to apply it to)."""
    if group != CLUSTER_GROUP:
        return None
    if etype in FANNED_OUT:
        return "fan_out"
    if etype == EventType.END_OFFSETS:
        return "record"
    return "reject"


def end_offsets_record(ev) -> dict:
    """The record of a cluster-wide `end_offsets` event (group "")."""
    return records.end_offsets(ev.group, ev.ts, offsets=ev.offsets)


def concerns(ev, group: str, settings: CoreSettings) -> bool:
    """Whether a cluster-wide event concerns `group`: a coordinator move of the group's `__consumer_offsets`
    partition, or any partition-count change."""
    if type(ev) is CoordinatorChange:
        return offsets_partition_for(group, settings.offsets_partitions) == ev.partition
    return True


def _order(entry) -> tuple:
    return entry[0], entry[1]


class ClusterLog:
    """The cluster-wide events of one shard, sorted by (time, arrival): entries `[ts, seq, item]`. Bounded: an
    entry older than `retain_ms` of event time behind the newest one goes (a group that far behind is past
    its idle TTL), and at most `max_entries` are kept."""

    __slots__ = ("entries", "seq")

    def __init__(self, entries: list | None = None, seq: int = 0):
        self.entries = entries if entries is not None else []
        self.seq = seq

    def add(self, ts: int, item) -> None:
        self.seq += 1
        entry = [ts, self.seq, item]
        if not self.entries or _order(self.entries[-1]) <= (ts, self.seq):
            self.entries.append(entry)
        else:
            bisect.insort(self.entries, entry, key=_order)

    def start_after(self, mark) -> int:
        """The index of the first entry after `mark` ((ts, seq) of the last entry a group has read)."""
        if mark is None:
            return 0
        return bisect.bisect_right(self.entries, tuple(mark), key=_order)

    def trim(self, retain_ms: int, max_entries: int = 1000) -> None:
        entries = self.entries
        if entries:
            cut = bisect.bisect_left(entries, entries[-1][0] - retain_ms, key=lambda e: e[0])
            cut = max(cut, len(entries) - max_entries)
            if cut > 0:
                del entries[:cut]

    def to_state(self) -> dict:
        return {"e": self.entries, "q": self.seq}

    @classmethod
    def from_state(cls, state: dict | None) -> "ClusterLog":
        if not state:
            return cls()
        return cls([list(e) for e in state["e"]], state["q"])


class GroupRunner:
    """One group under a driver (see the module docstring). `pending`: `[ts, seq, item]` (or a tuple: `queue`'s)
    sorted by (ts, seq);
    `newest`: the highest event time given to it; `mark`: (ts, seq) of the last cluster entry it has read, None
    before its first run; `ref`: its live clock's reference (group_clock.LiveClock), None in replay."""

    __slots__ = ("monitor", "pending", "seq", "newest", "mark", "ref")

    def __init__(self, monitor: GroupMonitor, pending: list | None = None, seq: int = 0, newest: int = 0,
                 mark=None, ref: ClockReference | None = None):
        self.monitor = monitor
        self.pending = pending if pending is not None else []
        self.seq = seq
        self.newest = newest
        self.mark = mark
        self.ref = ref

    @classmethod
    def new(cls, group: str, settings: CoreSettings) -> "GroupRunner":
        return cls(GroupMonitor(group, settings))

    @property
    def group(self) -> str:
        return self.monitor.group

    # --- input -----------------------------------------------------------------------------------
    def queue(self, ts: int, item) -> bool:
        """Keep one event until it is released (replay's path: one event at a time). True when it is the earliest
        pending event now."""
        self.seq = seq = self.seq + 1
        pending = self.pending
        if ts > self.newest:
            self.newest = ts
        if not pending:
            pending.append((ts, seq, item))
            return True
        if pending[-1][0] <= ts:  # every pending entry's seq is lower than the new one's
            pending.append((ts, seq, item))
            return False
        bisect.insort(pending, (ts, seq, item), key=_order)
        return pending[0][1] == seq

    def split_late(self, keys: list) -> tuple[list, list]:
        """Of new events `keys` ((ts, order, index) sorted), those behind what the group already processed
        (late), and the rest; the rest count for `newest`."""
        frontier = self.monitor.clock_ms
        late: list = []
        if keys and keys[0][0] < frontier:
            k = bisect.bisect_left(keys, (frontier,))
            late, keys = keys[:k], keys[k:]
        if keys and keys[-1][0] > self.newest:
            self.newest = keys[-1][0]
        return late, keys

    def settle_late(self, late: list, new) -> tuple[list, list[dict]]:
        """Of `late` keys (from `split_late`), those still late, and the records of the group's settings among
        them (`group_config`: a standing setting, applied as the group stands rather than rejected)."""
        still, records = [], []
        for key in late:
            ts, _, i = key
            ev = new.event(i, ts, self.monitor.group)
            if type(ev) is GroupConfig:
                records.extend(self.take_standing(ev))
            else:
                still.append(key)
        return still, records

    def take_standing(self, ev) -> list[dict]:
        """A `group_config` behind the group's clock: applied now (it moves no clock: GroupMonitor.process)."""
        return self.monitor.process(ev)

    # --- time ------------------------------------------------------------------------------------
    def due_ms(self, cluster: ClusterLog | None = None) -> int:
        """The event time at which the group next needs a run: its oldest pending event, its monitor's next
        timer, the next cluster entry that concerns it, or else its idle TTL (so that its state is dropped)."""
        g = self.monitor
        want = g.last_event_ms + g.settings.group_idle_ttl_ms + 1
        pending = self.pending
        if pending and pending[0][0] < want:
            want = pending[0][0]
        nxt = g.next_timer_ms()
        if nxt is not None and nxt < want:
            want = nxt
        if cluster is not None and cluster.entries and self.mark is not None:
            i = cluster.start_after(self.mark)
            if i < len(cluster.entries) and cluster.entries[i][0] < want:
                want = max(cluster.entries[i][0], g.clock_ms)
        return want

    def is_done(self, now_ms: int) -> bool:
        """Nothing pending and the group idle past its TTL: its state can go."""
        return not self.pending and self.monitor.is_idle(now_ms)

    # --- running ---------------------------------------------------------------------------------
    def run(self, release_ms: int, codec, cluster: ClusterLog | None = None, new=None) -> list[dict]:
        """Apply everything up to `release_ms` in time order (pending events, the cluster entries not yet
        read, and `new`: new events not late, with `.keys` sorted (ts, order, index) and `beat` / `event` /
        `item` by index), keep the rest, then fire the monitor's timers up to `release_ms`."""
        if new is None:
            return self.release(release_ms, codec, cluster)
        return self._merge(release_ms, codec, cluster, new)

    def release(self, release_ms: int, codec, cluster: ClusterLog | None = None) -> list[dict]:
        """`run` without new events (replay's every run, the job's runs on a timer). Most such runs have nothing
        but pending events to apply: those take a loop of their own."""
        if self.mark is None or (cluster is not None and cluster.entries and self._cluster_due(cluster, release_ms)):
            return self._merge(release_ms, codec, cluster, None)
        g = self.monitor
        records: list[dict] = []
        pending = self.pending
        beat = codec.beat
        i = 0
        for ts, _, item in pending:  # (not changed by the monitor)
            if ts > release_ms:
                break
            i += 1
            done = beat(g, item, ts)
            if done:
                if done is not True:
                    records.extend(done)
                continue
            ev = codec.event(item, ts, g.group)
            if type(ev) is not Rejected:  # the decoders hand over valid events only; keep it safe
                records.extend(g.process(ev))
        if i:
            del pending[:i]
        if release_ms > 0:
            nxt = g.next_timer_ms()
            if nxt is not None and nxt <= release_ms:
                records.extend(g.advance_to(release_ms))
            elif release_ms > g.clock_ms:  # all advance_to does when no timer is due
                g.clock_ms = release_ms
        return records

    def _merge(self, release_ms: int, codec, cluster: ClusterLog | None, new) -> list[dict]:
        """`run` in general: pending events, cluster entries and new events merged in time order."""
        g = self.monitor
        records: list[dict] = []
        keys = new.keys if new is not None else ()
        if self.mark is None:
            self._first_run(cluster, keys, codec)
        todo = self._cluster_todo(cluster, release_ms)
        pending = self.pending
        group = g.group
        process = g.process
        pi = ki = ci = 0
        n_pending, n_keys, n_todo = len(pending), len(keys), len(todo)
        while True:
            # the earliest of the three heads; at equal times: cluster entry, then pending, then new
            if ci < n_todo and (pi >= n_pending or todo[ci][0] <= pending[pi][0]) and \
                    (ki >= n_keys or todo[ci][0] <= keys[ki][0]):
                ts, seq, item = todo[ci]
                ci += 1
                self.mark = (ts, seq)
                ev = codec.event(item, ts, CLUSTER_GROUP)
                if type(ev) is Rejected or not concerns(ev, group, g.settings):
                    continue
                if ts < g.clock_ms and type(ev) is not GroupConfig:  # (a standing setting holds from now on)
                    continue
                records.extend(process(ev))
                continue
            if pi < n_pending and (ki >= n_keys or pending[pi][0] <= keys[ki][0]):
                ts, _, item = pending[pi]
                if ts > release_ms:
                    break
                pi += 1
                done = codec.beat(g, item, ts)
                if done:
                    if done is not True:
                        records.extend(done)
                    continue
                ev = codec.event(item, ts, group)
            elif ki < n_keys:
                ts, _, i = keys[ki]
                if ts > release_ms:
                    break
                ki += 1
                done = new.beat(g, i, ts)
                if done:
                    if done is not True:
                        records.extend(done)
                    continue
                ev = new.event(i, ts, group)
            else:
                break
            if type(ev) is Rejected:  # the decoders hand over valid events only; keep it safe
                continue
            records.extend(process(ev))
        rest = pending[pi:] if pi else pending
        if ki < n_keys:
            seq = self.seq
            for ts, _, i in keys[ki:]:
                seq += 1
                rest.append((ts, seq, new.item(i)))
            self.seq = seq
            if pi < n_pending:
                rest.sort(key=_order)
        self.pending = rest
        if release_ms > 0:
            records.extend(g.advance_to(release_ms))
        return records

    def _cluster_due(self, cluster: ClusterLog, release_ms: int) -> bool:
        """Whether the cluster log holds an entry after the group's mark, up to `release_ms`."""
        entries = cluster.entries
        i = cluster.start_after(self.mark)
        return i < len(entries) and entries[i][0] <= release_ms

    def _first_run(self, cluster: ClusterLog | None, keys, codec) -> None:
        """A new group takes the partition counts and the broker release of the cluster entries up to its first
        event; coordinator moves before it are not its own."""
        first = self.pending[0][0] if self.pending else None
        if keys and (first is None or keys[0][0] < first):
            first = keys[0][0]
        self.mark = (-1, 0)
        if cluster is None or first is None:
            return
        partitions = self.monitor.partitions
        for ts, seq, item in cluster.entries:
            if ts > first:
                break
            self.mark = (ts, seq)
            ev = codec.event(item, ts, CLUSTER_GROUP)
            if type(ev) is TopicPartitions:
                partitions.update(ev.topics)
            elif type(ev) is BrokerRelease:
                take_release(self.monitor, ev)
            elif type(ev) is GroupConfig:
                on_group_config(self.monitor, ev, [])

    def _cluster_todo(self, cluster: ClusterLog | None, release_ms: int) -> list:
        if cluster is None or not cluster.entries:
            return []
        entries = cluster.entries
        i = cluster.start_after(self.mark)
        j = i
        while j < len(entries) and entries[j][0] <= release_ms:
            j += 1
        return entries[i:j]

    # --- state -----------------------------------------------------------------------------------
    def to_state(self) -> dict:
        """JSON-serialisable (when the items are: the job's are text or columns)."""
        return {"g": self.monitor.to_state(), "p": self.pending, "q": self.seq, "m": self.newest,
                "c": list(self.mark) if self.mark is not None else None,
                "r": list(self.ref) if self.ref is not None else None}

    @classmethod
    def from_state(cls, state: dict, settings: CoreSettings) -> "GroupRunner":
        ref = state.get("r")
        mark = state.get("c")
        # (tuples: those of strings and numbers only, the job's heartbeats and polls, the collector stops tracking)
        pending = [(ts, seq, tuple(item) if type(item) is list else item) for ts, seq, item in state["p"]]
        return cls(GroupMonitor.from_state(state["g"], settings), pending, state["q"],
                   state["m"], tuple(mark) if mark is not None else None,
                   ClockReference(*ref) if ref else None)
