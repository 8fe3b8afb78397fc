"""The command line of contract §3, run as a user runs it (a real subprocess)."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import helpers.offsets_encoder as enc
from helpers.events import heartbeats, join, stable_group

CLI = [sys.executable, "-m", "rebalance_monitor"]


def run(args, stdin: str = "", timeout=120):
    return subprocess.run(CLI + args, input=stdin, capture_output=True, text=True, timeout=timeout)


def test_assign_prints_the_seed_article_roundrobin_example():
    case = {"assignor": "roundrobin", "partitions_per_topic": {"t0": 3, "t1": 3},
            "members": [{"member_id": "C0", "topics": ["t0", "t1"]}, {"member_id": "C1", "topics": ["t0", "t1"]}]}
    p = run(["assign"], json.dumps(case))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"C0": [["t0", 0], ["t0", 2], ["t1", 1]], "C1": [["t0", 1], ["t1", 0], ["t1", 2]]}


def test_assign_rejects_bad_cases_with_a_clear_message():
    p = run(["assign"], json.dumps({"assignor": "fancy", "partitions_per_topic": {}, "members": []}))
    assert p.returncode == 2 and "unknown assignor 'fancy'" in p.stderr
    p = run(["assign"], json.dumps({"assignor": "range", "partitions_per_topic": {"t": -2},
                                    "members": [{"member_id": "a", "topics": ["t"]}]}))
    assert p.returncode == 2 and "partitions_per_topic['t']" in p.stderr and "non-negative" in p.stderr
    # a topic the cluster does not have is no error: Kafka assigns nothing of it
    p = run(["assign"], json.dumps({"assignor": "range", "partitions_per_topic": {},
                                    "members": [{"member_id": "a", "topics": ["t"]}]}))
    assert p.returncode == 0 and json.loads(p.stdout) == {"a": []}
    p = run(["assign"], "{nope")
    assert p.returncode == 2 and "not valid JSON" in p.stderr


def test_replay_events_prints_records_rejects_and_a_summary(tmp_path):
    events = stable_group(("a", "b")) + heartbeats(["a", "b"], 1, 2000, 9000) + [join(9500, "c")]
    lines = [json.dumps(e) for e in events]
    lines.insert(3, "garbage {")
    lines.insert(5, json.dumps({"v": 1, "type": "poll", "group": "g"}))
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    p = run(["replay", str(path)])
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["kind"] for r in records if r["kind"] == "generation"] == ["generation"]
    assert "rejected: not_json" in p.stderr and "rejected: missing_field:ts" in p.stderr
    summary = p.stderr.strip().splitlines()[-1]
    assert summary.startswith("replay: ") and "2 rejected (missing_field:ts=1, not_json=1)" in summary
    table = run(["replay", "--format", "table", "-"], path.read_text())
    assert table.returncode == 0
    assert "member_joined(client-a), member_joined(client-b)" in table.stdout


def test_replay_names_the_cluster_of_its_records():
    text = "".join(json.dumps(e) + "\n" for e in stable_group(("a", "b")))
    for args, want in (([], "default"), (["--cluster", "prod-us"], "prod-us")):
        p = run(["replay", *args, "-"], text)
        assert p.returncode == 0, p.stderr
        records = [json.loads(line) for line in p.stdout.splitlines()]
        assert records and {r["kafka_cluster"] for r in records} == {want}


def test_replay_errors_exit_non_zero():
    p = run(["replay", "/no/such/file.jsonl"])
    assert p.returncode == 1 and "cannot read" in p.stderr
    p = run(["replay", "--source", "carrier-pigeon", "-"])
    assert p.returncode == 2 and "invalid choice" in p.stderr
    p = subprocess.run(CLI + ["replay", "--config", "/no/such.yaml", "-"], input="", capture_output=True, text=True)
    assert p.returncode == 2 and "bad configuration" in p.stderr


def test_replay_coordinator_log_reconstructs_generations():
    lines = [
        "[2024-03-01 10:00:00,000] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state "
        "PreparingRebalance with old generation 4 (__consumer_offsets-12) (reason: Adding new member "
        "consumer-orders-1-9f2c with group instance id None; client reason: need to re-join with the given member-id) "
        "(kafka.coordinator.group.GroupCoordinator)",
        "[2024-03-01 10:00:03,000] INFO [GroupCoordinator 1]: Stabilized group orders generation 5 "
        "(__consumer_offsets-12) with 3 members (kafka.coordinator.group.GroupCoordinator)",
        "[2024-03-01 10:00:03,050] INFO [GroupCoordinator 1]: Assignment received from leader consumer-orders-1-0a1b "
        "for group orders for generation 5. The group has 3 members, 0 of which are static. "
        "(kafka.coordinator.group.GroupCoordinator)",
        "[2024-03-01 10:00:04,000] INFO Some unrelated line from the log cleaner (kafka.log.LogCleaner)",
    ]
    p = run(["replay", "--source", "coordinator-log", "-"], "\n".join(lines) + "\n")
    assert p.returncode == 0, p.stderr
    gens = [json.loads(line) for line in p.stdout.splitlines() if '"generation"' in line]
    gens = [g for g in gens if g["kind"] == "generation"]
    assert len(gens) == 1
    g = gens[0]
    assert g["generation"] == 5 and g["group"] == "orders"
    assert g["causes"][0]["cause"] == "member_joined"
    assert g["duration_ms"] == 3050


def test_replay_offsets_topic_dump_reconstructs_generations_with_assignments():
    def member(mid, parts):
        return {"member_id": mid, "client_id": f"c-{mid}", "client_host": "/10.0.0.1",
                "subscription": enc.consumer_subscription(1, ["t"]),
                "assignment": enc.consumer_assignment(1, [("t", p) for p in parts])}

    key = enc.group_metadata_key("pay")
    rows = [
        (1000, key, enc.group_metadata_value(3, "consumer", 1, "range", "m1", [member("m1", [0, 1]), member("m2", [2, 3])])),
        (9000, key, enc.group_metadata_value(3, "consumer", 2, "range", "m1", [member("m1", [0, 1, 2, 3])])),
        (9500, enc.offset_commit_key("pay", "t", 0), enc.offset_commit_value(1, 42)),
    ]
    dump = "\n".join(json.dumps({"ts": ts, "key": base64.b64encode(k).decode(), "value": base64.b64encode(v).decode()})
                     for ts, k, v in rows) + "\n" + json.dumps({"ts": 9600, "key": "AAAA", "value": "!!"}) + "\n"
    p = run(["replay", "--source", "offsets-topic", "-"], dump)
    assert p.returncode == 0, p.stderr
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    gens = [r for r in recs if r["kind"] == "generation"]
    assert [g["generation"] for g in gens] == [1, 2]
    assert gens[1]["assignment"] == {"m1": [["t", 0], ["t", 1], ["t", 2], ["t", 3]]}
    assert gens[1]["partitions_moved"] == 2
    assert gens[1]["expected_assignment"] == gens[1]["assignment"]
    assert any(r["kind"] == "offsets_committed" for r in recs)
    assert "1 rejected" in p.stderr.strip().splitlines()[-1]
