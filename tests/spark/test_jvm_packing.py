"""The canonical events' heartbeats, polls and commits packed per group in the JVM (spark/jvm_packing.py,
streaming/java/spark-input-stage: EventPacking, HotEvent) give the decode stage exactly what it makes of the
same records alone: the same events of every group, in the same pack format, the same dead letters, every record
counted; only the rows that cross into Python are fewer."""
from __future__ import annotations

import json
import os
import sys

import pytest

from rebalance_monitor.decoding.row_batches import make_decoder
from rebalance_monitor.decoding.wake_records import WAKE_KEY
from rebalance_monitor.decoding.decoded_rows import DECODED_SCHEMA, unpack_events

pytestmark = [pytest.mark.spark]

T0 = 1_700_000_000_000
TOPIC = "events"


def _tricky() -> list[bytes]:
    """Records the JVM must leave to Python (or read exactly as Python does)."""
    hb = {"v": 1, "type": "heartbeat", "ts": T0 + 50, "group": "odd", "member_id": "m", "generation": 2, "error": None}
    out = [
        {**hb, "records": 1}, {**hb, "extra": True}, {**hb, "host": 5}, {**hb, "ts": T0 + 50.0},
        {**hb, "generation": True}, {**hb, "generation": 2 ** 70}, {**hb, "generation": 2 ** 60}, {**hb, "v": 2},
        {**hb, "group": ""},
        {**hb, "error": "REBALANCE_IN_PROGRESS"}, {**hb, "member_id": "mé-ü-\u4e2d-\U0001F600"},
        {**hb, "client_id": "c\"q\\", "host": "/10.0.0.1", "group_instance_id": None},
        {"v": 1, "type": "poll", "ts": T0 + 51, "group": "odd", "member_id": "m", "records": None},
        {"v": 1, "type": "poll", "ts": T0 + 52, "group": "odd", "member_id": "m", "records": "5"},
        {"v": 1, "type": "commit", "ts": T0 + 53, "group": "odd", "member_id": "m", "offsets": []},
        {"v": 1, "type": "commit", "ts": T0 + 54, "group": "odd", "member_id": "m", "offsets": [["t", -1, 1]]},
        {"v": 1, "type": "commit", "ts": T0 + 55, "group": "odd", "member_id": "m", "offsets": [["t", 0, 7]],
         "generation": 3},
        {"v": 1, "type": "heartbeat", "ts": 10 ** 15, "group": "odd", "member_id": "m", "generation": 1,
         "error": None},  # far in the future: a dead letter from Python
    ]
    texts = [json.dumps(e).encode() for e in out]
    texts += [b"not json", b'{"v":1,"type":"heartbeat"}', b'[1]',
              json.dumps(hb).encode() + b" {}",
              b'{"v":1,"type":"heartbeat","ts":%d,"group":"odd","member_id":"\\ud800","generation":1,"error":null}'
              % (T0 + 56)]
    return texts


def _records() -> list[tuple]:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
    from bench_core import workload

    values = [json.dumps(e, separators=(",", ":")).encode() for e in workload(12, 4, 3000)]
    values[100:100] = _tricky()
    recs = [(TOPIC, i % 3, i // 3, T0 + i, None, v) for i, v in enumerate(values)]
    recs.append((TOPIC, 0, len(values), T0, WAKE_KEY, b'{"start":1,"n":1}'))
    recs.append(("other", 0, 0, T0, None, values[-1]))  # a topic the job does not read as events
    return recs


def _by_group(rows) -> tuple[dict, list, int]:
    """Every group's events (each column's values per event, sorted by time and order), the dead letters' reasons
    and raw texts, and the records counted as read."""
    groups: dict = {}
    dead, read = [], 0
    for row in rows:
        if row["kind"] == "events":
            cols = unpack_events(row["packed"])
            groups.setdefault(row["group"], []).extend(zip(*cols))
        elif row["kind"] == "dead_letter":
            rec = json.loads(row["payload"])
            dead.append((rec["reason"], rec["raw"]))
        elif row["kind"] == "tick":
            read += row["ord"]
    return {g: sorted(evs, key=lambda e: (e[0], e[1])) for g, evs in groups.items()}, sorted(dead), read


def test_the_jvm_packs_what_the_python_stage_packs(spark):
    from helpers.fixtures_spark import INPUT_STAGE_JAR, kafka_rows

    from rebalance_monitor.spark.jvm_compaction import decode_input

    assert os.path.exists(INPUT_STAGE_JAR), "scripts/build_java.sh builds it (make bootstrap)"
    recs = _records()
    raw = kafka_rows(spark, recs).repartition(3, "partition").sortWithinPartitions("partition", "offset")
    sources = {TOPIC: "events", "other": "coordinator-log"}
    decoder = make_decoder(sources, 1 << 20, 3_600_000, shards=50)
    staged = decode_input(raw, None, [TOPIC], 1 << 20, 3_600_000)
    assert "rm_pack" in staged.columns  # the JVM stage ran
    python_rows = raw.select("topic", "partition", "offset", "timestamp", "key", "value") \
        .mapInArrow(decoder, DECODED_SCHEMA).collect()
    jvm_rows = staged.mapInArrow(decoder, DECODED_SCHEMA).collect()
    python, jvm = _by_group(python_rows), _by_group(jvm_rows)
    assert jvm[0] == python[0]
    assert jvm[1] == python[1] and len(python[1]) >= 8  # the same dead letters (not json, the future heartbeat...)
    assert jvm[2] == python[2] == len(recs) - 1  # every record counted as read (the wake-up record is not input)
    # the frequent events crossed into Python packed: far fewer rows than records
    crossed = staged.filter("rm_pack is null").count()
    assert crossed < len(recs) // 5, crossed
    # the tricky records that Python's fast path takes were packed too, with their exact values
    odd = [e for e in jvm[0]["odd"] if e[2] is not None]
    assert {e[3] for e in odd} >= {"m", "mé-ü-\u4e2d-\U0001F600"}
    assert any(e[7] == 'c"q\\' and e[8] == "/10.0.0.1" for e in odd)
    assert any(e[2] == "commit" and e[9] == [["t", 0, 7]] and e[4] == 3 for e in odd)
