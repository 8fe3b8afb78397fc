"""The Spark stateful processor: the core's `GroupMonitor` per group key, on Spark's event-time watermark.

Per group the state holds the monitor's snapshot and the events not yet released. An event is released
(applied to the monitor) once the watermark reaches its timestamp, so disorder up to the watermark delay
gives the same output as ordered input. An event older than what the group already processed is late: it
becomes a dead-letter row with reason `late_event`. Event-time timers wake the group when its next deadline
(session, poll, settle, storm end, or pending release) is passed, even if the group itself sends nothing.

Rows out: `kind` (a record kind, or `dead_letter`), `group`, `ts`, `payload` (the record as JSON).
The key "" carries cluster-wide rows: clock ticks (ignored), `end_offsets` and `coordinator_change`
events (passed through as records), and the decoder's dead letters (passed through).
"""
from __future__ import annotations

import heapq
import json

import pandas as pd
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from ..core.events import Rejected, parse_event
from ..core.group import GroupMonitor
from ..core.settings import CoreSettings

OUTPUT_SCHEMA = "kind string, group string, ts long, payload string"
STATE_SCHEMA = "state string"
CLUSTER_KEY = ""


def _frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["kind", "group", "ts", "payload"])


def _record_rows(records: list[dict]) -> list[tuple]:
    return [(r["kind"], r["group"], int(r.get("ts") or 0), json.dumps(r, separators=(",", ":")))
            for r in records]


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
    def __init__(self, settings: CoreSettings | None = None, emit_status: bool = True):
        self.settings = settings or CoreSettings()
        self.emit_status = emit_status

    def init(self, handle) -> None:
        self.handle = handle
        self.state = handle.getValueState("s", STATE_SCHEMA)

    # --- state ------------------------------------------------------------------------------
    def _load(self, group: str):
        if self.state.exists():
            snap = json.loads(self.state.get()[0])
            return GroupMonitor.from_state(snap["g"], self.settings), snap["p"], snap["q"]
        return GroupMonitor(group, self.settings), [], 0

    def _save(self, g: GroupMonitor, pending: list, seq: int) -> None:
        self.state.update((json.dumps({"g": g.to_state(), "p": pending, "q": seq}, separators=(",", ":")),))

    def _schedule(self, g: GroupMonitor, pending: list, watermark: int) -> None:
        for t in list(self.handle.listTimers()):
            if t > watermark:  # timers at or below it have fired (or are firing) and are gone
                self.handle.deleteTimer(t)
        cands = [pending[0][0]] if pending else []
        nxt = g.next_timer_ms()
        if nxt is not None:
            cands.append(nxt)
        # and a wake-up when the group has been idle for its TTL, so its state is dropped
        cands.append(g.last_event_ms + self.settings.group_idle_ttl_ms + 1)
        if cands:
            # Spark fires a timer once the watermark passes it; never register one already behind.
            self.handle.registerTimer(max(min(cands), watermark + 1))

    def _run(self, group: str, new_rows: list[tuple], watermark: int) -> list[tuple]:
        g, pending, seq = self._load(group)
        out: list[tuple] = []
        frontier = g.clock_ms
        for ts, payload in new_rows:
            if ts < frontier:
                out.append(dead_letter_row(group, ts, "late_event", payload,
                                           f"ts {ts} is behind what the group already processed ({frontier})"))
                continue
            seq += 1
            heapq.heappush(pending, [ts, seq, payload])
        records: list[dict] = []
        while pending and pending[0][0] <= watermark:
            ts, _, payload = heapq.heappop(pending)
            ev = parse_event(payload)
            if isinstance(ev, Rejected):  # cannot happen for rows the decoder produced; keep it safe
                out.append(dead_letter_row(group, ts, ev.reason, payload, ev.detail))
                continue
            records.extend(g.process(ev))
        if watermark > 0:
            records.extend(g.advance_to(watermark))
        if self.emit_status and g.dirty:
            records.append(g.status(max(watermark, g.clock_ms)))
        out.extend(_record_rows(records))
        if not pending and g.is_idle(watermark):
            self.state.clear()
            for t in list(self.handle.listTimers()):
                if t > watermark:
                    self.handle.deleteTimer(t)
        else:
            self._save(g, pending, seq)
            self._schedule(g, pending, watermark)
        return out

    # --- Spark callbacks --------------------------------------------------------------------
    def handleInputRows(self, key, rows, timerValues):
        group = key[0]
        watermark = timerValues.getCurrentWatermarkInMs()
        if group == CLUSTER_KEY:
            yield from self._cluster(rows)
            return
        new_rows = []
        out = []
        for pdf in rows:
            for kind, ts, order, payload in zip(pdf["kind"], pdf["ts"], pdf["ord"], pdf["payload"]):
                if kind == "event":
                    new_rows.append((int(ts), int(order), payload))
                elif kind == "dead_letter":
                    out.append(("dead_letter", group, int(ts), payload))
        new_rows.sort()  # by time, ties in source order (partition, offset)
        out.extend(self._run(group, [(ts, payload) for ts, _, payload in new_rows], watermark))
        if out:
            yield _frame(out)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        group = key[0]
        if group == CLUSTER_KEY:
            return
        out = self._run(group, [], timerValues.getCurrentWatermarkInMs())
        if out:
            yield _frame(out)

    def _cluster(self, rows):
        out = []
        for pdf in rows:
            for kind, ts, payload in zip(pdf["kind"], pdf["ts"], pdf["payload"]):
                if kind == "dead_letter":
                    out.append(("dead_letter", CLUSTER_KEY, int(ts), payload))
                elif kind == "event":
                    ev = parse_event(payload)
                    if ev.type == "end_offsets":
                        rec = {"kind": "end_offsets", "group": "", "ts": ev.ts,
                               "offsets": [list(o) for o in ev.offsets]}
                    elif ev.type == "coordinator_change":
                        rec = {"kind": "coordinator", "group": "", "ts": ev.ts, "partition": ev.partition,
                               "broker": ev.broker, "action": ev.action}
                    elif ev.type == "topic_partitions":
                        rec = {"kind": "topic_partitions", "group": "", "ts": ev.ts, "topics": dict(ev.topics)}
                    else:
                        continue
                    out.extend(_record_rows([rec]))
        if out:
            yield _frame(out)

    def close(self) -> None:
        pass
