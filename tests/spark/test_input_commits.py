"""The decode stage compacts `__consumer_offsets`' live commits over a chunk, the last per group, topic and
partition (decoding/input_commits.py), and that changes nothing the core concludes: the same generations,
causes (the inferred ones read the commits' times), timeouts and latest committed offsets as when every commit
is decoded, only fewer `offsets_committed` records."""
from __future__ import annotations

import json

import helpers.offsets_encoder as enc
from helpers.replay import replay_records

from rebalance_monitor.config import load_config
from rebalance_monitor.decoding.record_decoder import make_record_decoder
from rebalance_monitor.decoding.decoded_rows import unpack_events

TOPIC = "__consumer_offsets"
T0 = 1_700_000_000_000


def _members(*owned: tuple[str, list[int]]):
    out = []
    for i, (member, parts) in enumerate(owned):
        out.append({"member_id": member, "client_id": f"client-{i}", "client_host": f"/10.0.0.{i + 1}",
                    "session_timeout": 10_000, "rebalance_timeout": 12_000,
                    "subscription": enc.consumer_subscription(1, ["orders"]),
                    "assignment": enc.consumer_assignment(1, [("orders", p) for p in parts])})
    return out


def fleet_records() -> list[tuple]:
    """Kafka records of `__consumer_offsets`: two groups committing often, one member of `shop` crashing (its
    partitions' commits stop, the next generation drops it ~10 s later), tombstones, a member list in between."""
    recs: list[tuple[bytes, bytes | None, int]] = []

    def gm(group, gen, ts, *owned):
        value = enc.group_metadata_value(3, "consumer", gen, "range", owned[0][0], _members(*owned),
                                         current_state_ts=ts)
        recs.append((enc.group_metadata_key(group), value, ts))

    def commit(group, partition, offset, ts):
        recs.append((enc.offset_commit_key(group, "orders", partition),
                     enc.offset_commit_value(3, offset, "", commit_ts=ts), ts))

    gm("shop", 1, T0, ("m1", [0, 1]), ("m2", [2, 3]))
    gm("audit", 1, T0, ("a1", [0, 1, 2, 3]))
    t = T0
    for i in range(40):  # every member commits every 500 ms
        t += 500
        for p in range(4):
            commit("shop", p, 100 + i, t + p)
            commit("audit", p, 900 + i, t + p)
    recs.append((enc.offset_commit_key("audit", "orders", 9), None, t + 10))  # an offset deleted: a barrier
    for i in range(40, 60):  # m2 crashed: only m1's partitions are committed
        t += 500
        for p in (0, 1):
            commit("shop", p, 100 + i, t + p)
        commit("audit", i % 4, 900 + i, t)
    gm("shop", 2, t + 300, ("m1", [0, 1, 2, 3]))  # the coordinator drops m2 (10 s after its last commit)
    for i in range(60, 70):
        t += 500
        for p in range(4):
            commit("shop", p, 100 + i, t + p)
    return [(TOPIC, 0, n, ts, key, value) for n, (key, value, ts) in enumerate(recs)]


def decoded_events(records, chunk: int) -> tuple[list[dict], int]:
    """The events the decode stage packs, in chunks of `chunk` records; and how many commit events there were."""
    decode = make_record_decoder({TOPIC: "offsets-topic"}, 1 << 20, 10 ** 12, shards=50)
    events = []
    for batch in decode(records[i:i + chunk] for i in range(0, len(records), chunk)):
        for packed in batch.column("packed").to_pylist():
            if packed is None:
                continue
            cols = unpack_events(packed)
            events.extend(json.loads(payload) for payload in cols[-1])
    events.sort(key=lambda e: e["ts"])  # both runs: one order of events in time, as the runner keeps them
    return events, sum(e["type"] == "commit" for e in events)


def latest_offsets(records) -> dict:
    out = {}
    for r in records:
        if r["kind"] == "offsets_committed":
            for t, p, o in r["offsets"]:
                if (r["group"], t, p) not in out or r["ts"] >= out[(r["group"], t, p)][1]:
                    out[(r["group"], t, p)] = (o, r["ts"])
    return out


def test_compacted_commits_give_the_core_the_same_conclusions():
    records = fleet_records()
    cfg = load_config(env={}, overrides={"kafka.offsets_topic": TOPIC, "kafka.events_topic": ""})
    every, every_commits = decoded_events(records, chunk=1)        # one record per chunk: nothing to compact
    compacted, kept_commits = decoded_events(records, chunk=10_000)  # the whole input in one chunk
    assert every_commits == 40 * 8 + 60 + 10 * 4
    # the barriers (the tombstone, the member lists) split the runs: 8 keys before the tombstone, shop's 2 and
    # audit's 4 after it until shop's generation 2, shop's 4 after that
    assert kept_commits == 8 + 6 + 4
    assert [e for e in every if e["type"] != "commit"] == [e for e in compacted if e["type"] != "commit"]
    full, fast = replay_records(every, cfg), replay_records(compacted, cfg)
    assert latest_offsets(full) == latest_offsets(fast)
    other = [json.dumps(r, sort_keys=True) for r in full if r["kind"] not in ("offsets_committed", "group_status")]
    assert other == [json.dumps(r, sort_keys=True) for r in fast
                     if r["kind"] not in ("offsets_committed", "group_status")]
    # what the commits' times decide: m2's departure inferred as a session timeout, in both
    gens = [r for r in fast if r["kind"] == "generation" and r["group"] == "shop" and r["generation"] == 2]
    assert gens and [(c["cause"], c.get("cause_source")) for c in gens[0]["causes"]] == \
        [("session_timeout", "inferred")], gens


def test_only_live_commits_are_held():
    from rebalance_monitor.decoding.input_commits import CommitCompactor, is_live_commit

    key = enc.offset_commit_key("g", "t", 0)
    assert is_live_commit(key, b"\x00\x03") and is_live_commit(enc.offset_commit_key("g", "t", 0, 0), b"x")
    assert not is_live_commit(key, None)  # a tombstone
    assert not is_live_commit(enc.group_metadata_key("g"), b"x") and not is_live_commit(None, b"x")
    c = CommitCompactor()
    for i in range(5):
        c.offer(key, ("a", i))
    c.offer(b"other", ("b", 0))
    assert c.drain() == [("a", 4), ("b", 0)] and c.superseded == 4 and c.drain() == []


def test_the_jvm_stage_keeps_what_the_python_stage_keeps(spark):
    """streaming/java/spark-input-stage over the connector's rows (one partition, the whole input), then the
    decode stage: the same events as the Python compaction over one chunk, and every record counted as read."""
    import os

    from helpers.fixtures_spark import INPUT_STAGE_JAR, kafka_rows

    from rebalance_monitor.decoding.row_batches import make_decoder
    from rebalance_monitor.decoding.decoded_rows import DECODED_SCHEMA
    from rebalance_monitor.spark.jvm_compaction import decode_input

    assert os.path.exists(INPUT_STAGE_JAR), "scripts/build_java.sh builds it (make bootstrap)"
    records = fleet_records()
    raw = kafka_rows(spark, records).coalesce(1)
    decoder = make_decoder({TOPIC: "offsets-topic"}, 1 << 20, 10 ** 12, shards=50)
    staged = decode_input(raw, TOPIC)
    # the JVM stage ran, and moved only the commits kept (and the other records) into Python
    assert "rm_records" in staged.columns
    assert staged.count() == len(records) - (40 * 8 + 60 + 10 * 4) + (8 + 6 + 4)
    out = staged.mapInArrow(decoder, DECODED_SCHEMA).collect()
    events = [json.loads(payload) for row in out if row["packed"] is not None
              for payload in unpack_events(row["packed"])[-1]]
    events.sort(key=lambda e: e["ts"])
    python, kept = decoded_events(records, chunk=10_000)
    assert events == python and sum(e["type"] == "commit" for e in events) == kept
    assert sum(row["ord"] for row in out if row["kind"] == "tick") == len(records)  # every record counted as read
