"""The stateful processor's pending items and new rows (spark/processor.py), as the core's runner takes them
(core/runner.py, codec): `JobItems` for the items a group keeps between runs, `NewRows` for a group's new events
of a batch, column-wise. Both apply heartbeats, polls and commits through the monitor's fast paths, without
building the event (`GroupMonitor.process_beat`, `process_commit`).
"""
from __future__ import annotations

import json

import orjson

from ..core.events import event_from_checked_text, event_to_dict
from ..decoding.decoded_rows import PACK_COLUMNS, unpack_events
from ..decoding.event_columns import BEATS, COMMIT, HEARTBEAT, hot_event


def dumps(obj) -> str:
    """Compact JSON text (what orjson cannot serialise goes to `json`)."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    except TypeError:
        return json.dumps(obj, separators=(",", ":"))


class JobItems:
    """The job's pending items (core/runner.py, codec): canonical JSON text, or the columns of a heartbeat /
    poll `(etype, member, num, err, inst, client, host)` or of a commit (the same and its offsets). Every item
    comes from the decode stage's rows (a group's events, or a cluster-wide event), which hold only events it
    accepted: the text is rebuilt as that event, not checked again (core/checked_events.py)."""

    @staticmethod
    def beat(monitor, item, ts: int):
        """The monitor's fast paths (core/runner.py, codec): a heartbeat / poll, or a commit (its records, or True)."""
        if type(item) is str:
            return False
        etype = item[0]
        if etype in BEATS:
            return monitor.process_beat(etype == HEARTBEAT, ts, *item[1:8])
        if etype == COMMIT:
            _, member, num, _err, inst, client, host, offsets = item
            return monitor.process_commit(ts, member, inst, client, host, tuple(tuple(o) for o in offsets),
                                          num) or True
        return False

    @staticmethod
    def event(item, ts: int, group: str):
        if type(item) is str:
            return event_from_checked_text(item)
        return hot_event(item[0], ts, group, *item[1:])

    @staticmethod
    def raw(item, ts: int, group: str) -> str:
        if type(item) is str:
            return item
        return dumps(event_to_dict(JobItems.event(item, ts, group)))


class NewRows:
    """One group's new events of a batch, column-wise (PACK_COLUMNS), with `keys` the (ts, source order,
    index) of each event, sorted (ties in source order: partition, offset)."""

    def __init__(self, packs: list[tuple]):
        cols: list[list] = [[] for _ in PACK_COLUMNS]
        newest, self.appended_ms = None, None  # the Kafka timestamp of the newest event's record
        for ts, appended, packed in packs:
            for col, part in zip(cols, unpack_events(packed)):
                col.extend(part)
            if newest is None or ts > newest:
                newest, self.appended_ms = ts, appended
        (self.ts, self.ord, self.etype, self.member, self.num, self.err, self.inst, self.client, self.host,
         self.payload) = cols
        self.keys = sorted(zip(self.ts, self.ord, range(len(self.ts))))

    def event(self, i: int, ts: int, group: str):
        etype = self.etype[i]
        if etype is None:  # an event the decode stage accepted, as its canonical text
            return event_from_checked_text(self.payload[i])
        return hot_event(etype, ts, group, self.member[i], self.num[i], self.err[i], self.inst[i], self.client[i],
                         self.host[i], self.payload[i])

    def beat(self, g, i: int, ts: int):
        """Apply event i through the monitor's fast paths: a heartbeat / poll (False if it does not apply), or a
        commit (its records, or True)."""
        etype = self.etype[i]
        if etype in BEATS:
            return g.process_beat(etype == HEARTBEAT, ts, self.member[i], self.num[i], self.err[i], self.inst[i],
                                  self.client[i], self.host[i])
        if etype == COMMIT:
            return g.process_commit(ts, self.member[i], self.inst[i], self.client[i], self.host[i],
                                    tuple(tuple(o) for o in self.payload[i]), self.num[i]) or True
        return False

    def item(self, i: int):
        """What a pending entry keeps: the JSON text, or the columns of a heartbeat / poll (and a commit's
        offsets)."""
        etype = self.etype[i]
        if etype is None:
            return self.payload[i]
        if etype in BEATS:  # (a tuple of strings and numbers: the garbage collector stops tracking it)
            return etype, self.member[i], self.num[i], self.err[i], self.inst[i], self.client[i], self.host[i]
        return (etype, self.member[i], self.num[i], self.err[i], self.inst[i], self.client[i], self.host[i],
                self.payload[i])
