"""The job's fast path for heartbeats and polls gives exactly what the full parser gives.

The decode room's fast path (decoding/event_columns.py) against its reference (decoding/reference.py, and the
core's parse_event). The decode stage carries valid heartbeats and polls as columns (event_columns.hot_fields) and
the processor rebuilds them (hot_event); anything else takes parse_event. These tests hold the fast path to the parser:
same event whenever the fast path accepts, and acceptance of the forms real clients send.
"""
from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.decoding.reference import decode_record
from rebalance_monitor.decoding.event_columns import hot_event, hot_fields
from rebalance_monitor.decoding.decoded_rows import PACK_COLUMNS, unpack_events
from rebalance_monitor.decoding.row_batches import make_decoder

NOW = 1_700_000_100_000
FUTURE = 3_600_000
MAX = 1 << 20


def _roundtrip(value: bytes):
    hot = hot_fields(value, MAX, NOW, FUTURE)
    ev = parse_event(value, max_bytes=MAX, now_ms=NOW, max_future_ms=FUTURE)
    return hot, ev


def _rebuilt(hot):
    etype, ts, group, member, num, err, inst, client, host, offsets = hot
    # (the decode stage packs the columns as JSON: a commit's offsets arrive as the lists they were)
    return hot_event(etype, ts, group, member, num, err, inst, client, host, json.loads(json.dumps(offsets)))


COMMON_FORMS = [
    # the benchmark / documentation form
    {"v": 1, "type": "heartbeat", "ts": 1_700_000_000_000, "group": "g", "member_id": "m", "generation": 3,
     "error": None},
    {"v": 1, "type": "poll", "ts": 1_700_000_000_000, "group": "g", "member_id": "m", "records": 50},
    {"v": 1, "type": "poll", "ts": 1_700_000_000_000, "group": "g", "member_id": "m"},
    # what rebalance_monitor.instrument sends: identity fields on every event, some null
    {"v": 1, "type": "heartbeat", "ts": 1_700_000_000_000, "group": "g", "member_id": "consumer-1-abc",
     "group_instance_id": None, "client_id": "consumer-1", "host": "/127.0.0.1", "generation": 0,
     "error": "REBALANCE_IN_PROGRESS"},
    {"v": 1, "type": "poll", "ts": 1_700_000_000_000, "group": "g", "member_id": "", "group_instance_id": "i-1",
     "client_id": None, "host": "h", "records": 0},
    # commits: the benchmark form, and what the instrumentation sends (identity fields, the generation)
    {"v": 1, "type": "commit", "ts": 1_700_000_000_000, "group": "g", "member_id": "m",
     "offsets": [["orders", 0, 17], ["orders", 3, 0]]},
    {"v": 1, "type": "commit", "ts": 1_700_000_000_000, "group": "g", "member_id": "consumer-1-abc",
     "group_instance_id": None, "client_id": "consumer-1", "host": "/127.0.0.1", "offsets": [], "generation": 4},
]


def test_the_forms_clients_send_take_the_fast_path_and_equal_the_parser():
    for obj in COMMON_FORMS:
        hot, ev = _roundtrip(json.dumps(obj).encode())
        assert hot is not None, obj
        assert _rebuilt(hot) == ev


def test_anything_doubtful_goes_to_the_parser():
    base = dict(COMMON_FORMS[0])
    doubtful = [
        {**base, "v": 2}, {**base, "v": True}, {**base, "ts": -1}, {**base, "ts": 1.5}, {**base, "ts": NOW + FUTURE + 1},
        {**base, "generation": True}, {**base, "generation": 2 ** 60}, {**base, "error": 3}, {**base, "group": None},
        {**base, "extra": 1}, {k: v for k, v in base.items() if k != "error"}, {**base, "host": 5},
        {**base, "type": "join"},
    ]
    commit = dict(COMMON_FORMS[5])
    doubtful += [
        {**commit, "offsets": None}, {**commit, "offsets": [["t", -1, 3]]}, {**commit, "offsets": [["t", 1]]},
        {**commit, "offsets": [["t", 1, 2, 3]]}, {**commit, "offsets": [[1, 1, 2]]},
        {**commit, "offsets": [["t", True, 2]]}, {**commit, "offsets": [["t", 1, 2.0]]},
        {**commit, "offsets": [["t", 1, 2 ** 60]]}, {**commit, "offsets": {"t": 1}},
        {**commit, "generation": "4"}, {**commit, "member_id": None},
        {k: v for k, v in commit.items() if k != "offsets"}, {k: v for k, v in commit.items() if k != "member_id"},
    ]
    for obj in doubtful:
        hot, ev = _roundtrip(json.dumps(obj).encode())
        assert hot is None, obj
    assert hot_fields(b"not json", MAX, NOW, FUTURE) is None
    # JSON that is not an object, or an object without one of the required keys
    for other in (b"[]", b"null", b"3", b'"heartbeat"', b'[{"type": "heartbeat"}]', b'{"type": "heartbeat"}',
                  json.dumps({k: v for k, v in base.items() if k != "member_id"}).encode()):
        assert hot_fields(other, MAX, NOW, FUTURE) is None, other
    assert hot_fields(json.dumps(base).encode(), 10, NOW, FUTURE) is None  # too large: the parser says so
    assert isinstance(parse_event(json.dumps(base).encode(), max_bytes=10), Rejected)


_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2 ** 64), max_value=2 ** 64),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5))
_keys = st.sampled_from(["v", "type", "ts", "group", "member_id", "generation", "error", "records",
                         "group_instance_id", "client_id", "host", "offsets", "other"])
_offset_items = st.lists(st.one_of(_scalars, st.lists(_scalars, max_size=4),
                                   st.tuples(st.text(max_size=3), st.integers(-3, 2 ** 54), st.integers(-3, 2 ** 54))
                                   .map(list)), max_size=3)


@settings(max_examples=600, deadline=None)
@given(base=st.sampled_from(COMMON_FORMS), changes=st.dictionaries(_keys, _scalars, max_size=3),
       drop=st.lists(_keys, max_size=2), offsets=st.one_of(st.none(), _offset_items))
def test_fast_path_never_disagrees_with_the_parser(base, changes, drop, offsets):
    obj = {**base, **changes}
    if offsets is not None and base["type"] == "commit":
        obj["offsets"] = offsets
    for k in drop:
        obj.pop(k, None)
    hot, ev = _roundtrip(json.dumps(obj).encode())
    if hot is not None:
        assert not isinstance(ev, Rejected), (obj, ev)
        assert _rebuilt(hot) == ev


def test_decode_stage_rows_match_decode_record():
    """Every input row of the Arrow decode stage becomes the parser's events and rejects, origin kept."""
    values = [json.dumps(o).encode() for o in COMMON_FORMS] + [
        b"garbage", b"[1,2]", json.dumps({"v": 1, "type": "join", "ts": 5, "group": "g", "member_id": "m",
                                          "protocols": ["range"], "topics": ["t"]}).encode(),
        json.dumps({"v": 1, "type": "heartbeat", "ts": 5, "group": "g"}).encode(), None] + [
        # the broker plugin's: the client's time two hours ahead of the push's arrival (the arrival is its time),
        # and at its arrival (kept); neither takes the fast path
        json.dumps({"v": 1, "type": etype, "ts": ts, "group": "g", "member_id": "m", "reason": None,
                    "source": "kip714", "received_ms": NOW - 5000}).encode()
        for etype, ts in (("client_metrics", NOW + 7_200_000), ("leave", NOW + 7_200_000), ("client_metrics", NOW))]
    n = len(values)
    batch = pa.RecordBatch.from_pydict({
        "topic": ["ev"] * n, "partition": pa.array([1] * n, pa.int32()), "offset": list(range(n)),
        "timestamp": pa.array([NOW * 1000] * n, pa.timestamp("us", tz="UTC")),
        "key": pa.array([None] * n, pa.binary()), "value": pa.array(values, pa.binary())})
    out = list(make_decoder({"ev": "events"}, MAX, FUTURE)(iter([batch])))[0].to_pylist()
    packs = [r for r in out if r["kind"] == "events"]
    assert [p["group"] for p in packs] == ["g"]  # one row per group, its events packed
    events = [dict(zip(PACK_COLUMNS, row)) for p in packs for row in zip(*unpack_events(p["packed"]))]
    assert packs[0]["num"] == NOW  # the Kafka timestamp of the record of the group's newest event
    dead = [r for r in out if r["kind"] == "dead_letter"]
    ticks = [r for r in out if r["kind"] == "tick"]
    expected_events, expected_rejects = [], []
    for v in values:
        evs, rejs = decode_record("events", v, None, NOW, max_bytes=MAX, now_ms=None, max_future_ms=FUTURE)
        expected_events += evs
        expected_rejects += rejs
    assert len(events) == len(expected_events) and len(dead) == len(expected_rejects)
    assert sorted(json.loads(d["payload"])["reason"] for d in dead) == sorted(r.reason for r in expected_rejects)
    k = len(COMMON_FORMS)  # then garbage, a list, a join, a heartbeat without its fields, no value
    assert [json.loads(d["payload"])["offset"] for d in dead] == [k, k + 1, k + 3, k + 4]
    rebuilt = []
    for r in events:
        if r["etype"] is not None:
            rebuilt.append(hot_event(r["etype"], r["ts"], "g", r["member"], r["num"], r["err"], r["inst"],
                                     r["client"], r["host"], r["payload"]))
        else:
            rebuilt.append(parse_event(r["payload"]))  # as the processor parses them: without the skew
    assert rebuilt == expected_events
    assert [e.ts for e in expected_events[-3:]] == [NOW - 5000, NOW - 5000, NOW]
    assert sum(r["etype"] is not None for r in events) == len(COMMON_FORMS)
    assert [r["ord"] for r in events] == [(1 << 40) | o for o in [*range(k), k + 2, n - 3, n - 2, n - 1]]
    assert len(ticks) == 1 and ticks[0]["ts"] == max(e.ts for e in expected_events)
    assert ticks[0]["num"] == NOW and ticks[0]["et"] is not None and ticks[0]["ord"] == n  # records read
    assert all(r["et"] is None for r in packs + dead)
