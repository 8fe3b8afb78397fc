"""The Python Kafka source's read loop (spark/kafka_source/range_reader.py) with a scripted range client: the one loop
both Kafka clients go through. Needs neither a broker nor a JVM."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rebalance_monitor.spark.kafka_source import range_reader
from rebalance_monitor.spark.kafka_source.range_clients import Polled, RecordsGone
from rebalance_monitor.spark.kafka_source.offsets import DataLossError, OffsetRange
from rebalance_monitor.spark.kafka_source.options import SourceOptions


class ScriptedClient:
    """Answers each poll with the next list of the script (records up to a `RecordsGone` in it, which ends the poll
    as the clients do); then nothing."""

    def __init__(self, polls, position=None):
        self.polls = list(polls)
        self.asked: list[int] = []
        self.pos = position
        self.closed = False

    def poll(self, max_records):
        self.asked.append(max_records)
        batch = self.polls.pop(0) if self.polls else []
        gone = next((item for item in batch if isinstance(item, RecordsGone)), None)
        records = batch[:batch.index(gone)] if gone is not None else batch
        columns = [list(col) for col in zip(*records)] or [[] for _ in range(6)]
        return Polled(*columns, gone=gone)

    def position(self):
        return self.pos

    def close(self):
        self.closed = True


def rec(off, ts_type=0):
    return (off, f"k{off}".encode(), f"v{off}".encode(), 1_700_000_000_000 + off, ts_type, [("h", b"x")])


def read(monkeypatch, client, r, **options):
    opts = SourceOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": r.topic,
                                **{k: str(v) for k, v in options.items()}})
    monkeypatch.setattr(range_reader, "open_range_client", lambda o, name, rng: client)
    return [list(chunk) for chunk in range_reader.read_range(opts, "confluent", r, as_records=True)]


def test_records_of_the_range_in_chunks_skipping_what_is_outside(monkeypatch):
    # a record before the range (a fetch starts at its batch's base offset), a gap (compaction), one past the end
    client = ScriptedClient([[rec(3), rec(4), rec(5)], [rec(7), rec(8), rec(9), rec(10), rec(11)]])
    chunks = read(monkeypatch, client, OffsetRange("t", 2, 4, 10), arrowBatchRows=2)
    offsets = [[row[2] for row in chunk] for chunk in chunks]
    assert offsets == [[4, 5], [7, 8, 9]]  # handed on once a poll leaves 2 or more; the rest at the end
    assert chunks[0][0] == ("t", 2, 4, 1_700_000_000_004, b"k4", b"v4")
    assert client.asked == [6, 4] and client.closed  # never more than the range still needs


def test_a_record_without_timestamp_has_none(monkeypatch):
    client = ScriptedClient([[rec(0, ts_type=-1), rec(1)]])
    (chunk,) = read(monkeypatch, client, OffsetRange("t", 0, 0, 2))
    assert [row[3] for row in chunk] == [None, 1_700_000_000_001]


def test_a_gap_at_the_end_is_crossed_by_the_fetch_position(monkeypatch):
    # offsets 2..4 are transaction markers: no records, but the client's position moves past them
    client = ScriptedClient([[rec(0), rec(1)], []], position=5)
    chunks = read(monkeypatch, client, OffsetRange("t", 0, 0, 5))
    assert [row[2] for chunk in chunks for row in chunk] == [0, 1]


def test_records_gone_is_data_loss_naming_the_offset(monkeypatch):
    client = ScriptedClient([[rec(0), rec(1)], [rec(2), RecordsGone("Broker: Offset out of range")]])
    with pytest.raises(DataLossError, match=r"records t-0 from offset 3 are no longer available \(Broker: Offset "
                                            r"out of range\); set failOnDataLoss=false"):
        read(monkeypatch, client, OffsetRange("t", 0, 0, 10))
    assert client.closed


def test_no_progress_within_the_poll_timeout_fails(monkeypatch):
    client = ScriptedClient([[rec(0)]], position=1)
    with pytest.raises(TimeoutError, match=r"at offset 1 within kafkaConsumer.pollTimeoutMs=0"):
        read(monkeypatch, client, OffsetRange("t", 0, 0, 3), **{"kafkaConsumer.pollTimeoutMs": 0})


def test_offsets_arithmetic_imports_no_pyspark():
    code = ("import sys; from rebalance_monitor.spark.kafka_source.offsets import rate_limit, plan_ranges, "
            "to_json_offsets; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
