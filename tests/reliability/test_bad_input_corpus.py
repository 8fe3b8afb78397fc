"""Bad input never crashes the stream and never loses data: a corpus of every kind of malformed record,
mixed into good events, goes through the real job. Every bad record comes out as exactly one dead letter
with a reason (matched by its Kafka offset), every good one is used, and the counts add up."""
from __future__ import annotations

import json
import time

import pytest

from helpers.events import heartbeats, stable_group
from helpers.in_process_job import make_cfg, run_until_idle
from helpers.replay import comparable, replay_records

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def corpus(now: int) -> list[tuple[bytes, str]]:
    """(value, expected reason) for every kind of malformed record."""
    ok = {"v": 1, "type": "poll", "ts": now, "group": "gx", "member_id": "m"}
    deep = ("[" * 50_000 + "]" * 50_000).encode()
    return [
        (b"plain text, not json", "not_json"),
        (bytes(range(256)), "not_json"),
        (b"\xff" * 64, "not_json"),
        (b"x" * (1 << 20 + 1), "too_large"),
        (deep, "not_json"),
        (b"42", "not_object"),
        (b"null", "not_object"),
        (json.dumps({**ok, "v": 9}).encode(), "unsupported_version"),
        (json.dumps({**ok, "v": "1"}).encode(), "bad_type:v"),
        (json.dumps({**ok, "type": "explode"}).encode(), "unknown_type"),
        (json.dumps({k: v for k, v in ok.items() if k != "group"}).encode(), "missing_field:group"),
        (json.dumps({**ok, "ts": "yesterday"}).encode(), "bad_type:ts"),
        (json.dumps({**ok, "ts": -1}).encode(), "bad_value:ts"),
        (json.dumps({**ok, "ts": now + 30 * 86_400_000}).encode(), "future_ts"),
        (json.dumps({**ok, "type": "sync", "generation": 1, "protocol": "range", "leader": "m",
                     "assignment": [["t", "zero"]]}).encode(), "bad_type:assignment"),
        (json.dumps({**ok, "type": "heartbeat", "generation": 1.5, "error": None}).encode(), "bad_type:generation"),
        (json.dumps({**ok, "type": "join", "protocols": "range", "topics": ["t"]}).encode(), "bad_type:protocols"),
        (b"", "not_json"),
    ]


def test_every_malformed_record_is_dead_lettered_once_and_good_ones_are_used(spark, broker, unique, tmp_path):
    from confluent_kafka import Producer

    topic = f"corpus-{unique}"
    broker.create_topics({topic: 1})
    now = int(time.time() * 1000)
    base = now - 60_000
    good = stable_group(("a", "b"), start=base, group="good") + heartbeats(["a", "b"], 1, base + 2000, base + 20_000,
                                                                           group="good")
    bad = corpus(now)
    # interleave: one bad record after every few good ones; produce one at a time and note each offset
    produced = []  # (offset, kind, payload)
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 4 << 20, "linger.ms": 0})
    offsets = []
    items = []
    bi = 0
    for i, e in enumerate(good):
        items.append(("good", json.dumps(e).encode()))
        if i % 2 == 1 and bi < len(bad):
            items.append(("bad", bad[bi]))
            bi += 1
    items.extend(("bad", b) for b in bad[bi:])
    for kind, value in items:
        payload = value[0] if kind == "bad" else value
        p.produce(topic, payload, partition=0, on_delivery=lambda err, msg: offsets.append((err, msg.offset())))
        p.flush(30)
        err, off = offsets[-1]
        assert err is None, err
        produced.append((off, kind, value))
    cfg = make_cfg(broker, topic, tmp_path, **{"kafka.max_record_bytes": 1 << 20})
    collected = []
    run_until_idle(spark, cfg, collected, flush_to=max(e["ts"] for e in good))
    dead = [json.loads(d) for _, _, ds in collected for d in ds]
    by_offset = {d["offset"]: d for d in dead}
    assert len(by_offset) == len(dead), "a record was dead-lettered twice"
    expected_bad = {off: v[1] for off, kind, v in produced if kind == "bad"}
    assert {off: d["reason"] for off, d in by_offset.items()} == expected_bad
    assert all(d["topic"] == topic and d["raw"] is not None for d in dead)
    # every good record was used: the reconstruction equals replay of the good events alone
    records = [r for _, recs, _ in collected for r in recs]
    assert comparable(records) == comparable(replay_records(good, cfg))
    # the counts add up: input = used + dead-lettered
    used = sum(1 for _, kind, _ in produced if kind == "good")
    assert used + len(dead) == len(produced)
    files = list((tmp_path / "dlq").iterdir())
    assert all(f.parent == tmp_path / "dlq" for f in files)
    assert sum(1 for f in files for _ in open(f)) == len(dead)
