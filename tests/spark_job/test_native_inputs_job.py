"""The Kafka-native inputs through the real job: broker coordinator log lines (as a log shipper writes them to a
topic, JSON-wrapped) and `__consumer_offsets` records (key and value bytes built from Kafka's schemas) on the
real broker; the job's records must equal `replay` of the same input, and bad records are dead-lettered."""
from __future__ import annotations

import json
import time

import pytest

import helpers.offsets_encoder as enc
from helpers.in_process_job import make_cfg, run_until_idle
from helpers.replay import comparable

from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.decoding.reference import decode_record
from rebalance_monitor.spark.job import StreamingQueryJob

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def log_lines(t0: float) -> list[bytes]:
    def at(s):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0 + s)) + f",{int((t0 + s) * 1000) % 1000:03d}"

    lines = [
        (0, "Preparing to rebalance group billing in state PreparingRebalance with old generation 7 "
            "(__consumer_offsets-31) (reason: Adding new member consumer-billing-2-77aa with group instance id None; "
            "client reason: need to re-join with the given member-id: consumer-billing-2-77aa)"),
        (2.5, "Stabilized group billing generation 8 (__consumer_offsets-31) with 2 members"),
        (2.6, "Assignment received from leader consumer-billing-1-11bb for group billing for generation 8. "
              "The group has 2 members, 0 of which are static."),
        (40, "Member consumer-billing-2-77aa in group billing has failed, removing it from the group"),
        (40.001, "Preparing to rebalance group billing in state PreparingRebalance with old generation 8 "
                 "(__consumer_offsets-31) (reason: removing member consumer-billing-2-77aa on heartbeat expiration)"),
        (43, "Stabilized group billing generation 9 (__consumer_offsets-31) with 1 members"),
        (43.1, "Assignment received from leader consumer-billing-1-11bb for group billing for generation 9. "
               "The group has 1 members, 0 of which are static."),
    ]
    out = []
    for s, text in lines:
        line = f"[{at(s)}] INFO [GroupCoordinator 1]: {text} (kafka.coordinator.group.GroupCoordinator)"
        out.append(json.dumps({"@timestamp": None, "message": line, "host": {"name": "broker-1"}}).encode())
    out.append(json.dumps({"message": "[2024-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Preparing to "
                                      "rebalance group x in state Garbled"}).encode())  # a coordinator line that fails
    out.append(b"[2024-01-01 00:00:00,000] INFO [LogCleaner] unrelated line (kafka.log.LogCleaner)")  # skipped
    return out


def offsets_records(t0_ms: int) -> list[tuple[bytes, bytes | None, int]]:
    def member(mid, parts):
        return {"member_id": mid, "client_id": f"client-{mid}", "client_host": "/10.1.1.1",
                "subscription": enc.consumer_subscription(1, ["orders"]),
                "assignment": enc.consumer_assignment(1, [("orders", p) for p in parts])}

    key = enc.group_metadata_key("payments")
    return [
        (key, enc.group_metadata_value(3, "consumer", 1, "range", "m1", [member("m1", [0, 1]), member("m2", [2, 3])]),
         t0_ms),
        (enc.offset_commit_key("payments", "orders", 0), enc.offset_commit_value(1, 42), t0_ms + 1000),
        (key, enc.group_metadata_value(3, "consumer", 2, "range", "m1", [member("m1", [0, 1, 2, 3])]), t0_ms + 30_000),
        (key, b"\x00\x03\x00", t0_ms + 31_000),  # truncated value
    ]


def replay(source, items, cfg):
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay))
    out, rejects = [], 0
    for key, value, ts in items:
        events, rej = decode_record(source, value, key, ts)
        rejects += len(rej)
        for ev in events:
            out.extend(recon.feed(ev))
    out.extend(recon.finish())
    return out, rejects


def test_coordinator_log_and_offsets_topic_through_the_job(spark, broker, unique, tmp_path):
    from confluent_kafka import Producer

    logs_topic, offsets_topic = f"broker-logs-{unique}", f"offsets-{unique}"
    broker.create_topics({logs_topic: 1, offsets_topic: 1, f"unused-{unique}": 1})
    t0 = time.time() - 300
    lines = log_lines(t0)
    recs = offsets_records(int(t0 * 1000))
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for value in lines:
        p.produce(logs_topic, value, timestamp=int(t0 * 1000))
    for key, value, ts in recs:
        p.produce(offsets_topic, value, key=key, timestamp=ts)
    p.flush(30)
    cfg = make_cfg(broker, f"unused-{unique}", tmp_path, **{"kafka.coordinator_log_topic": logs_topic,
                                                             "kafka.offsets_topic": offsets_topic})
    collected = []
    run_until_idle(spark, cfg, collected, flush_to=int(t0 * 1000) + 3_600_000 - 2000)
    records = [r for _, rs, _ in collected for r in rs]
    dead = [json.loads(d) for _, _, ds in collected for d in ds]
    exp_logs, rej_logs = replay("coordinator-log", [(None, v, int(t0 * 1000)) for v in lines], cfg)
    exp_offs, rej_offs = replay("offsets-topic", recs, cfg)
    # the logs and the offsets topic describe different groups: compare each group's records
    for group, expected in (("billing", exp_logs), ("payments", exp_offs)):
        got = [r for r in records if r["group"] == group and r["kind"] in ("generation", "member_timeout",
                                                                             "rebalance_started", "offsets_committed")]
        want = [r for r in expected if r["kind"] in ("generation", "member_timeout", "rebalance_started",
                                                     "offsets_committed")]
        assert comparable(got) == comparable(want), group
    billing = [r for r in records if r["group"] == "billing" and r["kind"] == "generation"]
    assert [g["generation"] for g in billing] == [8, 9]
    assert billing[1]["causes"][0]["cause"] == "session_timeout"
    payments = [r for r in records if r["group"] == "payments" and r["kind"] == "generation"]
    assert payments[-1]["assignment"] == {"m1": [["orders", 0], ["orders", 1], ["orders", 2], ["orders", 3]]}
    assert sorted(d["reason"].split(":")[0] for d in dead) == sorted(["unparsed_coordinator_line", "truncated"])
    assert rej_logs + rej_offs == len(dead)


def test_run_once_on_an_input_the_job_cannot_write_to(spark, broker, unique, tmp_path):
    """`run --once` over `__consumer_offsets` alone (here a copy): it writes nothing to its input (the
    job may not write there) and still ends with every group at the last event time, as replay does."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    offsets_topic = f"offsets-only-{unique}"
    broker.create_topics({offsets_topic: 1})
    t0_ms = int(time.time() * 1000) - 300_000
    recs = offsets_records(t0_ms)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for key, value, ts in recs:
        p.produce(offsets_topic, value, key=key, timestamp=ts)
    p.flush(30)
    cfg = make_cfg(broker, "", tmp_path, **{"kafka.offsets_topic": offsets_topic})
    collected = []
    job = StreamingQueryJob(cfg, spark=spark, on_records=lambda b, recs, dead: collected.append((b, recs, dead)))
    job.run_once(timeout_s=300)
    records = [r for _, rs, _ in collected for r in rs]
    expected, _ = replay("offsets-topic", recs, cfg)
    kinds = ("generation", "member_timeout", "rebalance_started", "offsets_committed")
    assert comparable([r for r in records if r["kind"] in kinds]) == \
        comparable([r for r in expected if r["kind"] in kinds])
    assert any(r["kind"] == "generation" for r in records)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"peek-{unique}"})
    try:
        _, high = c.get_watermark_offsets(TopicPartition(offsets_topic, 0), timeout=10)
    finally:
        c.close()
    assert high == len(recs)  # nothing was written to the input


def test_kip848_topic_ids_the_job_cannot_name_are_counted_and_exported(spark, broker, unique, tmp_path):
    """A KIP-848 assignment record naming a topic id that kafka.topic_ids cannot name (here `none`): the job uses
    it with the id, and counts it from the decode stage to the driver (JobStats) and the exporter
    (`rebalance_monitor_input_notes_total{reason="unresolved_topic_id"}`)."""
    from confluent_kafka import Producer

    from rebalance_monitor.metrics.updater import MetricsUpdater

    offsets_topic = f"offsets-ids-{unique}"
    broker.create_topics({offsets_topic: 1})
    tid = "00000000-0000-0000-0000-0000000000aa"
    t0_ms = int(time.time() * 1000) - 300_000
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i, member in enumerate(("m-1", "m-2")):
        p.produce(offsets_topic, enc.cg_current_assignment_value(3, 2, 0, [(tid, [i])]),
                  key=enc.group_key(8, "cg", member), timestamp=t0_ms + i)
    p.flush(30)
    cfg = make_cfg(broker, "", tmp_path, **{"kafka.offsets_topic": offsets_topic, "kafka.topic_ids": "none"})
    updater = MetricsUpdater()
    job = StreamingQueryJob(cfg, spark=spark, updater=updater)
    job.run_once(timeout_s=300)
    assert job.stats.unresolved_topic_ids == {tid: 2}
    line = [ln for ln in updater.render().splitlines() if ln.startswith("rebalance_monitor_input_notes_total{")]
    assert line == ['rebalance_monitor_input_notes_total{kafka_cluster="default",reason="unresolved_topic_id"} 2']
