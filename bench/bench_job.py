"""The whole job on this machine against the bundled broker (issue 4 benchmark), side by side in one run:

1. read-rate ceiling: a plain confluent-kafka consumer draining the topic;
2. events/s through the whole job (decode, per-group state machine, sinks) over the same topic;
3. end-to-end delay from an event's produce time to its output record (5 s trigger);
4. how long after its deadline a session timeout is reported, with the whole input idle (5 s trigger).

Usage: python bench/bench_job.py [--events 1000000] [--groups 500] [--members 20] [--partitions 4]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_core import workload  # noqa: E402

from rebalance_monitor.config import load_config  # noqa: E402
from rebalance_monitor.spark.job import MonitorJob  # noqa: E402
from rebalance_monitor.spark.session import build_session  # noqa: E402
from rebalance_monitor.testing.broker import Broker  # noqa: E402


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


def drain_plain(bootstrap: str, topic: str, partitions: int, expected: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-plain", "enable.auto.commit": False})
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


def job_throughput(spark, bootstrap, topic, work, n: int) -> tuple[float, int]:
    job = MonitorJob(cfg_for(bootstrap, topic, work), spark=spark, idle_clock=False)
    t0 = time.perf_counter()
    q = job.start(available_now=True)
    q.awaitTermination()
    dt = time.perf_counter() - t0
    rows = sum(p.get("numInputRows", 0) for p in q.recentProgress)
    job.stop()
    return n / dt, rows


def latency(spark, broker, work) -> tuple[float, float]:
    """(produce-to-record delay of a generation in s, timeout reported after its deadline in s)."""
    topic = "bench-latency"
    broker.create_topics({topic: 1})
    seen: dict[str, float] = {}

    def on_records(_b, recs, _d):
        for r in recs:
            if r["kind"] in ("generation", "member_timeout") and r["kind"] not in seen:
                seen[r["kind"]] = time.time()

    job = MonitorJob(cfg_for(broker.bootstrap, topic, work, trigger="5s", **{"state.watermark_delay": "2s"}),
                     spark=spark, on_records=on_records)
    job.start()
    time.sleep(8)
    now = int(time.time() * 1000)
    evs = [{"v": 1, "type": "join", "ts": now, "group": "lat", "member_id": "a", "protocols": ["range"],
            "topics": ["t"], "session_timeout_ms": 10_000, "rebalance_timeout_ms": 30_000},
           {"v": 1, "type": "sync", "ts": now + 5, "group": "lat", "member_id": "a", "generation": 1,
            "protocol": "range", "leader": "a", "assignment": [["t", 0]]},
           {"v": 1, "type": "heartbeat", "ts": now + 10, "group": "lat", "member_id": "a", "generation": 1,
            "error": None}]
    produced_at = time.time()
    produce(broker.bootstrap, topic, [json.dumps(e).encode() for e in evs], 1)
    deadline_wall = produced_at + 10.0  # last heartbeat + session timeout
    t_end = time.time() + 90
    while time.time() < t_end and "member_timeout" not in seen:
        time.sleep(0.2)
    job.stop()
    gen_delay = seen.get("generation", float("nan")) - produced_at
    timeout_delay = seen.get("member_timeout", float("nan")) - deadline_wall
    return gen_delay, timeout_delay


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=500)
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=4)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-job-")
    with Broker(log_path=os.path.join(work, "broker.log")) as broker:
        topic = "bench-events"
        broker.create_topics({topic: args.partitions})
        values = [json.dumps(e, separators=(",", ":")).encode() for e in workload(args.groups, args.members, args.events)]
        t0 = time.perf_counter()
        produce(broker.bootstrap, topic, values, args.partitions)
        print(f"produced {len(values):,} events in {time.perf_counter() - t0:.1f} s", flush=True)
        plain = drain_plain(broker.bootstrap, topic, args.partitions, len(values))
        spark = build_session(master="local[2]", local_dir=os.path.join(work, "spark"),
                              shuffle_partitions=args.partitions)
        # warm up (JVM, Python workers) on a small topic so the figure is the steady rate
        broker.create_topics({"bench-warmup": 1})
        produce(broker.bootstrap, "bench-warmup", values[:2000], 1)
        job_throughput(spark, broker.bootstrap, "bench-warmup", work, 2000)
        rate, rows = job_throughput(spark, broker.bootstrap, topic, work, len(values))
        print(f"plain confluent consumer : {plain:12,.0f} records/s (read-rate ceiling)")
        print(f"whole job (availableNow) : {rate:12,.0f} events/s ({rate / plain:.2f}x of the ceiling; "
              f"{rows:,} input rows incl. clock rows)")
        gen_delay, timeout_delay = latency(spark, broker, work)
        print(f"produce -> generation record delay: {gen_delay:.1f} s (5 s trigger, 2 s watermark delay)")
        print(f"session timeout reported {timeout_delay:.1f} s after its deadline, input idle "
              f"(target: within 2 triggers = 10 s)")
        spark.stop()


if __name__ == "__main__":
    main()
