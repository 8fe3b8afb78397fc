"""A silent member's timeout at live cadence comes in the first batch that could give it (within one trigger of
its deadline plus the release delay), whatever Spark's watermark says. The processor is driven directly (helpers/processor_handle.py) as the job runs
it: a 5 s processing-time trigger, the release delay and live horizon of the query plan, the decode stage's rows
of records appended as their events happened. One member keeps heartbeating; the other stops. A group's clock is
its own newest event less the delay, following the wall clock from its record's append (core/group_clock.py):
Spark's watermark is only a floor, so a watermark stuck far behind (a partition of old records, a job that reads
late) holds no timeout back."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from pyspark.sql import Row

from rebalance_monitor.core.settings import CoreSettings
from rebalance_monitor.decoding.decoded_rows import shard_of
from rebalance_monitor.decoding.row_batches import make_decoder
from rebalance_monitor.spark.processor import GroupProcessor

from helpers.processor_handle import MemoryHandle, TimerValues

T0 = 1_700_000_000_000
TRIGGER, DELAY, LATENCY = 5_000, 2_000, 15  # LATENCY: from an event to its record's append
SESSION = 10_000
GROUP = "g"
SHARD = shard_of(GROUP, 50)
STOP = T0 + 20_000  # b's last heartbeat is its last before this


def _events(until_ms: int) -> list[dict]:
    evs = [{"v": 1, "type": "join", "ts": T0, "group": GROUP, "member_id": m, "protocols": ["range"],
            "topics": ["t"], "session_timeout_ms": SESSION, "rebalance_timeout_ms": 30_000} for m in ("a", "b")]
    evs += [{"v": 1, "type": "sync", "ts": T0 + 100, "group": GROUP, "member_id": m, "generation": 1,
             "protocol": "range", "leader": "a", "assignment": [["t", i]]} for i, m in enumerate(("a", "b"))]
    for t in range(T0 + 1_000, until_ms, 3_000):  # heartbeats every 3 s, b's a little later than a's
        evs.append({"v": 1, "type": "heartbeat", "ts": t, "group": GROUP, "member_id": "a", "generation": 1,
                    "error": None})
        if t + 1_300 < STOP:
            evs.append({"v": 1, "type": "heartbeat", "ts": t + 1_300, "group": GROUP, "member_id": "b",
                        "generation": 1, "error": None})
    return sorted(evs, key=lambda e: e["ts"])


def _rows(evs: list[dict], first_offset: int) -> list[Row]:
    """The decode stage's rows of records appended LATENCY after their events."""
    n = len(evs)
    batch = pa.RecordBatch.from_pydict({
        "topic": ["ev"] * n, "partition": pa.array([0] * n, pa.int32()),
        "offset": list(range(first_offset, first_offset + n)),
        "timestamp": pa.array([(e["ts"] + LATENCY) * 1000 for e in evs], pa.timestamp("us", tz="UTC")),
        "key": pa.array([None] * n, pa.binary()), "value": pa.array([json.dumps(e).encode() for e in evs], pa.binary())})
    out = list(make_decoder({"ev": "events"}, 1 << 20, 10 ** 12)(iter([batch])))
    return [Row(**r) for r in out[0].to_pylist() if r["kind"] != "tick"] if out else []


def _timeout_batch(watermark_behind_ms: int | None, phase_ms: int) -> tuple[int, int]:
    """Batches every TRIGGER from T0 + phase_ms, each reading the records appended since the last; Spark's
    watermark `watermark_behind_ms` behind the batch (None: stuck at 0). (the batch that gave b's timeout, b's
    deadline)."""
    p = GroupProcessor(CoreSettings(), emit_status=False, release_delay_ms=DELAY, started_ms=T0 - 60_000,
                       horizon_ms=TRIGGER + DELAY)
    p.init(MemoryHandle())
    evs = _events(T0 + 60_000)
    deadline = max(e["ts"] for e in evs if e["member_id"] == "b" and e["type"] == "heartbeat") + SESSION
    read = 0
    for wall in range(T0 + phase_ms, T0 + 60_000, TRIGGER):
        new = [e for e in evs[read:] if e["ts"] + LATENCY <= wall]
        watermark = 0 if watermark_behind_ms is None else wall - watermark_behind_ms
        out = list(p.handleInputRows((SHARD,), iter(_rows(new, read)), TimerValues(watermark, wall)))
        read += len(new)
        timeouts = [json.loads(r.payload) for r in out if r.kind == "member_timeout"]
        if timeouts:
            assert [t["member_id"] for t in timeouts] == ["b"]
            return wall, deadline
    raise AssertionError("no timeout")


@pytest.mark.parametrize("phase_ms", [0, 1_250, 2_500, 3_750])
def test_the_first_batch_that_could_give_the_timeout_gives_it(phase_ms):
    wall, deadline = _timeout_batch(DELAY, phase_ms)
    # no batch before the deadline plus the release delay may give it (an event up to the delay late could
    # still come); the first batch at or after that (and the record's append latency) gives it
    first = next(w for w in range(T0 + phase_ms, T0 + 60_000, TRIGGER) if w >= deadline + DELAY + LATENCY)
    assert wall == first
    assert wall < deadline + DELAY + LATENCY + TRIGGER


@pytest.mark.parametrize("phase_ms", [0, 2_500])
@pytest.mark.parametrize("behind_ms", [None, 60_000, 600_000])
def test_a_watermark_stuck_far_behind_holds_no_timeout_back(phase_ms, behind_ms):
    assert _timeout_batch(behind_ms, phase_ms) == _timeout_batch(DELAY, phase_ms)
