"""The Python source reads a record's Kafka timestamp only where the decoder needs it (decoding/append_time.py): the
decoded rows are those of a read that takes every record's timestamp at once."""
from __future__ import annotations

import json

import pytest

from rebalance_monitor.decoding.append_time import append_ms
from rebalance_monitor.decoding.record_decoder import make_record_decoder
from rebalance_monitor.spark.kafka_source.range_clients import stamp_columns
from rebalance_monitor.spark.kafka_source.offsets import OffsetRange
from rebalance_monitor.spark.kafka_source.options import SourceOptions
from rebalance_monitor.spark.kafka_source.range_reader import read_range

T0 = 1_790_000_000_000


class Stamped:
    """What append_ms asks of a confluent-kafka message: its (type, timestamp)."""

    def __init__(self, kind, ts):
        self.stamp = (kind, ts)

    def timestamp(self):
        return self.stamp


@pytest.mark.parametrize("kind,ts", [(1, T0), (2, T0 + 5), (1, 0), (0, -1), (0, T0), (1, -1), (2, None), (3, T0)])
def test_a_stamp_reads_as_the_eager_read_gives_it(kind, ts):
    # the eager read: stamp_columns, then the records' rule (a timestamp only with a type and not negative)
    (eager_ts,), (eager_type,) = stamp_columns([Stamped(kind, ts)])
    eager = eager_ts if eager_type >= 0 and eager_ts is not None and eager_ts >= 0 else None
    assert append_ms(Stamped(kind, ts)) == eager
    assert eager == (ts if kind in (1, 2) and ts is not None and ts >= 0 else None)


def test_a_read_timestamp_stays_as_it_is():
    assert append_ms(T0) == T0 and append_ms(None) is None and append_ms(0) == 0


def _events(group: str, n: int) -> list[tuple[bytes, int]]:
    """(value, Kafka timestamp): heartbeats, polls and commits (the fast path), joins and a record that is not
    JSON (the full parser: events and a dead letter), with Kafka timestamps out of step with the events'."""
    out = []
    for i in range(n):
        ts = T0 + 1000 * i
        member = f"m{i % 3}"
        if i % 7 == 3:
            ev = {"v": 1, "type": "join", "ts": ts, "group": group, "member_id": member, "protocols": ["range"],
                  "topics": ["t"]}
        elif i % 5 == 4:
            ev = {"v": 1, "type": "commit", "ts": ts, "group": group, "member_id": member, "offsets": [["t", 0, i]]}
        elif i % 2:
            ev = {"v": 1, "type": "poll", "ts": ts, "group": group, "member_id": member, "records": i}
        else:
            ev = {"v": 1, "type": "heartbeat", "ts": ts, "group": group, "member_id": member, "generation": 1,
                  "error": None}
        out.append((json.dumps(ev).encode(), T0 + 7 + 13 * ((n - i) % 11)))
    # the group's newest event takes the fast path, so its Kafka timestamp is read from its stamp
    last = {"v": 1, "type": "heartbeat", "ts": T0 + 1000 * n, "group": group, "member_id": "m0", "generation": 1,
            "error": None}
    out.append((json.dumps(last).encode(), T0 + 3))
    out.append((b"not json", T0 + 99))
    return out


@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_decoded_rows_equal_those_of_a_read_that_takes_every_timestamp(broker, unique, timestamp_type):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"stamps-{unique}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"message.timestamp.type": timestamp_type})])[topic].result()
    records = _events("g-" + unique, 60) + _events("h-" + unique, 25)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for value, ts in records:
        p.produce(topic, value, partition=0, timestamp=ts)
    assert p.flush(30) == 0

    decode = {"topics": {topic: "events"}, "max_bytes": 1 << 20, "max_future_ms": 10 ** 12}
    base = {"kafka.bootstrap.servers": broker.bootstrap, "assign": json.dumps({topic: [0]}),
            "reuseClients": "false", "arrowBatchRows": "17"}
    r = OffsetRange(topic, 0, 0, len(records))
    later = SourceOptions.parse({**base, "decode": json.dumps(decode)})
    eager = SourceOptions.parse(base)

    stamped = [list(chunk) for chunk in read_range(later, "confluent", r, as_records=True)]
    read_now = [list(chunk) for chunk in read_range(eager, "confluent", r, as_records=True)]
    assert all(type(rec[3]) is not int for chunk in stamped for rec in chunk)  # the stamps were left unread
    assert [[append_ms(rec[3]) for rec in c] for c in stamped] == [[rec[3] for rec in c] for c in read_now]
    if timestamp_type == "CreateTime":
        assert [rec[3] for c in read_now for rec in c] == [ts for _, ts in records]
    # a client that leaves the stamps gives the same Arrow rows too (the source's rows without the decoder)
    assert [b.to_pylist() for b in read_range(later, "confluent", r)] == \
        [b.to_pylist() for b in read_range(eager, "confluent", r)]

    def rows(chunks):
        decoder = make_record_decoder(decode["topics"], decode["max_bytes"], decode["max_future_ms"],
                                      pack_records=40)
        return [b.to_pylist() for b in decoder(iter(chunks))]

    got, want = rows(stamped), rows(read_now)
    assert got == want
    # the rows carry the Kafka timestamps: each group's newest event's (num), the batch's in its clock row
    kinds = {row["kind"] for batch in got for row in batch}
    assert {"events", "dead_letter", "tick"} <= kinds
    assert all(row["num"] is not None and row["num"] >= T0 for batch in got for row in batch
               if row["kind"] in ("events", "tick"))
    if timestamp_type == "CreateTime":  # the newest events' own records: the last heartbeats
        assert [row["num"] for batch in got for row in batch if row["kind"] == "tick"][-1] == T0 + 3
