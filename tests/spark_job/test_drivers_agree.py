"""The two drivers of the core agree: `replay` and the Spark job (Apache Kafka, a real SparkSession) on the same
events give the same records, field by field.

The input has every event kind of the contract: client events (join, sync, heartbeat, poll, leave, commit,
revoked, lost), coordinator events (rebalance_started, generation_completed, member_removed, group_empty,
group_deleted), cluster-wide events with group "" (a partition-count change that makes a stable group rebalance
and reaches a group created after it; a coordinator move of one group's `__consumer_offsets` partition, which
must reach that group and no other; end offsets; the brokers' release) and their per-group forms, an event without a group (a dead
letter), disorder within the release delay, late events (dead letters `late_event` in both), and a group that
`groups.deny` leaves out, and a generation record held across the two runs for a member's late sync
(the clients' events with the coordinator's log).

The one documented difference (docs/records.md): detection times. A `member_timeout`'s `detected_ms` and `ts`
say when the driver saw the deadline pass, and `group_status` is a snapshot taken whenever a driver looks (the
job after every run of a group, replay at its end of input): of it, the last per group is compared without its
time, gap and at-risk fields.
"""
from __future__ import annotations

import json
import time

import pytest

from rebalance_monitor.config import load_config
from rebalance_monitor.core.coordinator_placement import offsets_partition_for
from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.vocabulary import DETECTED_KINDS
from rebalance_monitor.spark.job import StreamingQueryJob

pytestmark = [pytest.mark.integration, pytest.mark.spark]

STATUS_TIME_FIELDS = ("ts", "max_heartbeat_gap_ratio", "heartbeat_gap_ratios", "max_poll_gap_ratio", "poll_gap_ratios",
                      "members_at_risk")


def _ev(type_, ts, group, **fields):
    return {"v": 1, "type": type_, "ts": ts, "group": group, **fields}


def _join(ts, member, group, topics=("t",), owned=(), session=10_000):
    return _ev("join", ts, group, member_id=member, protocols=["range"], topics=list(topics),
               owned=[list(tp) for tp in owned], session_timeout_ms=session, rebalance_timeout_ms=30_000,
               heartbeat_interval_ms=3000, client_id=f"client-{member}", host=f"/127.0.0.{len(member)}")


def _sync(ts, member, group, gen, assignment, leader):
    return _ev("sync", ts, group, member_id=member, generation=gen, protocol="range", leader=leader,
               assignment=[list(tp) for tp in assignment])


def _hb(ts, member, group, gen):
    return _ev("heartbeat", ts, group, member_id=member, generation=gen, error=None)


def _t(*parts):
    return [("t", p) for p in parts]


def all_kinds(base: int) -> tuple[list[dict], list[dict], list[str]]:
    """(first part, second part, groups) of the scripted input; the second part holds the late events."""
    first: list[dict] = [_ev("topic_partitions", base - 1000, "", topics={"t": 4})]
    # ga: client events; a partition-count change (cluster-wide) makes it rebalance; a member leaves
    first += [_join(base, "a", "ga"), _join(base + 10, "b", "ga"),
              _sync(base + 500, "a", "ga", 1, _t(0, 1), "a"), _sync(base + 501, "b", "ga", 1, _t(2, 3), "a")]
    for s in range(1, 9):
        t = base + s * 1000
        first += [_hb(t, "a", "ga", 1), _hb(t + 7, "b", "ga", 1)]
        first.append(_ev("poll", t + 300, "ga", member_id="a", records=s))
    first.append(_ev("commit", base + 4000, "ga", member_id="a", generation=1, offsets=[["t", 0, 42]]))
    first.append(_ev("topic_partitions", base + 9000, "", topics={"t": 6}))
    first += [_ev("revoked", base + 9200, "ga", member_id="a", partitions=[["t", 1]], generation=1),
              _join(base + 9300, "a", "ga", owned=_t(0)), _join(base + 9310, "b", "ga", owned=_t(2, 3)),
              _sync(base + 9800, "a", "ga", 2, _t(0, 1, 2), "a"), _sync(base + 9801, "b", "ga", 2, _t(3, 4, 5), "a")]
    first += [_hb(base + s * 1000, m, "ga", 2) for s in range(10, 14) for m in ("a", "b")]
    first += [_ev("lost", base + 14_100, "ga", member_id="b", partitions=[["t", 3]], generation=2),
              _ev("leave", base + 14_200, "ga", member_id="b", reason="the consumer is being closed")]
    # gc: created after the partition-count change, so it knows t has 6 partitions
    first += [_join(base + 11_000, "c", "gc"), _sync(base + 11_400, "c", "gc", 1, _t(*range(6)), "c")]
    first += [_hb(base + s * 1000, "c", "gc", 1) for s in range(12, 16)]
    # gb: seen through the coordinator only; its coordinator moves (cluster-wide event of its partition)
    part = offsets_partition_for("gb", 50)
    first.append(_ev("rebalance_started", base + 3000, "gb", generation=4, reason="loaded", member_id=None))
    first.append(_ev("generation_completed", base + 3500, "gb", generation=5, protocol="range", leader="m1",
                     protocol_type="consumer",
                     members=[{"member_id": "m1", "client_id": "c1", "host": "/127.0.0.9", "topics": ["t"],
                               "assignment": [["t", 0], ["t", 1]], "session_timeout_ms": 10_000},
                              {"member_id": "m2", "client_id": "c2", "host": "/127.0.0.8", "topics": ["t"],
                               "assignment": [["t", 2], ["t", 3]], "session_timeout_ms": 10_000}]))
    first.append(_ev("coordinator_change", base + 5000, "", partition=part, action="elected", broker=2))
    first.append(_ev("coordinator_change", base + 5100, "", partition=(part + 1) % 50, action="elected", broker=3))
    first.append(_ev("member_removed", base + 7000, "gb", member_id="m2", cause="session_timeout",
                     reason="removing member m2 on heartbeat expiration"))
    first.append(_ev("coordinator_change", base + 7100, "gb", partition=part, action="resigned", broker=2))
    first.append(_ev("end_offsets", base + 7200, "", offsets=[["t", 0, 1000], ["t", 1, 900]]))
    # the brokers' release (every group, every shard): the server assignors' rules from then on
    first.append(_ev("broker_release", base + 7250, "", release="4.0.0"))
    first.append(_ev("end_offsets", base + 7300, "gb", offsets=[["t", 2, 10]]))
    first.append(_ev("topic_partitions", base + 7400, "gb", topics={"t": 4}))
    # gd: the clients' events and the coordinator's log: the log completes generation 1 (d2's join starts the next
    # round) before d1's sync of it, which comes in the second part: the record is held across the runs for it
    first += [_join(base + 12_000, "d1", "gd"), _ev("generation_completed", base + 12_100, "gd", generation=1),
              _ev("generation_completed", base + 12_102, "gd", generation=1, leader="d1"),
              _join(base + 12_150, "d2", "gd"),
              _ev("rebalance_started", base + 12_151, "gd", generation=1, reason="Adding new member d2",
                  member_id="d2")]
    # a group groups.deny leaves out, and an event without a group
    first += [_join(base + 100, "x", "scratch-1"), _sync(base + 200, "x", "scratch-1", 1, _t(0), "x")]
    first.append(_ev("heartbeat", base + 5000, "", member_id="nobody", generation=1, error=None))
    first.sort(key=lambda e: e["ts"])
    # two heartbeats out of order within the release delay
    i = next(i for i, e in enumerate(first) if e["type"] == "heartbeat" and e["ts"] >= base + 3000)
    first[i], first[i + 1] = first[i + 1], first[i]
    second: list[dict] = []
    # late: far behind what ga and gc already processed
    second += [_hb(base + 1500, "a", "ga", 1), _hb(base + 1600, "c", "gc", 1)]
    second.append(_sync(base + 15_900, "d1", "gd", 1, _t(*range(6)), "d1"))
    second += [_hb(base + s * 1000, "a", "ga", 2) for s in range(16, 20)]
    second += [_ev("group_empty", base + 21_000, "gb", generation=5),
               _ev("group_deleted", base + 22_000, "gb")]
    return first, second, ["ga", "gb", "gc", "gd"]


def _produce(broker, topic, events):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=20)
    for e in events:
        p.send(topic, json.dumps(e).encode(), partition=0)
    p.flush()
    p.close()


def _replay(parts, cfg):
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay),
                          emit_status=True, group_filter=cfg.group_filter(),
                          offsets_partitions=cfg.kafka.offsets_topic_partitions)
    out = []
    for part in parts:
        for e in part:
            out.extend(recon.feed(parse_event(e)))
    out.extend(recon.finish())
    rejects = sorted(r.reason for r in recon.rejects)
    return out, rejects


def _comparable(records):
    """Every field of every record, but detection times (see the module docstring)."""
    keep, status = [], {}
    for r in records:
        r = dict(r)
        if r["kind"] == "group_status":
            status[r["group"]] = {k: v for k, v in r.items() if k not in STATUS_TIME_FIELDS}
            continue
        if r["kind"] in DETECTED_KINDS:
            r.pop("detected_ms")
            r.pop("ts")
        keep.append(json.dumps(r, sort_keys=True))
    return sorted(keep), status


def test_replay_and_the_job_give_the_same_records(spark, broker, unique, tmp_path):
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    first, second, groups = all_kinds(int(time.time() * 1000) - 300_000)
    cfg = load_config(env={}, overrides={
        "kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": topic,
        "kafka.starting_offsets": "earliest", "kafka.connector": "python", "groups.deny": "scratch-.*",
        "state.checkpoint_location": str(tmp_path / "ck"), "state.watermark_delay": "2s",
        "sinks.history.parquet_path": str(tmp_path / "history"), "sinks.dead_letter.path": str(tmp_path / "dlq"),
        "exporter.enabled": False, "spark.trigger_interval": "1s"})
    got, dead = [], []

    def collect(_batch, records, dead_letters):
        got.extend(records)
        dead.extend(json.loads(d)["reason"] for d in dead_letters)

    for part in (first, second):  # two runs from one checkpoint: the second part's late events are late
        _produce(broker, topic, part)
        job = StreamingQueryJob(cfg, spark=spark, idle_clock=False, on_records=collect)
        try:
            job.run_once(timeout_s=300)
        finally:
            job.stop()
    expected, rejects = _replay((first, second), cfg)
    assert _comparable(got) == _comparable(expected)
    assert sorted(dead) == rejects == ["bad_value:group", "late_event", "late_event"]
    # what the input was built to exercise, so that agreement is not agreement on nothing
    kinds = {r["kind"] for r in expected}
    assert {"generation", "rebalance_started", "coordinator", "end_offsets", "group_deleted",
            "group_status"} <= kinds, kinds
    assert {r["group"] for r in expected if r["kind"] != "end_offsets"} == set(groups)
    ga = [r for r in expected if r["kind"] == "generation" and r["group"] == "ga"]
    assert any(c["cause"] == "metadata_change" for g in ga for c in g["causes"]), ga
    coordinator = [r for r in expected if r["kind"] == "coordinator"]
    assert {r["group"] for r in coordinator} == {"gb"}, "a coordinator move reaches the groups of its partition"
    gc = [r for r in expected if r["kind"] == "generation" and r["group"] == "gc"]
    assert gc and gc[0]["unassigned_partitions"] == 0, "gc was created after t grew to 6 partitions"
    gd = [r for r in expected if r["kind"] == "generation" and r["group"] == "gd"]
    assert [(r["generation"], r["members"], r["mismatched_partitions"]) for r in gd] == [(1, ["d1"], 0)], gd
