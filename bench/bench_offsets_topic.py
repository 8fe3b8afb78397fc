"""The `__consumer_offsets` path through the whole job under a heavy offset-commit load on Apache Kafka, side
by side with a plain consumer reading the same topic (issue 14 benchmark; not a test).

1. commit load: `--groups` groups, each a confluent-kafka consumer with a manual assignment of the data
   topic's partitions, committing offsets for all of them `--commits` times (each commit writes one
   OffsetCommit record per partition into __consumer_offsets), plus one real rebalancing group;
2. a plain confluent-kafka consumer drains __consumer_offsets (no group: assign + read to the end);
3. the job (`kafka.offsets_topic: __consumer_offsets`, 5 s trigger) drains the same records: decode,
   per-group state machine, sinks; its rate over the batches after the first.

    .venv/bin/python bench/bench_offsets_topic.py [--groups 50] [--commits 2000] [--partitions 8]
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from bench_job import tree_cpu_s

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.job import MonitorJob
from rebalance_monitor.testing.broker import TEST_BROKER_SETTINGS, Broker


def commit_load(bootstrap: str, topic: str, groups: int, commits: int, partitions: int) -> int:
    """Offset commits of `groups` groups; returns the number of OffsetCommit records written."""
    import confluent_kafka as ck

    written = 0
    for g in range(groups):
        c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-commit-{g}", "enable.auto.commit": False,
                         "log_level": 3})
        tps = [ck.TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        for i in range(commits):
            c.commit(offsets=[ck.TopicPartition(topic, p, i + 1) for p in range(partitions)], asynchronous=True)
            if i % 200 == 199:
                c.poll(0)
        c.commit(offsets=[ck.TopicPartition(topic, p, commits + 1) for p in range(partitions)], asynchronous=False)
        c.close()
        written += (commits + 1) * partitions
    return written


def plain_drain(bootstrap: str, topic: str) -> tuple[int, float]:
    """(records, seconds) for a plain confluent-kafka consumer reading `topic` from the start to its end."""
    import confluent_kafka as ck

    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-plain-unused", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "log_level": 3})
    meta = c.list_topics(topic, timeout=30)
    parts = sorted(meta.topics[topic].partitions)
    ends = {p: c.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=30)[1] for p in parts}
    c.assign([ck.TopicPartition(topic, p, 0) for p in parts])
    want = sum(ends.values())
    n = 0
    t0 = time.perf_counter()
    while n < want:
        for m in c.consume(10000, timeout=1.0):
            if m.error() is None:
                n += 1
    secs = time.perf_counter() - t0
    c.close()
    return n, secs


def job_drain(spark, bootstrap: str, work: str, want: int, connector: str = "python") -> dict:
    cfg = load_config(env={}, overrides={
        "kafka.bootstrap_servers": bootstrap, "kafka.events_topic": "", "kafka.offsets_topic": "__consumer_offsets",
        "kafka.offsets_topic_partitions": int(TEST_BROKER_SETTINGS["offsets.topic.num.partitions"]),
        "kafka.starting_offsets": "earliest", "kafka.connector": connector, "kafka.max_offsets_per_trigger": 500_000,
        "state.checkpoint_location": os.path.join(work, "ck"), "sinks.history.parquet_path": os.path.join(work, "h"),
        "sinks.dead_letter.path": os.path.join(work, "d"), "spark.trigger_interval": "5s", "exporter.enabled": False})
    job = MonitorJob(cfg, spark=spark, idle_clock=False)
    t0 = time.perf_counter()
    cpu0 = tree_cpu_s()
    q = job.start()
    deadline = time.time() + 1800
    while time.time() < deadline and job.stats.records_read < want:
        time.sleep(0.5)
    wall = time.perf_counter() - t0
    cpu1 = tree_cpu_s()  # CPU seconds by process kind (bench_job.tree_cpu_s); their sum is the job's
    cpu = sum(cpu1.values()) - sum(cpu0.values())
    progress = list(q.recentProgress)
    job.stop()
    batches = [p for p in progress if p.get("numInputRows")]
    steady = batches[1:] or batches
    secs = sum(p["durationMs"]["triggerExecution"] for p in steady) / 1000.0
    rows_steady = job.stats.records_read - (_rows(batches[0]) if len(batches) > 1 else 0)
    return {"records": job.stats.records_read, "wall_s": wall, "cpu_s": cpu, "batches": len(batches),
            "steady_rate": rows_steady / secs if secs else float("nan")}


def _rows(progress: dict) -> int:
    return sum(int((s.get("metrics") or {}).get("records", 0) or 0) for s in progress.get("sources", [])) or \
        int(progress.get("numInputRows") or 0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--partitions", type=int, default=8)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-offsets-")
    try:
        with Broker(log_path=os.path.join(work, "broker.log")) as broker:
            broker.create_topics({"bench-data": args.partitions})
            t0 = time.perf_counter()
            written = commit_load(broker.bootstrap, "bench-data", args.groups, args.commits, args.partitions)
            load_s = time.perf_counter() - t0
            print(f"commit load: {written:,} OffsetCommit records from {args.groups} groups in {load_s:.1f} s "
                  f"({written / load_s:,.0f}/s)", flush=True)
            n, secs = plain_drain(broker.bootstrap, "__consumer_offsets")
            plain = n / secs
            print(f"plain confluent-kafka consumer: {n:,} records in {secs:.1f} s = {plain:,.0f} records/s", flush=True)
            from rebalance_monitor.spark.session import build_session

            spark = build_session(master="local[2]", app_name="bench-offsets", local_dir=os.path.join(work, "spark"),
                                  shuffle_partitions=2)
            res = job_drain(spark, broker.bootstrap, work, n)
            spark.stop()
            print(f"job over __consumer_offsets: {res['records']:,} records, {res['batches']} batches, wall "
                  f"{res['wall_s']:.1f} s (session warm), steady {res['steady_rate']:,.0f} records/s, "
                  f"CPU {res['cpu_s'] / max(res['records'], 1) * 1e6:.1f} us/record over the job's processes",
                  flush=True)
            print(f"ratio job/plain (steady): {res['steady_rate'] / plain:.2f}x; whole drain incl. first batch: "
                  f"{res['records'] / res['wall_s'] / plain:.2f}x", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
