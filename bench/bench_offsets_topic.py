"""The `__consumer_offsets` path through the whole job under a heavy offset-commit load on Apache Kafka, side
by side with a plain consumer reading the same topic (issue 14 benchmark; not a test).

1. commit load: `--groups` groups, each a confluent-kafka consumer with a manual assignment of the data
   topic's partitions, committing offsets for all of them `--commits` times (each commit writes one
   OffsetCommit record per partition into __consumer_offsets), plus one real rebalancing group;
2. a plain confluent-kafka consumer drains __consumer_offsets (no group: assign + read to the end);
3. the job (`kafka.offsets_topic: __consumer_offsets`, 5 s trigger) drains the same records: decode,
   per-group state machine, sinks; its rate over the batches after the first; with each reader in turn (the
   Python source; Spark's connector, whose rows have their offset commits compacted in the JVM).

    .venv/bin/python bench/bench_offsets_topic.py [--groups 50] [--commits 15000] [--partitions 8]
                                                  [--readers python,spark] [--per-trigger 500000,2000000]
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from bench_job import connector_jars, count_batch_reads, tree_cpu_s
from proc_tree import PeakRss

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.job import StreamingQueryJob
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


def plain_drain(bootstrap: str, topic: str, **conf) -> tuple[int, float]:
    """(records, seconds) for a plain confluent-kafka consumer reading `topic` from the start to its end (`conf`:
    settings over librdkafka's defaults)."""
    import confluent_kafka as ck

    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-plain-unused", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "log_level": 3, **conf})
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


def job_drain(spark, bootstrap: str, work: str, want: int, connector: str = "python",
              per_trigger: int = 2_000_000) -> dict:
    """The job (5 s trigger, `per_trigger` records a batch at most: kafka.max_offsets_per_trigger) over `__consumer_offsets` from its start until it has
    read `want` records. Steady rate: the Kafka records of the batches after the first (which also starts the
    Python workers and opens state) over their trigger-execution time."""
    cfg = load_config(env={}, overrides={
        "kafka.bootstrap_servers": bootstrap, "kafka.events_topic": "", "kafka.offsets_topic": "__consumer_offsets",
        "kafka.offsets_topic_partitions": int(TEST_BROKER_SETTINGS["offsets.topic.num.partitions"]),
        "kafka.starting_offsets": "earliest", "kafka.connector": connector, "kafka.max_offsets_per_trigger": per_trigger,
        "state.checkpoint_location": os.path.join(work, "ck"), "sinks.history.parquet_path": os.path.join(work, "h"),
        "sinks.dead_letter.path": os.path.join(work, "d"), "spark.trigger_interval": "5s", "exporter.enabled": False})
    job = StreamingQueryJob(cfg, spark=spark, idle_clock=False)
    read = count_batch_reads(job)  # Kafka records per batch (numInputRows counts the decoded, packed rows)
    t0 = time.perf_counter()
    cpu0 = tree_cpu_s()
    with PeakRss() as peak:
        q = job.start()
        deadline = time.time() + 1800
        while time.time() < deadline and job.stats.records_read < want:
            time.sleep(0.5)
    wall = time.perf_counter() - t0
    cpu1 = tree_cpu_s()  # CPU seconds by process kind (bench_job.tree_cpu_s); their sum is the job's
    cpu = sum(cpu1.values()) - sum(cpu0.values())
    progress = {p["batchId"]: p for p in q.recentProgress}
    job.stop()
    per_batch = [(read[b], progress[b]["durationMs"]["triggerExecution"] / 1000.0) for b in sorted(read)
                 if read[b] and b in progress]
    steady = per_batch[1:]  # the first batch starts the Python workers and JIT-compiles: not steady; one batch
    secs = sum(d for _, d in steady)  # alone gives no steady rate (nan: say --commits is too small to have one)
    return {"records": job.stats.records_read, "wall_s": wall, "cpu_s": cpu, "batches": len(per_batch),
            "peak_rss_mb": peak.peak_mb,
            "steady_rate": sum(r for r, _ in steady) / secs if secs else float("nan"), "per_batch": per_batch}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--commits", type=int, default=15000,
                    help="commits per group: 15,000 x 50 groups x 8 partitions is three batches of 2,000,000 records "
                         "(a steady rate needs batches after the first)")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--readers", default="python,spark", help="the job's readers, side by side (kafka.connector)")
    ap.add_argument("--jit", choices=("quick", "full"), default="quick",
                    help="spark.jit: the JVM's compiler (quick: C1 only, the job's default; full: the JVM's default)")
    ap.add_argument("--per-trigger", default="2000000",
                    help="kafka.max_offsets_per_trigger, one job per value and reader, side by side (comma-separated)")
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
            from rebalance_monitor.spark.kafka_source.options import FETCH_QUEUE_BACKOFF_MS

            n_tuned, secs = plain_drain(broker.bootstrap, "__consumer_offsets",
                                        **{"fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS})
            tuned = n_tuned / secs
            print(f"plain confluent-kafka consumer tuned as the job's source (fetch.queue.backoff.ms="
                  f"{FETCH_QUEUE_BACKOFF_MS}): {tuned:,.0f} records/s", flush=True)
            from rebalance_monitor.spark.session import build_session

            spark = build_session(master="local[2]", app_name="bench-offsets", local_dir=os.path.join(work, "spark"),
                                  shuffle_partitions=2, jit=args.jit,
                                  jars=connector_jars("connector") if "spark" in args.readers.split(",") else ())
            runs = [(reader, int(per)) for per in args.per_trigger.split(",") for reader in args.readers.split(",")]
            for reader, per in runs:
                res = job_drain(spark, broker.bootstrap, os.path.join(work, f"{reader}-{per}"), n, connector=reader,
                                per_trigger=per)
                name = {"python": "the Python source", "spark": "Spark's connector (commits compacted in the JVM)"}
                print(f"job over __consumer_offsets, {name.get(reader, reader)}, {per:,} records a trigger at most: "
                      f"{res['records']:,} records, "
                      f"{res['batches']} batches, wall {res['wall_s']:.1f} s (session warm), steady "
                      f"{res['steady_rate']:,.0f} records/s, CPU {res['cpu_s'] / max(res['records'], 1) * 1e6:.1f} "
                      "us/record over the job's processes", flush=True)
                if res["steady_rate"] != res["steady_rate"]:  # nan
                    print("  no steady rate: the drain took one batch (the first, with the workers' start); "
                          "raise --commits", flush=True)
                print(f"  ratio job/plain (steady): {res['steady_rate'] / plain:.2f}x of librdkafka's defaults, "
                      f"{res['steady_rate'] / tuned:.2f}x of the tuned consumer; whole drain incl. first batch: "
                      f"{res['records'] / res['wall_s'] / tuned:.2f}x of the tuned consumer; peers' published rates "
                      f"on 2 cores: KMinion 100-120k/s, Burrow 40-50k/s (steady: {res['steady_rate'] / 110_000:.1f}x "
                      "KMinion's)", flush=True)
                print(f"  drained over the wall clock (the trigger's waits included): "
                      f"{res['records'] / res['wall_s']:,.0f} records/s; peak resident memory of the Spark JVM and "
                      f"its Python workers {res['peak_rss_mb'] / 1024:.1f} GiB", flush=True)
                print("  per batch (records, s): " + ", ".join(f"({r:,}, {d:.1f})" for r, d in res["per_batch"]),
                      flush=True)
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
