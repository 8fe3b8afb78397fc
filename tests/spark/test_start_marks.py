"""After a restart, a silent group's idle time from before the start counts again once the input as it stood at
the start has been read (spark/start_marks.py): the wake-up records the job writes to every input partition
carry its start, and every shard counts them. Driven directly (helpers/processor_handle.py) and through the
decode stage."""
from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql import Row

from rebalance_monitor.decoding.decoded_rows import shard_of

from rebalance_monitor.decoding.row_batches import make_decoder
from rebalance_monitor.decoding.wake_records import WAKE_KEY, wake_marker

from helpers.processor_handle import MemoryHandle, TimerValues, decoded_rows, new_processor

T0 = 1_700_000_000_000
GROUP = "g"
SHARD = shard_of(GROUP, 50)
RESTART = T0 + 8_000  # the job restarts 8 s after the group's last event
EVENTS = [
    {"v": 1, "type": "join", "ts": T0, "group": GROUP, "member_id": "a", "protocols": ["range"], "topics": ["t"],
     "session_timeout_ms": 10_000, "rebalance_timeout_ms": 30_000},
    {"v": 1, "type": "sync", "ts": T0 + 5, "group": GROUP, "member_id": "a", "generation": 1, "protocol": "range",
     "leader": "a", "assignment": [["t", 0]]},
    {"v": 1, "type": "heartbeat", "ts": T0 + 10, "group": GROUP, "member_id": "a", "generation": 1, "error": None},
]  # the member's session deadline: T0 + 10,010


def _marker(start: int, n: int, partition: int = 0) -> Row:
    payload = wake_marker(json.dumps({"start": start, "n": n}).encode(), "ev", partition)
    return Row(shard=SHARD, group="", ts=0, et=None, ord=partition, kind="wake", num=None, payload=payload,
               packed=None)


def _kinds(p, rows, wall_ms) -> list[str]:
    return [r.kind for r in p.handleInputRows((SHARD,), iter(rows), TimerValues(0, wall_ms))]


def _restarted(markers: list[Row], later: list[Row] = ()) -> list[tuple[int, list[str]]]:
    """The records of a group whose only member went silent, over batches after a restart at RESTART that read
    `markers` first (and `later` in the next batch): (wall time, record kinds) of each batch."""
    handle = MemoryHandle()
    before = new_processor(handle=handle, started_ms=T0)
    _kinds(before, decoded_rows(EVENTS), T0 + 100)  # the events are read; the job stops
    after = new_processor(handle=handle, started_ms=RESTART)
    out = [(RESTART, _kinds(after, markers, RESTART))]
    for wall in range(RESTART + 1_000, T0 + 25_000, 1_000):  # a batch a second, the input quiet
        out.append((wall, _kinds(after, list(later) if wall == RESTART + 1_000 else [], wall)))
    return out


def _timed_out_at(batches) -> int:
    return next(wall for wall, kinds in batches if "member_timeout" in kinds)


def test_once_the_input_is_read_as_of_the_start_a_silent_member_times_out_at_its_deadline():
    # the group's clock is its newest event less the delay (T0 - 1,990) plus the idle time since the job first
    # saw it (T0 + 100): it passes the deadline (T0 + 10,010) at T0 + 12,100, the first batch after is at 13,000
    assert _timed_out_at(_restarted([_marker(RESTART, 1)])) == T0 + 13_000


def test_until_then_no_idle_time_from_before_the_start_counts():
    waiting = _timed_out_at(_restarted([]))
    # no markers (the job could not write them): the idle time counts from the restart, 7.9 s later than above
    assert waiting == T0 + 20_000
    # one of two markers read (the other partition's backlog is not read yet): the same
    assert _timed_out_at(_restarted([_marker(RESTART, 2)])) == waiting
    # the markers of an earlier start (read in a backlog) do not count
    assert _timed_out_at(_restarted([_marker(RESTART - 60_000, 1)])) == waiting
    # both markers, in different batches: caught up from the second
    assert _timed_out_at(_restarted([_marker(RESTART, 2, 0)], [_marker(RESTART, 2, 1)])) == T0 + 13_000


def test_the_decode_stage_hands_every_shard_the_markers_and_counts_no_wake_up_as_read():
    values = [json.dumps({"start": RESTART, "n": 3}).encode(), b""]
    batch = pa.RecordBatch.from_pydict({
        "topic": ["ev", "ev"], "partition": pa.array([4, 4], pa.int32()), "offset": [7, 8],
        "timestamp": pa.array([None, None], pa.timestamp("us", tz="UTC")),
        "key": pa.array([WAKE_KEY, WAKE_KEY], pa.binary()), "value": pa.array(values, pa.binary())})
    # packed over many records as the Python source packs them: a batch that reads wake-up records alone still
    # hands them on
    decoded = list(make_decoder({"ev": "events"}, 1 << 20, 10 ** 12, pack_records=250_000, shards=50)(iter([batch])))
    rows = decoded[0].to_pylist()
    wakes = [r for r in rows if r["kind"] == "wake"]
    assert sorted(r["shard"] for r in wakes) == list(range(50))  # the bare wake-up (no start) marks nothing
    assert {json.loads(r["payload"])["tp"] for r in wakes} == {"ev:4"}
    assert json.loads(wakes[0]["payload"]) == {"start": RESTART, "n": 3, "tp": "ev:4"}
    assert not [r for r in rows if r["kind"] == "tick"]  # no input record was read
