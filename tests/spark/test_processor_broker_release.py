"""The broker's release through the job's stages: the broker's start-up line read from the coordinator-log topic
reaches every shard (decode stage) and the groups of a shard take it as replay's do (processor): a KIP-848 `uniform`
group's generations are judged by the rules of the release the log named, from when it named it."""
from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql import Row

from rebalance_monitor.core.assignors import ASSIGNOR_RELEASE
from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.settings import CoreSettings
from rebalance_monitor.inputs.coordinator_log import decode_log_record
from rebalance_monitor.decoding.decoded_rows import shard_of
from rebalance_monitor.decoding.row_batches import make_decoder

from helpers.processor_handle import TimerValues, new_processor

T0 = 1_700_000_000_000
VERSION_LINE = "[2023-11-14 22:13:21,000] INFO Kafka version: 4.0.0 (org.apache.kafka.common.utils.AppInfoParser)"
VERSION_TS = 1_700_000_001_000  # the line's own time (UTC)


def _groups_on_one_shard(n=2):
    names, i = [], 0
    while len(names) < n:
        i += 1
        if shard_of(f"orders-{i}", 50) == shard_of("g", 50):
            names.append(f"orders-{i}")
    return names


def _decoded(records):
    """records: (topic, value) with topic "ev" (canonical events) or "log" (coordinator log lines)."""
    n = len(records)
    batch = pa.RecordBatch.from_pydict({
        "topic": [t for t, _ in records], "partition": pa.array([0] * n, pa.int32()), "offset": list(range(n)),
        "timestamp": pa.array([None] * n, pa.timestamp("us", tz="UTC")),
        "key": pa.array([None] * n, pa.binary()),
        "value": pa.array([(v if isinstance(v, str) else json.dumps(v)).encode() for _, v in records])})
    return list(make_decoder({"ev": "events", "log": "coordinator-log"}, 1 << 20, 10 ** 12)(iter([batch])))[0] \
        .to_pylist()


def _uniform_group(group, ts):
    """Three members, five partitions, uniform: the releases give the extra partitions to different members."""
    evs = [{"v": 1, "type": "join", "ts": ts + i, "group": group, "member_id": m, "protocols": ["uniform"],
            "topics": ["t"], "session_timeout_ms": 10_000, "rebalance_timeout_ms": 30_000}
           for i, m in enumerate("abc")]
    split = {"a": [0, 1], "b": [2, 3], "c": [4]}
    evs += [{"v": 1, "type": "sync", "ts": ts + 100 + i, "group": group, "member_id": m, "generation": 1,
             "protocol": "uniform", "leader": "a", "assignment": [["t", p] for p in split[m]]}
            for i, m in enumerate("abc")]
    return evs


def test_the_logs_release_reaches_every_shard_and_judges_the_groups_after_it():
    before, after = _groups_on_one_shard()
    records = [("ev", e) for e in _uniform_group(before, T0)]
    records.append(("log", VERSION_LINE))
    records += [("ev", e) for e in _uniform_group(after, T0 + 2000)]
    records += [("ev", {"v": 1, "type": "poll", "ts": T0 + 60_000, "group": g, "member_id": "a"})
                for g in (before, after)]
    rows = _decoded(records)
    released = [r["shard"] for r in rows if r["kind"] == "cluster" and json.loads(r["payload"])["type"] ==
                "broker_release"]
    assert sorted(released) == list(range(50))  # every shard
    shard = shard_of(before, 50)
    p = new_processor()
    got = [json.loads(r.payload) for r in p.handleInputRows((shard,), iter(Row(**r) for r in rows
                                                                            if r["shard"] == shard),
                                                            TimerValues(T0 + 60_000)) if r.kind != "dead_letter"]
    gens = {r["group"]: r for r in got if r["kind"] == "generation"}
    assert gens[before]["expected_assignor_release"] == ASSIGNOR_RELEASE  # formed before the line
    assert gens[after]["expected_assignor_release"] == "4.0.0"
    assert gens[before]["expected_assignment"] != gens[after]["expected_assignment"]
    # as replay gives them
    replay = Reconstructor(CoreSettings(), max_disorder_ms=2000)
    want = []
    for topic, value in records:
        events = [value] if topic == "ev" else decode_log_record(value).events
        for e in events:
            want.extend(replay.feed(parse_event(json.dumps(e))))
    want.extend(replay.finish())
    want = [r for r in want if r["kind"] == "generation"]
    assert sorted(map(json.dumps, want)) == sorted(map(json.dumps, gens.values()))
