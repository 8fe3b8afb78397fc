"""GroupProcessor's release rule, driven directly (its Spark handle replaced by a small in-memory one).

The end-to-end equality with `replay` is tested through a real Spark job in tests/spark_job; here the
per-group rule is pinned down: a backlog is processed in the batch that reads it, the newest
`release_delay_ms` wait for more events or the watermark, disorder within that delay is absorbed, and an
event behind what the group processed is dead-lettered as late.
"""
from __future__ import annotations

import json

import pyarrow as pa

from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.settings import CoreSettings
from rebalance_monitor.spark.decode_stage import PACK_COLUMNS, make_decoder, unpack_events
from rebalance_monitor.spark.processor import GroupProcessor


class _State:
    def __init__(self):
        self.value = None

    def exists(self):
        return self.value is not None

    def get(self):
        return self.value

    def update(self, value):
        self.value = value

    def clear(self):
        self.value = None


class _Handle:
    def __init__(self):
        self.timers: set[int] = set()

    def listTimers(self):
        return iter(sorted(self.timers))

    def registerTimer(self, t):
        self.timers.add(t)

    def deleteTimer(self, t):
        self.timers.discard(t)


class _Time:
    def __init__(self, watermark):
        self.watermark = watermark

    def getCurrentWatermarkInMs(self):
        return self.watermark


def _events(t0=1_700_000_000_000, seconds=30):
    evs = []
    for m in ("a", "b"):
        evs.append({"v": 1, "type": "join", "ts": t0, "group": "g", "member_id": m, "protocols": ["range"],
                    "topics": ["t"], "session_timeout_ms": 10_000, "rebalance_timeout_ms": 30_000})
    for i, m in enumerate(("a", "b")):
        evs.append({"v": 1, "type": "sync", "ts": t0 + 100, "group": "g", "member_id": m, "generation": 1,
                    "protocol": "range", "leader": "a", "assignment": [["t", i]]})
    for s in range(1, seconds):
        for m in ("a", "b"):
            evs.append({"v": 1, "type": "heartbeat", "ts": t0 + s * 1000 + (m == "b") * 7, "group": "g",
                        "member_id": m, "generation": 1, "error": None})
            evs.append({"v": 1, "type": "poll", "ts": t0 + s * 1000 + 500, "group": "g", "member_id": m,
                        "records": s})
    return evs


def _rows(evs, first_offset=0):
    """The decode stage's rows for these events, as pandas (what transformWithStateInPandas hands over)."""
    values = [json.dumps(e).encode() for e in evs]
    n = len(values)
    batch = pa.RecordBatch.from_pydict({
        "topic": ["ev"] * n, "partition": pa.array([0] * n, pa.int32()),
        "offset": list(range(first_offset, first_offset + n)),
        "timestamp": pa.array([None] * n, pa.timestamp("us", tz="UTC")),
        "key": pa.array([None] * n, pa.binary()), "value": pa.array(values, pa.binary())})
    out = list(make_decoder({"ev": "events"}, 1 << 20, 10 ** 12)(iter([batch])))[0].to_pandas()
    return out[out["kind"] != "tick"].reset_index(drop=True)


def _processor(delay=2000):
    p = GroupProcessor(CoreSettings(), emit_status=False, release_delay_ms=delay)
    p.handle = _Handle()
    p.state = _State()
    return p


def _run(p, evs, watermark=0, first_offset=0):
    out = []
    for frame in p.handleInputRows(("g",), iter([_rows(evs, first_offset)]), _Time(watermark)):
        out.extend(frame.itertuples(index=False))
    return out


def _records(rows):
    return [json.loads(r.payload) for r in rows if r.kind != "dead_letter"]


def _replay(evs, delay=2000, finish=False):
    rec = Reconstructor(CoreSettings(), max_disorder_ms=delay)
    out = []
    for e in evs:
        out.extend(rec.feed(parse_event(json.dumps(e))))
    if finish:
        out.extend(rec.finish())
    return out


def test_a_backlog_is_processed_in_the_batch_that_reads_it():
    evs = _events()
    p = _processor()
    recs = _records(_run(p, evs, watermark=0))  # no watermark yet: only the group's own events release
    gens = [r for r in recs if r["kind"] == "generation"]
    assert [g["generation"] for g in gens] == [1]
    # what replay outputs while reading the same events (before its end of input)
    assert [r for r in recs if r["kind"] != "group_status"] == [r for r in _replay(evs) if r["kind"] != "group_status"]
    # the newest 2 s are held back, in timestamp order, until more time passes
    snap = json.loads(p.state.value[0])
    newest = max(e["ts"] for e in evs)
    assert snap["p"] and all(newest - 2000 < entry[0] <= newest for entry in snap["p"])
    assert [e[0] for e in snap["p"]] == sorted(e[0] for e in snap["p"])
    assert p.handle.timers == {snap["p"][0][0]}


def test_disorder_within_the_delay_gives_the_ordered_output_and_later_is_dead_lettered():
    evs = _events()
    ordered = _records(_run(_processor(), evs)) + _records(_run(_processor(), [], watermark=evs[-1]["ts"]))
    shuffled = list(evs)
    # swap neighbours less than the delay apart
    for i in range(10, len(shuffled) - 1, 5):
        shuffled[i], shuffled[i + 1] = shuffled[i + 1], shuffled[i]
    p = _processor()
    split = len(shuffled) // 2
    got = _records(_run(p, shuffled[:split])) + _records(_run(p, shuffled[split:], first_offset=split))
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, _records(_run(_processor(), evs))))
    assert ordered  # (the ordered run produced records at all)
    # an event well behind what the group already processed is late: one dead letter, nothing else
    late = dict(evs[10])
    late["ts"] = evs[0]["ts"] + 50
    rows = _run(p, [late], first_offset=len(evs))
    assert [r.kind for r in rows] == ["dead_letter"]
    dl = json.loads(rows[0].payload)
    assert dl["reason"] == "late_event" and json.loads(dl["raw"])["ts"] == late["ts"]


def test_without_a_release_delay_only_the_watermark_releases():
    evs = _events()
    p = _processor(delay=None)
    assert _records(_run(p, evs, watermark=0)) == []
    recs = _records(list(_run(p, [], watermark=evs[-1]["ts"])))
    assert any(r["kind"] == "generation" for r in recs)


def test_heartbeats_travel_as_columns_and_become_the_parsers_events():
    evs = _events(seconds=3)
    rows = _rows(evs)
    assert list(rows["kind"]) == ["events"]
    cols = dict(zip(PACK_COLUMNS, unpack_events(rows["packed"].iloc[0])))
    assert sum(e is not None for e in cols["etype"]) == 8  # 2 heartbeats + 2 polls per second, seconds 1..2
    assert all(p is None for e, p in zip(cols["etype"], cols["payload"]) if e is not None)
    p = _processor()
    got = [json.loads(r.payload) for r in _run(p, evs, watermark=evs[-1]["ts"])]
    assert [r for r in got if r["kind"] != "group_status"] == \
        [r for r in _replay(evs, finish=True) if r["kind"] != "group_status"]
