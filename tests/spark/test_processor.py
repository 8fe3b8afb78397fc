"""GroupProcessor's release rule, driven directly (its Spark handle replaced by a small in-memory one).

The end-to-end equality with `replay` is tested through a real Spark job in tests/spark_job; here the
per-group rule is pinned down: a backlog is processed in the batch that reads it, the newest
`release_delay_ms` wait for more events or the watermark, disorder within that delay is absorbed, and an
event behind what the group processed is dead-lettered as late.
"""
from __future__ import annotations

import json

import pytest
import pyarrow as pa
from pyspark.sql import Row

from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.settings import CoreSettings
from rebalance_monitor.decoding.decoded_rows import CLUSTER_SHARD, PACK_COLUMNS, shard_of, unpack_events
from rebalance_monitor.decoding.row_batches import make_decoder

from helpers.processor_handle import MemoryHandle, TimerValues, decoded_rows, new_processor


SHARD = shard_of("g", 50)


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


def _run(p, evs, watermark=0, first_offset=0, batch_ms=None):
    return list(p.handleInputRows((SHARD,), iter(decoded_rows(evs, first_offset)), TimerValues(watermark, batch_ms)))


def _group_snap(p, group="g"):
    """The runner snapshot of `group` in the processor's state (core/runner.GroupRunner.to_state)."""
    value = p.handle.maps["groups"].values.get((group,))
    return json.loads(value[0]) if value is not None else None


def _shard_snap(p):
    value = p.handle.values["shard"].value
    return json.loads(value[0]) if value is not None else None


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
    p = new_processor()
    recs = _records(_run(p, evs, watermark=0))  # no watermark yet: only the group's own events release
    gens = [r for r in recs if r["kind"] == "generation"]
    assert [g["generation"] for g in gens] == [1]
    # what replay outputs while reading the same events (before its end of input)
    assert [r for r in recs if r["kind"] != "group_status"] == [r for r in _replay(evs) if r["kind"] != "group_status"]
    # the newest 2 s are held back, in timestamp order, until more time passes
    snap = _group_snap(p)
    newest = max(e["ts"] for e in evs)
    assert snap["p"] and all(newest - 2000 < entry[0] <= newest for entry in snap["p"])
    assert [e[0] for e in snap["p"]] == sorted(e[0] for e in snap["p"])
    # the shard's one timer (processing time; the batch ran at 0 here): when a watermark moving with the wall
    # clock reaches the group's oldest pending event (core/group_clock.py)
    shard = _shard_snap(p)
    assert p.handle.timers == {snap["p"][0][0] - (newest - 2000)} == {shard["t"]} == {shard["w"]["g"]}


def test_disorder_within_the_delay_gives_the_ordered_output_and_later_is_dead_lettered():
    evs = _events()
    ordered = _records(_run(new_processor(), evs)) + _records(_run(new_processor(), [], watermark=evs[-1]["ts"]))
    shuffled = list(evs)
    # swap neighbours less than the delay apart
    for i in range(10, len(shuffled) - 1, 5):
        shuffled[i], shuffled[i + 1] = shuffled[i + 1], shuffled[i]
    p = new_processor()
    split = len(shuffled) // 2
    got = _records(_run(p, shuffled[:split])) + _records(_run(p, shuffled[split:], first_offset=split))
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, _records(_run(new_processor(), evs))))
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
    p = new_processor(delay=None)
    assert _records(_run(p, evs, watermark=0)) == []
    recs = _records(list(_run(p, [], watermark=evs[-1]["ts"])))
    assert any(r["kind"] == "generation" for r in recs)


def test_heartbeats_travel_as_columns_and_become_the_parsers_events():
    evs = _events(seconds=3)
    rows = decoded_rows(evs)
    assert [r.kind for r in rows] == ["events"]
    cols = dict(zip(PACK_COLUMNS, unpack_events(rows[0].packed)))
    assert sum(e is not None for e in cols["etype"]) == 8  # 2 heartbeats + 2 polls per second, seconds 1..2
    assert all(p is None for e, p in zip(cols["etype"], cols["payload"]) if e is not None)
    p = new_processor()
    got = [json.loads(r.payload) for r in _run(p, evs, watermark=evs[-1]["ts"])]
    assert [r for r in got if r["kind"] != "group_status"] == \
        [r for r in _replay(evs, finish=True) if r["kind"] != "group_status"]


def _fire(p, watermark, batch_ms=None):
    """What Spark does at the end of a batch: every timer at or below the batch time fires (and is deleted)."""
    out = []
    now = watermark if batch_ms is None else batch_ms
    for t in sorted(p.handle.timers):
        if t <= now:
            p.handle.timers.discard(t)
            out.extend(p.handleExpiredTimer((SHARD,), TimerValues(watermark, batch_ms), None))
    return out


class _CountingHandle(MemoryHandle):
    def __init__(self):
        super().__init__()
        self.registered = 0
        self.listed = 0

    def registerTimer(self, t):
        self.registered += 1
        super().registerTimer(t)

    def listTimers(self):
        self.listed += 1
        return super().listTimers()


def test_the_groups_one_timer_is_kept_in_state_replaced_only_when_an_earlier_wake_up_is_needed():
    evs = _events(seconds=120)  # heartbeats for 2 minutes, then silence: 10 s sessions
    p = new_processor(handle=_CountingHandle())
    per_batch = 5000
    t0, end = evs[0]["ts"], evs[-1]["ts"]
    recs = []
    batches = 0
    for start in range(t0, end + 60_000, per_batch):
        chunk = [e for e in evs if start <= e["ts"] < start + per_batch]
        watermark = start - 2000
        recs.extend(_records(_run(p, chunk, watermark=watermark, first_offset=evs.index(chunk[0]) if chunk else 0)))
        recs.extend(_records(_fire(p, watermark)))
        batches += 1
        snap, shard = _group_snap(p), _shard_snap(p)
        if snap is not None:
            # one timer, the one the shard's state names, never later than the group's next wake-up
            assert p.handle.timers == {shard["t"]}
            g = GroupMonitor.from_state(snap["g"], CoreSettings())
            ttl = g.last_event_ms + CoreSettings().group_idle_ttl_ms + 1
            wake = min(x for x in (g.next_timer_ms(), snap["p"][0][0] if snap["p"] else None, ttl) if x is not None)
            assert shard["t"] <= max(wake, watermark + 1)
    timeouts = [r for r in recs if r["kind"] == "member_timeout"]
    assert sorted(r["member_id"] for r in timeouts) == ["a", "b"]
    assert all(r["deadline_ms"] <= r["detected_ms"] <= r["deadline_ms"] + per_batch + 2000 for r in timeouts)
    # state-store round trips: at most one timer registration per batch, no listing, and a timer that
    # fires in a batch that already processed the group's rows does not load its state again
    assert p.handle.registered <= batches
    assert p.handle.listed == 0
    assert p.handle.maps["groups"].gets <= batches + 3


@pytest.mark.parametrize("warn_pct,share", [(0, 0.6), (50, 1.0)])
def test_a_timer_not_later_than_needed_is_kept_not_replaced(warn_pct, share):
    # nothing pending between batches (the watermark passes each batch's events): the group's wake-up is
    # its members' next session deadline (or, with early warnings, their next warning point: half of it), which
    # moves later with every heartbeat; the registered one stays until it fires (early), instead of being
    # replaced in every batch. With 10 s sessions and 5 s batches a warning point 5 s ahead passes in every
    # batch: one registration a batch at most, never more
    evs = _events(seconds=120)
    p = new_processor(delay=None, handle=_CountingHandle(), settings=CoreSettings(early_warning_pct=warn_pct))
    batches = 0
    for start in range(evs[0]["ts"], evs[-1]["ts"] + 1, 5000):
        chunk = [e for e in evs if start <= e["ts"] < start + 5000]
        _run(p, chunk, watermark=start + 4999, first_offset=evs.index(chunk[0]))
        _fire(p, start + 4999)
        batches += 1
        assert len(p.handle.timers) == 1
    assert p.handle.registered <= share * batches, (p.handle.registered, batches)


def test_the_decode_stage_leaves_out_the_groups_allow_and_deny_exclude_and_names_them():
    """groups.allow/deny apply before the shuffle: no row (so no state) for a group left out, its name in
    the batch's clock row, bad records of any group still dead-lettered, and the processor's clock record
    carrying the names to the driver."""
    evs = _events(seconds=2)
    other = [dict(e, group="scratch-1") for e in evs] + [dict(e, group="orders-test") for e in evs[:3]]
    values = [json.dumps(e).encode() for e in evs + other] + [b'{"v": 1, "group": "scratch-1"}']
    n = len(values)
    batch = pa.RecordBatch.from_pydict({
        "topic": ["ev"] * n, "partition": pa.array([0] * n, pa.int32()), "offset": list(range(n)),
        "timestamp": pa.array([None] * n, pa.timestamp("us", tz="UTC")),
        "key": pa.array([None] * n, pa.binary()), "value": pa.array(values, pa.binary())})
    groups = {"allow": "g|orders-.*", "deny": ".*-test"}
    out = list(make_decoder({"ev": "events"}, 1 << 20, 10 ** 12, groups=groups)(iter([batch])))[0].to_pylist()
    assert {r["group"] for r in out if r["kind"] == "events"} == {"g"}
    assert [r["kind"] for r in out if r["kind"] == "dead_letter"] == ["dead_letter"]  # bad input is kept
    tick = [r for r in out if r["kind"] == "tick"]
    assert len(tick) == 1 and sorted(json.loads(tick[0]["payload"])) == ["orders-test", "scratch-1"]
    assert tick[0]["ord"] == n  # every record read is counted, left out or not
    p = new_processor()
    clock = [json.loads(r.payload) for r in p.handleInputRows((CLUSTER_SHARD,), iter([Row(**tick[0])]), TimerValues(0))]
    assert sorted(clock[0]["left_out"]) == ["orders-test", "scratch-1"]
    # with no filter nothing is left out and the clock row says nothing
    plain = list(make_decoder({"ev": "events"}, 1 << 20, 10 ** 12)(iter([batch])))[0].to_pylist()
    assert {r["group"] for r in plain if r["kind"] == "events"} == {"g", "scratch-1", "orders-test"}
    assert [r["payload"] for r in plain if r["kind"] == "tick"] == [""]


def _twin_groups(n=2):
    """Group names that live on the same __consumer_offsets partition as "g" (one shard)."""
    names, i = [], 0
    while len(names) < n:
        i += 1
        if shard_of(f"orders-{i}", 50) == SHARD:
            names.append(f"orders-{i}")
    return names


def _decoded(values):
    n = len(values)
    batch = pa.RecordBatch.from_pydict({
        "topic": ["ev"] * n, "partition": pa.array([0] * n, pa.int32()), "offset": list(range(n)),
        "timestamp": pa.array([None] * n, pa.timestamp("us", tz="UTC")),
        "key": pa.array([None] * n, pa.binary()), "value": pa.array([json.dumps(v).encode() for v in values])})
    return list(make_decoder({"ev": "events"}, 1 << 20, 10 ** 12)(iter([batch])))[0].to_pylist()


def test_the_decode_stage_routes_cluster_wide_events_to_the_shards_they_concern():
    t0 = 1_700_000_000_000
    values = [
        {"v": 1, "type": "topic_partitions", "ts": t0, "group": "", "topics": {"t": 6}},
        {"v": 1, "type": "coordinator_change", "ts": t0 + 1, "group": "", "partition": 7, "action": "elected"},
        {"v": 1, "type": "coordinator_change", "ts": t0 + 2, "group": "", "partition": 99, "action": "elected"},
        {"v": 1, "type": "end_offsets", "ts": t0 + 3, "group": "", "offsets": [["t", 0, 5]]},
        {"v": 1, "type": "heartbeat", "ts": t0 + 4, "group": "", "member_id": "m", "generation": 1, "error": None},
        {"v": 1, "type": "poll", "ts": t0 + 5, "group": "g", "member_id": "m"},
    ]
    out = _decoded(values)
    cluster = [(r["shard"], json.loads(r["payload"])["type"]) for r in out if r["kind"] == "cluster"]
    assert sorted(s for s, t in cluster if t == "topic_partitions") == list(range(50))  # every shard
    assert [s for s, t in cluster if t == "coordinator_change"] == [7]  # its partition's shard only
    records = [r for r in out if r["kind"] == "record"]
    assert [(r["shard"], json.loads(r["payload"])["kind"]) for r in records] == [(CLUSTER_SHARD, "end_offsets")]
    dead = [json.loads(r["payload"]) for r in out if r["kind"] == "dead_letter"]
    assert [(d["reason"], json.loads(d["raw"])["type"]) for d in dead] == [("bad_value:group", "heartbeat")]
    assert [(r["shard"], r["group"]) for r in out if r["kind"] == "events"] == [(SHARD, "g")]


def test_a_shard_applies_cluster_wide_events_to_its_groups_as_replay_does():
    """Two groups on one shard, one formed before a partition-count change (it rebalances: metadata_change),
    one created after it (it knows the new count), a coordinator move of the shard's partition: the
    processor's records equal replay's, and the shard's state names both groups."""
    early, late = _twin_groups()
    t0 = 1_700_000_000_000

    def member(group, ts, gen, parts, member_id):
        return [{"v": 1, "type": "join", "ts": ts, "group": group, "member_id": member_id, "protocols": ["range"],
                 "topics": ["t"], "session_timeout_ms": 10_000, "rebalance_timeout_ms": 30_000},
                {"v": 1, "type": "sync", "ts": ts + 100, "group": group, "member_id": member_id, "generation": gen,
                 "protocol": "range", "leader": member_id, "assignment": [["t", p] for p in parts]}]

    evs = [{"v": 1, "type": "topic_partitions", "ts": t0, "group": "", "topics": {"t": 2}}]
    evs += member(early, t0 + 1000, 1, (0, 1), "a")
    evs.append({"v": 1, "type": "coordinator_change", "ts": t0 + 2000, "group": "", "partition": SHARD,
                "action": "elected", "broker": 1})
    evs.append({"v": 1, "type": "topic_partitions", "ts": t0 + 3000, "group": "", "topics": {"t": 3}})
    evs += member(early, t0 + 3500, 2, (0, 1, 2), "a")
    evs += member(late, t0 + 5000, 1, (0, 1, 2), "b")
    evs += [{"v": 1, "type": "poll", "ts": t0 + 6000 + i, "group": g, "member_id": m}
            for i, (g, m) in enumerate(((early, "a"), (late, "b")))]
    rows = [Row(**r) for r in _decoded(evs) if r["shard"] == SHARD]
    p = new_processor()
    # one batch, its watermark at the last event (where replay's end of input leaves event time)
    got = _records(list(p.handleInputRows((SHARD,), iter(rows), TimerValues(evs[-1]["ts"]))))
    want = [r for r in _replay(evs, finish=True) if r["kind"] != "group_status"]
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, want))
    gens = {(r["group"], r["generation"]): r for r in got if r["kind"] == "generation"}
    assert [c["cause"] for c in gens[(early, 2)]["causes"]] == ["coordinator_change", "metadata_change"]
    assert gens[(late, 1)]["unassigned_partitions"] == 0  # it was created knowing t has 3 partitions
    assert [(r["group"], r["action"]) for r in got if r["kind"] == "coordinator"] == [(early, "elected")]
    assert set(_shard_snap(p)["w"]) == {early, late}


def test_a_groups_run_hands_on_each_partitions_last_commit():
    """Commits every second of one batch: the processor hands on each partition's last commit of the run
    (spark/output_commits.py), replay every one; the latest offsets are the same."""
    evs = _events()
    t0 = evs[0]["ts"]
    for s in range(1, 20):
        evs.append({"v": 1, "type": "commit", "ts": t0 + s * 1000 + 600, "group": "g", "member_id": "a",
                    "offsets": [["t", 0, 100 + s]]})
        if s % 5 == 0:  # b commits less often, and once both partitions
            evs.append({"v": 1, "type": "commit", "ts": t0 + s * 1000 + 650, "group": "g", "member_id": "b",
                        "offsets": [["t", 1, 500 + s]] + ([["t", 0, 90]] if s == 5 else [])})
    evs.sort(key=lambda e: e["ts"])
    p = new_processor()
    got = [r for r in _records(_run(p, evs, watermark=0)) if r["kind"] == "offsets_committed"]
    want = [r for r in _replay(evs) if r["kind"] == "offsets_committed"]
    assert len(want) == 19 + 3
    assert [(r["member_id"], r["offsets"]) for r in got] == [("b", [["t", 1, 515]]), ("a", [["t", 0, 119]])]

    def latest(recs):
        out = {}
        for r in recs:
            for t, part, o in r["offsets"]:
                out[(t, part)] = (r["ts"], o)
        return out

    assert latest(got) == latest(want)


def test_the_processor_does_not_check_again_what_the_decode_stage_checked(monkeypatch):
    """Each event is checked once, in the decode stage (the parser's checks, for the events that travel as text):
    the processor rebuilds them unchecked (core/checked_events.py) as new events, as pending ones in a later batch,
    as cluster-wide events and as a late group setting taken as standing; its records are replay's."""
    from rebalance_monitor.core import event_parsing

    checked = []
    check = event_parsing._from_object
    monkeypatch.setattr(event_parsing, "_from_object",
                        lambda value, *rest: checked.append(value) or check(value, *rest))
    evs = _events(seconds=5)
    t0, end = evs[0]["ts"], evs[-1]["ts"]
    evs.insert(0, {"v": 1, "type": "topic_partitions", "ts": t0 - 10, "group": "", "topics": {"t": 2}})
    evs.append({"v": 1, "type": "leave", "ts": end + 1, "group": "g", "member_id": "b", "reason": "closed"})
    late = [{"v": 1, "type": "group_config", "ts": t0, "group": "g", "source": "group", "session_timeout_ms": 20_000},
            {"v": 1, "type": "leave", "ts": t0, "group": "g", "member_id": "a", "reason": None}]
    rows = [Row(**r) for r in _decoded(evs) if r["shard"] == SHARD]
    late_rows = [Row(**r) for r in _decoded(late) if r["shard"] == SHARD]
    as_text = [e for e in evs + late if e["type"] not in ("heartbeat", "poll")]
    assert [c["type"] for c in checked] == [e["type"] for e in as_text]  # the decode stage's checks
    checked.clear()
    p = new_processor()
    got = _records(p.handleInputRows((SHARD,), iter(rows), TimerValues(0)))  # the newest 2 s stay pending
    assert _snap_has_text(_group_snap(p))
    got += _records(p.handleInputRows((SHARD,), iter([]), TimerValues(end + 1)))
    out = list(p.handleInputRows((SHARD,), iter(late_rows), TimerValues(end + 1)))
    assert checked == []
    assert [json.loads(r.payload)["reason"] for r in out if r.kind == "dead_letter"] == ["late_event"]  # the leave
    monkeypatch.undo()
    assert [r for r in got if r["kind"] != "group_status"] == \
        [r for r in _replay(evs, finish=True) if r["kind"] != "group_status"]


def _snap_has_text(snap) -> bool:
    """Whether a group's pending events (its runner snapshot) hold one carried as text."""
    return any(type(entry[2]) is str for entry in snap["p"])


def test_the_rows_out_are_the_rows_spark_takes():
    """`output_rows` builds each row as `OutputRow(*values)` does: equal, same fields, same dict for Spark's
    serializer (Row.asDict), the same through pickle."""
    import pickle

    from rebalance_monitor.spark.processor import OutputRow, output_rows

    values = [("group_status", "g", 1_700_000_000_000, '{"kind":"group_status"}'), ("dead_letter", "", 0, "{}")]
    rows = output_rows(values)
    for row, v in zip(rows, values):
        want = OutputRow(*v)
        assert type(row) is type(want) and row == want and repr(row) == repr(want)
        assert row.asDict(True) == want.asDict(True) and row.payload == want.payload
        assert pickle.loads(pickle.dumps(row)).asDict() == want.asDict()
    p = new_processor()
    out = _run(p, _events())
    assert out and all(type(r) is Row and list(r.asDict()) == ["kind", "group", "ts", "payload"] for r in out)
