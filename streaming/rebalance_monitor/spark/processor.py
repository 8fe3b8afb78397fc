"""The Spark stateful processor: the core's `GroupMonitor` per group key, in event time, woken by
processing-time timers.

It runs under `transformWithState` in processing-time mode (rows in, rows out: a group has a few packed rows per
batch, so Row objects are cheaper than the pandas frames of `transformWithStateInPandas`). In that mode Spark
runs a batch at every trigger even with no input, and fires the timers due by then, so a silent group is woken
with no side channel. Its clock stays event time (core/group_clock.py): Spark's watermark, or its own newest
event less the release delay; it follows the wall clock only once that has stood still for the delay. It talks
to the state store as little as it can: one `get` and one `update` per group and batch, and the group's one
timer is kept in the state value, so it is replaced only when the group needs an earlier wake-up (a timer
earlier than needed is left to fire early, and that wake-up sets the next one), instead of listing, deleting
and registering timers in every batch. A timer firing in a batch that already ran the group's rows costs no
state read.

Per group the state holds the monitor's snapshot, the events not yet released and the clock's reference. An
event is released (applied to the monitor, in timestamp order) once the group's clock reaches it, or once the
group's own events are `release_delay_ms` past it: disorder up to that delay gives the same output as ordered
input, and a backlog is processed in the batch that reads it instead of one batch later. An event older than
what the group already processed is late: it becomes a dead-letter row with reason `late_event`.

Rows in: see `decode_stage` (heartbeats and polls as columns, other events as JSON text).
Rows out: `kind` (a record kind, or `dead_letter`), `group`, `ts`, `payload` (the record as JSON).
The key "" carries cluster-wide rows: a decoded batch's clock row (its highest event time and the records it
read, for the driver's figures), `end_offsets` and `coordinator_change` events (passed through as records),
and the decoder's dead letters (passed through).
"""
from __future__ import annotations

import bisect
import json
import time

from pyspark.sql import Row
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from ..core.events import Rejected, event_to_dict, loads_json, parse_event
from ..core.group import GroupMonitor
from ..core.group_clock import ClockReference, group_now, observe, wake_wall_ms
from ..core.settings import CoreSettings
from ..event_columns import HEARTBEAT, hot_event
from .decode_stage import PACK_COLUMNS, unpack_events

import orjson

OUTPUT_SCHEMA = "kind string, group string, ts long, payload string"
STATE_SCHEMA = "state string"
CLUSTER_KEY = ""
# driver-only record: a decoded batch's highest event time (ts; 0: none), the Kafka timestamp of that
# event's record (append_ms), the number of records it read, and the groups groups.allow/deny left out
CLOCK_KIND = "clock"
UNKNOWN_TIMER = "?"  # the registered timer of a state written before it was kept there


def dumps(obj) -> str:
    """Compact JSON text (what orjson cannot serialise goes to `json`)."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    except TypeError:
        return json.dumps(obj, separators=(",", ":"))


OutputRow = Row("kind", "group", "ts", "payload")


def _out_rows(rows: list[tuple]):
    return [OutputRow(*r) for r in rows]


def _record_rows(records: list[dict]) -> list[tuple]:
    return [(r["kind"], r["group"], int(r.get("ts") or 0), dumps(r)) for r in records]


def _raw_text(item, ts: int, group: str) -> str:
    """A pending item as the canonical JSON text of its event (for dead letters)."""
    if isinstance(item, str):
        return item
    return dumps(event_to_dict(_event(item, ts, group)))


def _event(item, ts: int, group: str):
    """The event of a pending item: JSON text, or the columns of a heartbeat / poll."""
    if isinstance(item, str):
        return parse_event(item)
    return hot_event(item[0], ts, group, *item[1:])


def _entry_order(entry: list) -> tuple:
    return entry[0], entry[1]


class _NewRows:
    """The rows of one handleInputRows call: the unpacked events column-wise (PACK_COLUMNS), `keys` the
    (ts, source order, index) of each event sorted (ties in source order: partition, offset), and `dead`
    the decoder's dead letters as (ts, payload)."""

    def __init__(self, rows):
        cols: list[list] = [[] for _ in PACK_COLUMNS]
        self.dead: list[tuple] = []
        for row in rows:
            kind = row.kind
            if kind == "events":
                for col, part in zip(cols, unpack_events(row.packed)):
                    col.extend(part)
            elif kind == "dead_letter":
                self.dead.append((row.ts, row.payload))
        (self.ts, self.ord, self.etype, self.member, self.num, self.err, self.inst, self.client, self.host,
         self.payload) = cols
        self.keys = list(zip(self.ts, self.ord, range(len(self.ts))))
        self.keys.sort()

    def event(self, i: int, ts: int, group: str):
        etype = self.etype[i]
        if etype is None:
            return parse_event(self.payload[i])
        return hot_event(etype, ts, group, self.member[i], self.num[i], self.err[i], self.inst[i], self.client[i],
                         self.host[i])

    def beat(self, g: GroupMonitor, i: int, ts: int) -> bool:
        """Apply event i through the monitor's heartbeat / poll fast path; False if it does not apply."""
        etype = self.etype[i]
        return etype is not None and g.process_beat(etype == HEARTBEAT, ts, self.member[i], self.num[i],
                                                    self.err[i], self.inst[i], self.client[i], self.host[i])

    def item(self, i: int):
        """What a pending entry keeps: the JSON text, or the columns of a heartbeat / poll."""
        etype = self.etype[i]
        if etype is None:
            return self.payload[i]
        return [etype, self.member[i], self.num[i], self.err[i], self.inst[i], self.client[i], self.host[i]]


def _beat(g: GroupMonitor, item, ts: int) -> bool:
    """A pending item through the fast path (see `_NewRows.beat`)."""
    return not isinstance(item, str) and g.process_beat(item[0] == HEARTBEAT, ts, *item[1:])


def dead_letter_row(group: str, ts: int, reason: str, raw, detail: str = "", origin: dict | None = None) -> tuple:
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", "backslashreplace")
    elif not isinstance(raw, str):
        raw = json.dumps(raw, default=str)
    payload = {"kind": "dead_letter", "group": group, "ts": ts, "reason": reason, "detail": detail, "raw": raw}
    if origin:
        payload.update(origin)
    return ("dead_letter", group, ts, json.dumps(payload, separators=(",", ":")))


class GroupProcessor(StatefulProcessor):
    """`follow_wall`: a group's clock follows the wall clock while the input is idle (core/group_clock.py);
    `started_ms`: the job's start (wall clock; set on the driver when the plan is built), before which no
    idle time counts; `flush_to_ms`: every group's clock is at least there (`MonitorJob.flush`, an explicit
    end of input); `visit_every_batch`: every group with anything pending or due wakes up at every trigger
    (`run --once`, whose last batch must reach every such group); `follow_watermark` False: a group's clock
    moves with its own events only, never with Spark's watermark (`run --once`: a backlog is split into
    batches by record count, not by time, so one topic's batch may run far ahead of another's); `drain` (`run --once`, which reads its input in
    one batch): a group woken by its timer, with no rows, moves to Spark's watermark plus the release delay,
    the highest event time of the input read (replay's end of input), in the batch after the read."""

    def __init__(self, settings: CoreSettings | None = None, emit_status: bool = True,
                 release_delay_ms: int | None = None, *, follow_wall: bool = True, started_ms: int | None = None,
                 flush_to_ms: int | None = None, visit_every_batch: bool = False, follow_watermark: bool = True,
                 drain: bool = False):
        self.settings = settings or CoreSettings()
        self.emit_status = emit_status
        # events of a group this far behind its newest event are released without waiting for the watermark
        self.release_delay_ms = release_delay_ms
        self.follow_wall = follow_wall
        self.started_ms = int(time.time() * 1000) if started_ms is None else started_ms
        self.flush_to_ms = flush_to_ms
        self.visit_every_batch = visit_every_batch
        self.follow_watermark = follow_watermark
        self.drain = drain
        self._batch = None  # (batch time, watermark) of the batch under way
        self._ran: set = set()  # groups whose rows this batch already processed

    def init(self, handle) -> None:
        self.handle = handle
        self.state = handle.getValueState("s", STATE_SCHEMA)
        self._batch = None  # (batch time, watermark) of the batch under way
        self._ran: set = set()  # groups whose rows this batch already processed

    def _ran_in_batch(self, group: str, timer_values) -> bool:
        """Note that `group` runs in this batch; True if it already had."""
        batch = (timer_values.getCurrentProcessingTimeInMs(), timer_values.getCurrentWatermarkInMs())
        if batch != self._batch:
            self._batch = batch
            self._ran = set()
        if group in self._ran:
            return True
        self._ran.add(group)
        return False

    # --- state ------------------------------------------------------------------------------
    def _load(self, group: str):
        """(monitor, pending events sorted by (ts, seq), last seq, newest event time seen, registered timer,
        clock reference)

        The registered timer (processing time) is None for none, or `UNKNOWN_TIMER` for a state written
        before it was kept."""
        value = self.state.get()
        if value is not None:
            snap = loads_json(value[0])
            g = GroupMonitor.from_state(snap["g"], self.settings)
            pending = [list(p) for p in snap["p"]]
            pending.sort(key=_entry_order)  # older snapshots kept a heap, not a sorted list
            ref = snap.get("r")
            return (g, pending, snap["q"], snap.get("m", g.clock_ms), snap.get("t", UNKNOWN_TIMER),
                    ClockReference(*ref) if ref else None)
        return GroupMonitor(group, self.settings), [], 0, 0, None, None

    def _save(self, g: GroupMonitor, pending: list, seq: int, newest: int, timer: int | None,
              ref: ClockReference) -> None:
        self.state.update((dumps({"g": g.to_state(), "p": pending, "q": seq, "m": newest, "t": timer,
                                  "r": list(ref)}),))

    def _drop_timers(self, timer, wall_ms: int) -> None:
        """Delete the group's registered timer (timers at or before this batch's time have fired, or are
        firing, and are gone)."""
        if timer == UNKNOWN_TIMER:
            for t in list(self.handle.listTimers()):
                if t > wall_ms:
                    self.handle.deleteTimer(t)
        elif timer is not None and timer > wall_ms:
            self.handle.deleteTimer(timer)

    def _schedule(self, g: GroupMonitor, pending: list, now: int, timer, ref: ClockReference, wall_ms: int) -> int:
        """Make sure the group wakes up by its next deadline; returns the (processing-time) timer registered.

        The wake-up: the oldest pending event, the monitor's next timer, or the group's idle TTL (so its
        state is dropped), in event time; the timer is when the group's clock gets there if the input stays
        idle (core/group_clock.py). A registered timer that is not later than that is kept: it fires early at
        worst, and the wake-up then sets the next one."""
        want = g.last_event_ms + self.settings.group_idle_ttl_ms + 1
        if pending and pending[0][0] < want:
            want = pending[0][0]
        nxt = g.next_timer_ms()
        if nxt is not None and nxt < want:
            want = nxt
        if self.visit_every_batch:
            at = wall_ms + 1
        else:
            at = wake_wall_ms(ref, max(want, now + 1), wall_ms, self.started_ms, self.release_delay_ms or 0)
        if timer != UNKNOWN_TIMER and timer is not None and wall_ms < timer <= at:
            return timer
        self._drop_timers(timer, wall_ms)
        self.handle.registerTimer(at)
        return at

    def _run(self, group: str, new: "_NewRows | None", watermark: int, wall_ms: int) -> list[tuple]:
        """Apply a group's new rows (if any) and its clock at this batch; returns the output rows."""
        g, pending, seq, newest, timer, ref = self._load(group)
        out: list[tuple] = []
        keys: list = []
        if new is not None and new.keys:
            keys = new.keys
            frontier = g.clock_ms
            if keys[0][0] < frontier:  # late: behind what the group already processed (a sorted prefix)
                k = bisect.bisect_left(keys, (frontier,))
                for ts, _, i in keys[:k]:
                    out.append(dead_letter_row(group, ts, "late_event", _raw_text(new.item(i), ts, group),
                                               f"ts {ts} is behind what the group already processed ({frontier})"))
                keys = keys[k:]
            if keys and keys[-1][0] > newest:
                newest = keys[-1][0]
        base = watermark if self.follow_watermark else 0
        if self.release_delay_ms is not None and newest - self.release_delay_ms > base:
            base = newest - self.release_delay_ms
        ref = observe(ref, base, wall_ms, self.started_ms, self.release_delay_ms or 0, self.follow_wall)
        release = group_now(ref, wall_ms, self.started_ms, self.release_delay_ms or 0, self.follow_wall)
        if self.flush_to_ms is not None and self.flush_to_ms > release:
            release = self.flush_to_ms
        if self.drain and new is None and watermark > 0 and watermark + (self.release_delay_ms or 0) > release:
            release = watermark + (self.release_delay_ms or 0)
        records: list[dict] = []
        process = g.process
        # merge the pending events (sorted, older) with the new ones (sorted), releasing up to `release`
        pi = ki = 0
        n_pending, n_keys = len(pending), len(keys)
        while True:
            if pi < n_pending and (ki >= n_keys or pending[pi][0] <= keys[ki][0]):
                ts, _, item = pending[pi]
                if ts > release:
                    break
                pi += 1
                if _beat(g, item, ts):
                    continue
                ev = _event(item, ts, group)
            elif ki < n_keys:
                ts, _, i = keys[ki]
                if ts > release:
                    break
                ki += 1
                if new.beat(g, i, ts):
                    continue
                ev = new.event(i, ts, group)
            else:
                break
            if type(ev) is Rejected:  # cannot happen for rows the decoder produced; keep it safe
                out.append(dead_letter_row(group, ts, ev.reason, ev.raw, ev.detail))
                continue
            records.extend(process(ev))
        rest = pending[pi:]
        if ki < n_keys:
            for ts, _, i in keys[ki:]:
                seq += 1
                rest.append([ts, seq, new.item(i)])
            if pi < n_pending:
                rest.sort(key=_entry_order)
        pending = rest
        if release > 0:
            records.extend(g.advance_to(release))
        if self.emit_status and g.dirty:
            records.append(g.status(max(release, g.clock_ms)))
        out.extend(_record_rows(records))
        if not pending and g.is_idle(release):
            self.state.clear()
            self._drop_timers(timer, wall_ms)
        else:
            self._save(g, pending, seq, newest, self._schedule(g, pending, release, timer, ref, wall_ms), ref)
        return out

    # --- Spark callbacks --------------------------------------------------------------------
    def handleInputRows(self, key, rows, timerValues):
        group = key[0]
        watermark = timerValues.getCurrentWatermarkInMs()
        if group == CLUSTER_KEY:
            yield from self._cluster(rows)
            return
        self._ran_in_batch(group, timerValues)
        new = _NewRows(rows)
        out = [("dead_letter", group, ts, payload) for ts, payload in new.dead]
        out.extend(self._run(group, new, watermark, timerValues.getCurrentProcessingTimeInMs()))
        if out:
            yield from _out_rows(out)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        group = key[0]
        if group == CLUSTER_KEY:
            return
        if self._ran_in_batch(group, timerValues):
            # Its rows were processed in this batch, up to this watermark, and its next timer set: this one
            # (usually the oldest event then pending, since released) has nothing left to do.
            return
        out = self._run(group, None, timerValues.getCurrentWatermarkInMs(), timerValues.getCurrentProcessingTimeInMs())
        if out:
            yield from _out_rows(out)

    def _cluster(self, rows):
        out = []
        for row in rows:
            kind, ts, order, num, payload, packed = row.kind, row.ts, row.ord, row.num, row.payload, row.packed
            if kind == "tick":
                if order:  # a decoded batch's clock row (a batch of wake-up records only reads none)
                    append = None if num is None or num != num else int(num)
                    clock = {"kind": CLOCK_KIND, "group": "", "ts": int(ts), "append_ms": append, "records": order}
                    if payload:  # the groups that groups.allow/deny left out, topic ids left as ids
                        note = orjson.loads(payload)
                        if isinstance(note, dict):
                            clock["unresolved_topic_ids"] = note.get("unresolved_topic_ids") or {}
                            note = note.get("left_out") or []
                        if note:
                            clock["left_out"] = note
                    out.append((CLOCK_KIND, CLUSTER_KEY, int(ts), dumps(clock)))
            elif kind == "dead_letter":
                out.append(("dead_letter", CLUSTER_KEY, int(ts), payload))
            elif kind == "events":
                # cluster-wide events travel as JSON text (a heartbeat or poll without a group says nothing)
                for text in unpack_events(packed)[PACK_COLUMNS.index("payload")]:
                    if text is not None:
                        out.extend(self._cluster_event(text))
        if out:
            yield from _out_rows(out)

    def _cluster_event(self, text: str) -> list[tuple]:
        ev = parse_event(text)
        if isinstance(ev, Rejected):
            return [dead_letter_row(CLUSTER_KEY, 0, ev.reason, text, ev.detail)]
        if ev.type == "end_offsets":
            rec = {"kind": "end_offsets", "group": "", "ts": ev.ts, "offsets": [list(o) for o in ev.offsets]}
        elif ev.type == "coordinator_change":
            rec = {"kind": "coordinator", "group": "", "ts": ev.ts, "partition": ev.partition,
                   "broker": ev.broker, "action": ev.action}
        elif ev.type == "topic_partitions":
            rec = {"kind": "topic_partitions", "group": "", "ts": ev.ts, "topics": dict(ev.topics)}
        else:
            return []
        return _record_rows([rec])

    def close(self) -> None:
        pass
