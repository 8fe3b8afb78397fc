"""The whole job on this machine against a local Apache Kafka broker (issue 4 benchmark), side by side in one run:

1. read-rate ceiling: a plain confluent-kafka consumer draining the topic, twice: with librdkafka's defaults (the
   figure this benchmark always gave), and with the one setting the job's Python source changes
   (`fetch.queue.backoff.ms`, see spark/kafka_source/options.py; with the default a fast reader waits ~1 s
   whenever librdkafka's queue is full, so the default consumer waits on the fetcher, not on Python);
2. events/s through the whole job (decode, per-group state machine, sinks) over the same topic, with each of the job's
   readers (`--readers`: the Python source, Spark's connector with the JVM stages) one after the other, and the
   batches' split between their two stages (read and decode; the stateful step) from Spark's event log
   (spark_stages.py);
3. end-to-end delay from an event's produce time to its output record (5 s trigger);
4. how long after its deadline a session timeout is reported, with the whole input idle (5 s trigger).

Usage: python bench/bench_job.py [--events 3000000] [--per-trigger 500000] [--groups 500] [--members 20] [--partitions 4]
       python bench/bench_job.py --latency-only [--samples 3]   (parts 3 and 4 only: about three minutes, light on CPU)
       python bench/bench_job.py --throughput-only --jit full   (parts 1 and 2, the JVMs' compiler as the JVM's default)
       python bench/bench_job.py --throughput-only --driver-memory 2g   (the local JVM's heap: Spark's default is 1g)
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from bench_core import workload
from proc_tree import PeakRss, descendants, kind_of
from spark_stages import by_kind, event_log_conf, stage_times

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.job import StreamingQueryJob
from rebalance_monitor.spark.kafka_source.options import FETCH_QUEUE_BACKOFF_MS
from rebalance_monitor.spark.session import build_session
from rebalance_monitor.testing.broker import Broker


def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 1_000_000})
    for i, v in enumerate(values):
        while True:
            try:
                p.produce(topic, v, key=None, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    p.flush(120)


def drain_plain(bootstrap: str, topic: str, partitions: int, expected: int, **conf) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-plain", "enable.auto.commit": False, **conf})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    n = 0
    t0 = time.perf_counter()
    while n < expected and time.perf_counter() - t0 < 300:
        for m in c.consume(10000, timeout=1.0):
            if not m.error():
                n += 1
    dt = time.perf_counter() - t0
    c.close()
    return n / dt


def cfg_for(bootstrap, topic, work, trigger="5s", **extra):
    return load_config(env={}, overrides={
        "kafka.bootstrap_servers": bootstrap, "kafka.events_topic": topic, "kafka.starting_offsets": "earliest",
        "kafka.connector": "python", "kafka.max_offsets_per_trigger": 2_000_000,
        "state.checkpoint_location": os.path.join(work, f"ck-{topic}"), "exporter.enabled": False,
        "sinks.history.parquet_path": os.path.join(work, f"h-{topic}"),
        "sinks.dead_letter.path": os.path.join(work, f"d-{topic}"), "spark.trigger_interval": trigger, **extra})


def count_batch_reads(job) -> dict[int, int]:
    """The Kafka records each batch of `job` read ({batch id: records}, filled as batches run): the job's
    foreachBatch wrapped, before `job.start()`."""
    read: dict[int, int] = {}
    counted = job.process_batch

    def process_batch(df, batch_id):
        before = job.stats.records_read
        counted(df, batch_id)
        read[batch_id] = job.stats.records_read - before

    job.process_batch = process_batch
    return read


def tree_cpu_s() -> dict[str, float]:
    """CPU seconds used so far by this process's live descendants of a Spark job, by kind (proc_tree.KINDS: in
    local mode the driver JVM, where the tasks run, and the Python workers); the broker is none."""
    out = {"driver JVM": 0.0, "Python workers": 0.0}
    for p in descendants():
        kind = kind_of(p.cmd)
        if kind is not None:
            out[kind] = out.get(kind, 0.0) + p.cpu_s
    return out


def job_throughput(spark, bootstrap, topic, work, n: int, per_trigger: int, connector: str = "python") -> dict:
    """The job as it runs in production (5 s processing-time trigger) on a backlog of `n` events, at most
    `per_trigger` per micro-batch. Sustained rate: rows / trigger-execution time over the batches after the
    first (which also starts Python workers and opens state)."""
    # the driver's whole path, as `rebalance-monitor run` has it: the metrics updater behind the exporter
    # (its HTTP server not started: nobody scrapes) and its snapshot written after every batch
    from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter

    exporter = MetricsExporter(ExporterSettings(port=0))
    job = StreamingQueryJob(cfg_for(bootstrap, topic, work, **{"kafka.max_offsets_per_trigger": per_trigger,
                                                         "kafka.connector": connector}),
                     spark=spark, updater=exporter.updater, idle_clock=False)
    read = count_batch_reads(job)
    t0 = time.perf_counter()
    cpu0 = tree_cpu_s()
    with PeakRss() as peak:
        q = job.start()
        batches: dict[int, dict] = {}
        deadline = time.time() + 1800
        while time.time() < deadline and job.stats.records_read < n:
            time.sleep(0.5)
    wall = time.perf_counter() - t0
    cpu1, read_all = tree_cpu_s(), job.stats.records_read
    cpu = {k: cpu1[k] - cpu0.get(k, 0.0) for k in cpu1}
    # the last batch's progress is posted once its foreachBatch has returned: wait for it
    wait_until = time.time() + 30
    while time.time() < wait_until:
        for p in q.recentProgress:
            batches[p["batchId"]] = p
        if all(b in batches for b in read) and sum(read.values()) >= read_all:
            break
        time.sleep(0.2)
    job.stop()
    # Kafka records per batch: what the batch's decoded rows say (numInputRows counts packed rows)
    data = [(batches[b], read[b]) for b in sorted(batches) if read.get(b)]
    steady = data[1:]  # the first batch starts the Python workers: a drain of one batch has no steady rate (nan)
    rows = sum(r for _, r in steady)
    secs = sum(p["durationMs"]["triggerExecution"] for p, _ in steady) / 1000.0
    return {"rows": sum(r for _, r in data), "batches": len(data), "wall_s": wall, "cpu_s": cpu, "read": read_all,
            "peak_rss_mb": peak.peak_mb,
            "steady_rate": rows / secs if secs else float("nan"),
            "first": (data[0][1], data[0][0]["durationMs"]["triggerExecution"] / 1000.0) if data else None,
            "query_id": q.id, "steady_batches": [p["batchId"] for p, _ in steady], "steady_rows": rows,
            "per_batch": [(r, p["durationMs"]["triggerExecution"] / 1000.0,
                           p["durationMs"].get("queryPlanning", 0) / 1000.0) for p, r in data]}


def latency(spark, broker, work, samples: int = 3, variant: str = "plain") -> tuple[float, dict]:
    """(produce-to-record delay of a generation in s, {group: timeout reported after its deadline in s}).

    `samples` groups, each one member with a 10 s session that goes silent after one heartbeat; their
    deadlines are spread over one trigger interval so the figures cover the trigger phase; and one group
    with a 30 s session, whose deadline comes long after the input went quiet. `variant`: "plain" (the Python
    Kafka source), "connector" (Spark's own Kafka connector, var/spark-jars), or "restart" (25 s sessions; the
    driver stops once the groups' generations are out and a new one starts on the same checkpoint, so the
    deadlines pass right after the restart: the printout says how long after)."""
    topic = f"bench-latency-{variant}"
    broker.create_topics({topic: 1})
    seen: dict[tuple, float] = {}

    def on_records(_b, recs, _d):
        for r in recs:
            if r["kind"] in ("generation", "member_timeout") and (r["kind"], r["group"]) not in seen:
                seen[(r["kind"], r["group"])] = time.time()

    extra = {"state.watermark_delay": "2s"}
    if variant == "connector":
        extra.update({"kafka.connector": "spark"})
    cfg = cfg_for(broker.bootstrap, topic, work, trigger="5s", **extra)
    job = StreamingQueryJob(cfg, spark=spark, on_records=on_records)
    job.start()
    # a long-running job is warm: let a first event go through (Python workers, state store) before measuring
    now = int(time.time() * 1000)
    produce(broker.bootstrap, topic, [json.dumps({"v": 1, "type": "join", "ts": now, "group": "warm-up",
                                                  "member_id": "w", "protocols": ["range"], "topics": ["t"]}).encode()], 1)
    t_warm = time.time() + 120
    while time.time() < t_warm and job.stats.records_read < 1:
        time.sleep(0.2)
    time.sleep(6)
    deadlines: dict[str, float] = {}
    produced: dict[str, float] = {}
    for i in range(samples + 1):
        # the last sample: a 30 s session (the input has been quiet long before its deadline)
        group, session = (f"lat-{i}", 25_000 if variant == "restart" else 10_000) if i < samples else ("lat-30s", 30_000)
        now = int(time.time() * 1000)
        evs = [{"v": 1, "type": "join", "ts": now, "group": group, "member_id": "a", "protocols": ["range"],
                "topics": ["t"], "session_timeout_ms": session, "rebalance_timeout_ms": 30_000},
               {"v": 1, "type": "sync", "ts": now + 5, "group": group, "member_id": "a", "generation": 1,
                "protocol": "range", "leader": "a", "assignment": [["t", 0]]},
               {"v": 1, "type": "heartbeat", "ts": now + 10, "group": group, "member_id": "a", "generation": 1,
                "error": None}]
        produce(broker.bootstrap, topic, [json.dumps(e).encode() for e in evs], 1)
        produced[group] = time.time()
        deadlines[group] = (now + 10 + session) / 1000.0  # last heartbeat + session timeout
        time.sleep(5.0 / samples)
    if variant == "restart":
        t_gen = time.time() + 60
        while time.time() < t_gen and sum(("generation", g) in seen for g in produced) < len(produced):
            time.sleep(0.2)
        job.stop()
        stopped = time.time()
        job = StreamingQueryJob(cfg, spark=spark, on_records=on_records)
        job.start()
        print(f"  driver restarted: stopped {stopped - max(produced.values()):.1f} s after the last produce, "
              f"started again {time.time() - stopped:.1f} s later; first deadline "
              f"{min(deadlines.values()) - time.time():.1f} s after that", flush=True)
    t_end = time.time() + 120
    while time.time() < t_end and sum(k[0] == "member_timeout" for k in seen) < samples + 1:
        time.sleep(0.2)
    job.stop()
    gen_delay = max(seen.get(("generation", g), float("nan")) - produced[g] for g in produced)
    return gen_delay, {g: seen.get(("member_timeout", g), float("nan")) - d for g, d in deadlines.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=3_000_000)
    ap.add_argument("--groups", type=int, default=500)
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--per-trigger", default="2000000",
                    help="kafka.max_offsets_per_trigger (the job's default: 2,000,000); several, comma-separated, "
                         "run side by side")
    ap.add_argument("--shuffle-partitions", type=int, default=2, help="state partitions (one per core here)")
    ap.add_argument("--latency-only", action="store_true", help="skip the throughput part (1 and 2)")
    ap.add_argument("--throughput-only", action="store_true", help="skip the latency part (3 and 4)")
    ap.add_argument("--jit", choices=("quick", "full"), default="quick",
                    help="spark.jit: the JVM's compiler (quick: C1 only, the job's default; full: the JVM's default)")
    ap.add_argument("--driver-memory", default=None,
                    help="the local JVM's heap (spark.driver.memory; default: Spark's own, 1g)")
    ap.add_argument("--samples", type=int, default=3, help="groups with a 10 s session in the latency part")
    ap.add_argument("--readers", default="python,spark",
                    help="the job's readers for the throughput part, side by side (kafka.connector)")
    ap.add_argument("--variants", default="plain,restart,connector",
                    help="latency variants: plain (Python source), restart (driver restart), connector (Spark's)")
    args = ap.parse_args()
    heap = {"spark.driver.memory": args.driver_memory} if args.driver_memory else {}
    work = tempfile.mkdtemp(prefix="bench-job-")
    with Broker(log_path=os.path.join(work, "broker.log")) as broker:
        if args.latency_only:
            spark = build_session(master="local[2]", local_dir=os.path.join(work, "spark"),
                                  shuffle_partitions=args.shuffle_partitions, jars=connector_jars(args.variants),
                                  jit=args.jit, extra_conf=heap)
            for variant in args.variants.split(","):
                report_latency(variant, *latency(spark, broker, work, args.samples, variant))
            spark.stop()
            return
        topic = "bench-events"
        broker.create_topics({topic: args.partitions})
        values = [json.dumps(e, separators=(",", ":")).encode() for e in workload(args.groups, args.members, args.events)]
        t0 = time.perf_counter()
        produce(broker.bootstrap, topic, values, args.partitions)
        print(f"produced {len(values):,} events in {time.perf_counter() - t0:.1f} s", flush=True)
        plain = drain_plain(broker.bootstrap, topic, args.partitions, len(values))
        tuned = drain_plain(broker.bootstrap, topic, args.partitions, len(values),
                            **{"fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS})
        wanted = args.variants + (",connector" if "spark" in args.readers.split(",") else "")
        log_dir = os.path.join(work, "event-log")  # Spark's own, for the stages' split (spark_stages.py)
        spark = build_session(master="local[2]", local_dir=os.path.join(work, "spark"),
                              shuffle_partitions=args.shuffle_partitions, jars=connector_jars(wanted), jit=args.jit,
                              extra_conf={**event_log_conf(log_dir), **heap})
        print(f"plain confluent consumer, librdkafka defaults   : {plain:12,.0f} records/s")
        print(f"plain confluent consumer, the source's settings : {tuned:12,.0f} records/s "
              f"(fetch.queue.backoff.ms={FETCH_QUEUE_BACKOFF_MS})", flush=True)
        runs = [(reader, int(per)) for per in args.per_trigger.split(",") for reader in args.readers.split(",")]
        for reader, per in runs:
            r = job_throughput(spark, broker.bootstrap, topic, os.path.join(work, f"tp-{reader}-{per}"), len(values),
                               per, connector=reader)
            name = "the Python source" if reader == "python" else "Spark's connector"
            print(f"whole job, 5 s trigger, {per:,} events a trigger at most, {name}: "
                  f"{r['steady_rate']:12,.0f} events/s sustained "
                  f"({r['steady_rate'] / plain:.2f}x of the default consumer, {r['steady_rate'] / tuned:.2f}x of the "
                  "tuned one; batches after the first)")
            print(f"  {r['rows']:,} events in {r['batches']} batches, {r['wall_s']:.1f} s wall from start "
                  f"({r['read'] / r['wall_s']:,.0f} events/s drained over the wall clock, the trigger's waits "
                  f"included); first batch {r['first'][0]:,} rows in {r['first'][1]:.1f} s; peak resident memory "
                  f"of the Spark JVM and its Python workers {r['peak_rss_mb'] / 1024:.1f} GiB")
            cpu, read = sum(r["cpu_s"].values()), r["read"]
            print(f"  CPU of the job's processes over the whole run, start-up included: {cpu:.1f} s = "
                  f"{cpu / read * 1e6:.1f} us/event (JVM {r['cpu_s']['driver JVM'] / read * 1e6:.1f}, Python "
                  f"workers {r['cpu_s']['Python workers'] / read * 1e6:.1f}; spark.jit={args.jit}; machine load "
                  f"{os.getloadavg()[0]:.1f})")
            print("  per batch (rows, s, of which planning s): " +
                  ", ".join(f"({n:,}, {d:.1f}, {pl:.1f})" for n, d, pl in r["per_batch"]), flush=True)
            report_stages(stage_times(log_dir, r["query_id"]), r["steady_batches"], r["steady_rows"])
        for variant in [] if args.throughput_only else args.variants.split(","):
            report_latency(variant, *latency(spark, broker, work, variant=variant))
        spark.stop()


def report_stages(stages, batches, events: int) -> None:
    """The batches after the first, stage by stage (Spark's event log, spark_stages.py)."""
    kinds = by_kind(stages, batches)
    if not kinds or not events:
        print("  stages: none in Spark's event log")
        return
    print("  the batches after the first, per stage (wall s; tasks' run time s; their JVM CPU s; per event): " +
          "; ".join(f"{k.kind} {k.wall_s:.1f}, {k.task_s:.1f}, {k.jvm_cpu_s:.1f} ({k.task_s / events * 1e6:.1f} us "
                    f"task time, {k.jvm_cpu_s / events * 1e6:.1f} us JVM CPU)"
                    for k in sorted(kinds.values(), key=lambda k: k.kind)), flush=True)


def connector_jars(variants: str) -> list[str]:
    """Spark's Kafka connector jars (var/spark-jars, scripts/fetch_spark_jars.sh) if a variant needs them."""
    if "connector" not in variants.split(","):
        return []
    from rebalance_monitor.config import jar_files

    return jar_files(os.path.join(os.path.dirname(__file__), "..", "var", "spark-jars"))


def report_latency(variant: str, gen_delay: float, timeouts: dict) -> None:
    print(f"[{variant}] produce -> generation record delay: {gen_delay:.1f} s (worst of {len(timeouts)}; 5 s "
          f"trigger, 2 s watermark delay)")
    short = [t for g, t in timeouts.items() if g != "lat-30s"]
    sessions = "25 s sessions" if variant == "restart" else "10 s sessions"
    print(f"[{variant}] session timeouts reported after their deadlines, input idle: {sessions} " +
          ", ".join(f"{t:.1f} s" for t in short) + f"; 30 s session {timeouts['lat-30s']:.1f} s (target: within "
          f"2 triggers = 10 s)", flush=True)


if __name__ == "__main__":
    main()
