"""The whole job on a Spark standalone cluster (two workers x one core, separate JVMs) vs local mode vs a plain
consumer, with both Kafka readers (Spark's connector and the project's Python source), side by side in one run
on one topic of one local Apache Kafka broker.

Each job run is `rebalance-monitor run` in its own process (local mode), or `spark-submit --deploy-mode client ...
run` against the cluster, over the same backlog, stopped (SIGTERM) once its checkpoint has committed the whole
topic. (`run --once` is not used: with Trigger.AvailableNow the job read the whole backlog in one batch.) Sustained rate: the events of the batches
after the first, over the time between the first and the last batch commit in the checkpoint (so JVM start-up,
Python worker start and the first batch's warm-up are left out). CPU per event: user+system CPU of each process
kind (driver JVM, driver Python, executor JVMs, Python workers; the master and worker daemons apart) over the
whole run, divided by the events.

Usage: python bench/bench_cluster.py [--events 600000] [--per-trigger 100000] [--groups 500] [--members 20]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from bench_core import workload
from bench_job import drain_plain, produce
from proc_tree import kind_of, process_table

from rebalance_monitor.spark.kafka_source.options import FETCH_QUEUE_BACKOFF_MS
from rebalance_monitor.testing.broker import Broker
from rebalance_monitor.testing.spark_cluster import StandaloneCluster

ROOT = Path(__file__).resolve().parents[1]
JARS = sorted((ROOT / "var" / "spark-jars").glob("*.jar"))
class CpuSampler:
    """CPU seconds per process kind of a set of process trees, sampled every 0.5 s (Python workers come and go:
    each one's last sample counts)."""

    def __init__(self, roots: list[int]):
        self.roots = roots
        self.last: dict[int, tuple[str, float]] = {}
        self.base: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        table = process_table()
        mine, frontier = set(self.roots) & set(table), set(self.roots) & set(table)
        while frontier:
            frontier = {p.pid for p in table.values() if p.ppid in frontier and p.pid not in mine}
            mine |= frontier
        for pid in mine:
            p = table[pid]
            k = kind_of(p.cmd)
            if k is not None:
                self.base.setdefault(pid, p.cpu_s if pid in self._preexisting else 0.0)
                self.last[pid] = (k, p.cpu_s)

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            self._sample()

    def __enter__(self) -> "CpuSampler":
        self._preexisting = set(process_table())  # the daemons' CPU before the run does not count
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def per_kind(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for pid, (k, cpu) in self.last.items():
            out[k] = out.get(k, 0.0) + cpu - self.base.get(pid, 0.0)
        return out


def sustained(query_dir: Path, topic: str) -> tuple[float, int, int]:
    """(events/s after the first batch, batches, events read) from the checkpoint's offsets and commits."""
    ends = {}
    for f in (query_dir / "offsets").glob("[0-9]*") if (query_dir / "offsets").exists() else []:
        lines = f.read_text().splitlines()
        total = 0
        for line in lines[2:]:
            try:
                src = json.loads(line)
            except ValueError:
                continue
            parts = src.get(topic) if isinstance(src, dict) else None
            if isinstance(parts, dict):
                total += sum(int(v) for v in parts.values())
        ends[int(f.name)] = total
    if not (query_dir / "commits").exists():
        return float("nan"), 0, 0
    commits = {int(f.name): f.stat().st_mtime for f in (query_dir / "commits").glob("[0-9]*")}
    batches = sorted(b for b in commits if b in ends)
    if len(batches) < 2:
        return float("nan"), len(batches), ends.get(batches[-1], 0) if batches else 0
    first, last = batches[0], batches[-1]
    rate = (ends[last] - ends[first]) / (commits[last] - commits[first])
    return rate, len(batches), ends[last]


def run_job(label: str, work: Path, bootstrap: str, topic: str, connector: str, per_trigger: int,
            cluster: StandaloneCluster | None, expected: int) -> dict:
    run_dir = work / label.replace(" ", "-").replace(",", "")
    run_dir.mkdir()
    settings = {
        "kafka": {"bootstrap_servers": bootstrap, "events_topic": topic, "starting_offsets": "earliest",
                  "max_offsets_per_trigger": per_trigger, "connector": connector},
        "spark": {"master": None if cluster else "local[2]", "shuffle_partitions": 2, "trigger_interval": "1s",
                  "local_dir": str(run_dir / "spark"),
                  "jars_dir": str(ROOT / "var" / "spark-jars") if connector == "spark" and not cluster else None},
        "state": {"checkpoint_location": str(run_dir / "ck"), "idle_clock": False},
        "sinks": {"history": {"parquet_path": str(run_dir / "history")}, "dead_letter": {"path": str(run_dir / "dlq")}},
        "exporter": {"enabled": False}, "lag": {"enabled": False},
    }
    cfg = run_dir / "monitor.yaml"
    cfg.write_text(yaml.safe_dump(settings))
    log = run_dir / "driver.log"
    t0 = time.perf_counter()
    roots = [p.pid for p in cluster._procs] if cluster else []
    if cluster:
        conf = {"spark.executor.memory": "1g", "spark.executor.cores": "1", "spark.cores.max": "2"}
        proc = cluster.submit([str(ROOT / "deploy" / "spark_main.py"), "run", "--config", str(cfg)],
                              jars=JARS if connector == "spark" else [], conf=conf, log_path=log, cwd=run_dir)
    else:
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "rebalance_monitor", "run", "--config", str(cfg)],
                                    stdout=out, stderr=subprocess.STDOUT, cwd=run_dir, start_new_session=True)
    with CpuSampler(roots + [proc.pid]) as cpu:
        deadline = time.monotonic() + 1800
        while sustained(run_dir / "ck" / "query", topic)[2] < expected:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{label}: the job stopped or took too long ({proc.poll()}): "
                                 f"{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        wall = time.perf_counter() - t0
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    rate, batches, events = sustained(run_dir / "ck" / "query", topic)
    return {"label": label, "rate": rate, "batches": batches, "events": events, "wall_s": wall,
            "cpu": cpu.per_kind()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=600_000)
    ap.add_argument("--per-trigger", type=int, default=100_000)
    ap.add_argument("--groups", type=int, default=500)
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=2)
    args = ap.parse_args()
    if not any(j.name.startswith("spark-sql-kafka") for j in JARS):
        raise SystemExit("Spark's Kafka connector is not in var/spark-jars: run scripts/bootstrap.sh")
    with tempfile.TemporaryDirectory(prefix="rm-bench-cluster-") as tmp:
        work = Path(tmp)
        with Broker(log_path=str(work / "broker.log")) as broker:
            topic = "bench-cluster"
            broker.create_topics({topic: args.partitions})
            values = [json.dumps(e, separators=(",", ":")).encode()
                      for e in workload(args.groups, args.members, args.events)]
            produce(broker.bootstrap, topic, values, args.partitions)
            n = len(values)
            plain = drain_plain(broker.bootstrap, topic, args.partitions, n)
            tuned = drain_plain(broker.bootstrap, topic, args.partitions, n,
                                **{"fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS})
            print(f"{n} events in {args.partitions} partitions; plain confluent consumer: {plain:,.0f} events/s "
                  f"with librdkafka's defaults (the ratios below), {tuned:,.0f} with the Python source's "
                  f"fetch.queue.backoff.ms={FETCH_QUEUE_BACKOFF_MS}", flush=True)
            results = []
            for connector in ("spark", "python"):
                results.append(run_job(f"local[2], {connector}", work, broker.bootstrap, topic, connector,
                                       args.per_trigger, None, n))
                print(_line(results[-1], plain, n), flush=True)
            with StandaloneCluster(work / "cluster", workers=2, cores_per_worker=1, memory_per_worker="2g") as c:
                for connector in ("spark", "python"):
                    results.append(run_job(f"standalone 2x1, {connector}", work, broker.bootstrap, topic,
                                           connector, args.per_trigger, c, n))
                    print(_line(results[-1], plain, n), flush=True)


def _line(r: dict, plain: float, n: int) -> str:
    cpu = ", ".join(f"{k} {v / n * 1e6:.1f}" for k, v in sorted(r["cpu"].items()))
    return (f"{r['label']:<28} sustained {r['rate']:>9,.0f} events/s ({r['rate'] / plain:.2f}x plain), "
            f"{r['batches']} batches, wall {r['wall_s']:.0f} s; CPU us/event: {cpu}")


if __name__ == "__main__":
    main()
