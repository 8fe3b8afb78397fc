"""On what real brokers recorded: the assignor the core elects for a classic group whose confluent-kafka members'
syncs do not name it (the storm scenario's, `range,roundrobin` configured) is the one the broker itself wrote to
`__consumer_offsets` for that generation, and the group's assignments are then checked (no `mismatched` null)."""
from __future__ import annotations

import json
from pathlib import Path

from rebalance_monitor.testing import witnesses as W

DATA = Path(__file__).parent / "data"
VERSION = "4.4.0"  # (3.9.2's capture ran the storm with kafka-python, whose syncs name the protocol)


def test_the_elected_assignor_is_the_one_the_broker_chose():
    version = VERSION
    captured = W.load_captured(DATA / version)
    events = [json.loads(line) for line in (DATA / version / "events.jsonl").read_text().splitlines() if line.strip()]
    unnamed = {e["group"] for e in events if e.get("type") == "sync" and e.get("protocol") is None}
    groups = unnamed - {e["group"] for e in events if e.get("group_protocol") == "consumer"}
    assert "w-storm" in groups  # the captured storm scenario's members are confluent-kafka with two strategies
    clients = W.reconstruct("events", captured["events"], groups=groups)
    broker = W.reconstruct("offsets-topic", captured["offsets-topic"], groups=groups)
    chosen = {(r["group"], r["generation"]): r["protocol"] for r in broker if r["kind"] == "generation"}
    compared = 0
    for r in clients:
        if r["kind"] != "generation" or (r["group"], r["generation"]) not in chosen or not r["members"]:
            continue  # (a generation with no members, the group going empty, has no assignor to compare)
        assert r["protocol"] == chosen[(r["group"], r["generation"])], r
        assert r["mismatched_partitions"] == 0, r
        compared += 1
    assert compared >= 5
