"""Soak: the real job under a mixed workload for a bounded time, sampling memory, state size and batch
duration; they should stay flat. Not part of CI (run it on its own: `python bench/soak.py --minutes 20`).

Runs on Apache Kafka (testing.broker: one KRaft node); the broker's JVM is sampled apart from Spark's, and the
machine's load average beside each sample (the figures are only comparable at a similar load).

Workload: real consumer-group scenarios in a loop (storm, crash, rolling restart, steady) plus a synthetic
heartbeat stream for many groups with member churn, so state keeps being created and pruned.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time

from proc_tree import descendants

from rebalance_monitor.config import load_config
from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter
from rebalance_monitor.spark.job import StreamingQueryJob
from rebalance_monitor.spark.session import build_session
from rebalance_monitor.testing.broker import Broker, free_port


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def jvm_pids(exclude: int | None = None) -> list[int]:
    """Spark's JVM (the driver) under this process; `exclude`: the Kafka broker's, sampled on its own."""
    return [p.pid for p in descendants() if p.ppid == os.getpid() and b"java" in p.cmd and p.pid != exclude]


def python_worker_pids() -> list[int]:
    """Spark's Python workers (the daemon's forks and the streaming source runners) under this process."""
    return [p.pid for p in descendants() if b"pyspark" in p.cmd]


def synthetic(bootstrap: str, topic: str, stop: threading.Event, groups: int = 300, rate: int = 3000) -> None:
    """Heartbeats for `groups` groups with churn: members come and go, groups are renamed over time."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    rng = random.Random(5)
    gen = {}
    epoch = 0
    while not stop.is_set():
        t0 = time.time()
        now = int(t0 * 1000)
        epoch += 1
        for _ in range(rate // 10):
            g = f"soak-{rng.randrange(groups)}-{epoch // 600}"  # new group names every ~minute
            m = f"{g}-m{rng.randrange(8)}"
            if g not in gen:
                gen[g] = 1
                for i in range(8):
                    mid = f"{g}-m{i}"
                    p.produce(topic, json.dumps({"v": 1, "type": "join", "ts": now, "group": g, "member_id": mid,
                                                 "protocols": ["range"], "topics": ["t"], "session_timeout_ms": 45000,
                                                 "rebalance_timeout_ms": 300000}).encode())
                    p.produce(topic, json.dumps({"v": 1, "type": "sync", "ts": now + 1, "group": g, "member_id": mid,
                                                 "generation": 1, "protocol": "range", "leader": f"{g}-m0",
                                                 "assignment": [["t", i]]}).encode())
            p.produce(topic, json.dumps({"v": 1, "type": "heartbeat", "ts": now, "group": g, "member_id": m,
                                         "generation": gen[g], "error": None}).encode())
            try:
                p.poll(0)
            except BufferError:
                p.flush(5)
        stop.wait(max(0.0, 0.1 - (time.time() - t0)))
    p.flush(10)


def scenarios(bootstrap: str, topic: str, stop: threading.Event) -> None:
    from rebalance_monitor.workload import run_scenario

    names = ["storm", "crash", "rolling_restart", "steady"]
    i = 0
    while not stop.is_set():
        try:
            run_scenario(names[i % len(names)], bootstrap, topic)
        except Exception as exc:  # noqa: BLE001
            print(f"scenario {names[i % len(names)]} failed: {exc}", file=sys.stderr)
        i += 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=20)
    ap.add_argument("--sample-s", type=float, default=30)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="soak-")
    with Broker(log_path=os.path.join(work, "broker.log")) as broker:
        topic = "soak-events"
        broker.create_topics({topic: 2})
        # group names rotate: the exporter forgets idle groups after the same TTL as the job's state
        exporter = MetricsExporter(ExporterSettings(port=free_port(), idle_group_ttl_s=180)).start()
        cfg = load_config(env={}, overrides={
            "kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": topic,
            "kafka.connector": "python", "kafka.starting_offsets": "earliest",
            "state.checkpoint_location": os.path.join(work, "ck"), "state.group_idle_ttl": "3m",
            "sinks.history.parquet_path": os.path.join(work, "h"), "sinks.dead_letter.path": os.path.join(work, "d"),
            "spark.trigger_interval": "5s", "spark.local_dir": os.path.join(work, "spark")})
        spark = build_session(local_dir=os.path.join(work, "spark"))
        job = StreamingQueryJob(cfg, spark=spark, updater=exporter.updater)
        q = job.start()
        stop = threading.Event()
        threads = [threading.Thread(target=synthetic, args=(broker.bootstrap, topic, stop), daemon=True),
                   threading.Thread(target=scenarios, args=(broker.bootstrap, topic, stop), daemon=True)]
        for t in threads:
            t.start()
        print(f"{'min':>5} {'driver MB':>10} {'JVM MB':>8} {'workers MB':>10} {'state rows':>11} {'batch ms':>9} "
              f"{'read':>9} {'records':>9} {'exported groups':>15} {'broker MB':>9} {'load':>5}", flush=True)
        samples = []
        t_end = time.time() + args.minutes * 60
        t_start = time.time()
        while time.time() < t_end:
            time.sleep(args.sample_s)
            lp = q.lastProgress or {}
            ops = lp.get("stateOperators") or [{}]
            jvm = sum(rss_mb(p) for p in jvm_pids(exclude=broker.proc.pid))
            workers = sum(rss_mb(p) for p in python_worker_pids())
            row = ((time.time() - t_start) / 60, rss_mb(os.getpid()), jvm, ops[0].get("numRowsTotal"),
                   (lp.get("durationMs") or {}).get("triggerExecution"), job.stats.records_read,
                   sum(job.stats.records.values()), workers, len(exporter.updater.groups), rss_mb(broker.proc.pid),
                   os.getloadavg()[0])
            samples.append(row)
            print(f"{row[0]:5.1f} {row[1]:10.0f} {row[2]:8.0f} {row[7]:10.0f} {str(row[3]):>11} {str(row[4]):>9} "
                  f"{row[5]:9d} {row[6]:9d} {row[8]:15d} {row[9]:9.0f} {row[10]:5.1f}", flush=True)
        stop.set()
        for t in threads:
            t.join(timeout=120)
        job.stop()
        spark.stop()
        exporter.stop()
        half = len(samples) // 2
        if half:
            def avg(i, part):
                vals = [s[i] for s in part if isinstance(s[i], (int, float))]
                return sum(vals) / len(vals) if vals else float("nan")
            for i, name in ((1, "driver MB"), (2, "JVM MB"), (7, "Python workers MB"), (3, "state rows"),
                            (8, "exported groups"), (4, "batch ms"), (9, "broker MB"), (10, "load average")):
                print(f"{name}: first half {avg(i, samples[:half]):.0f}, second half {avg(i, samples[half:]):.0f}")


if __name__ == "__main__":
    main()
