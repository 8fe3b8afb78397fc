"""Several Kafka clusters from one deployment against one deployment per cluster (issue 43 §5), side by side in one
run: for each N (`--counts`, default 1 and 3), (a) one `rebalance-monitor run` deployment watching N clusters (the
configuration's `clusters:` list: one ClusterWatch, query and checkpoint per cluster on one SparkSession, one
exporter) and (b) N single-cluster deployments. N = 1 is the same deployment either way: measured once.

Each deployment is `MonitorService` as `rebalance-monitor run` runs it (clusters_driver.py), in a process of its own
(multiprocessing's spawn), so each mode is a set of process trees measured alike: the deployment's Python, its
driver JVM and its Python workers. Each cluster has a fleet at live cadence (fleet_schedule.py: heartbeats every
3 s, polls, commits every 5 s, churn), sent by one process apart (clusters_fleet.py), left out of the measurement.

One real Apache Kafka broker: each "cluster" is a cluster entry with its own events topic on it. What a cluster
costs the driver does not depend on where its broker runs: each cluster has its own clients (the query's
consumer, the lag poller, the broker poller) and its own connections either way.

Measured in each mode, over all its deployments (per cluster: divided by N):
- resident memory of the trees (JVM + Python + workers): peak while the fleet sends, and at the end of the busy
  window; threads of each deployment's driver JVM and driver Python;
- CPU seconds over an idle window (every query running and its batches with them, nothing to read: before the fleet
  starts) and over the busy window (after a warm-up: the first batches hold every group's first join);
- the delay from a churn rebalance's last sync (its event time) to its generation record, after the sinks.

    python bench/bench_clusters.py [--counts 1,3,10] [--separate-up-to 3] [--groups 100] [--members 5] [--busy 90]
                                   [--idle 30]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from datetime import datetime, timezone

import clusters_driver
import clusters_fleet
from fleet_schedule import TOPIC as ORDERS
from proc_tree import kind_of, process_table

from rebalance_monitor.testing.broker import Broker

SPAWN = multiprocessing.get_context("spawn")
# PySpark's runner of a Python streaming data source (the job's Kafka source): a process of each query
SOURCE_RUNNER = b"python_streaming_source_run"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def threads_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_mb(pid: int) -> float:
    """The process's proportional set size (a page shared by k processes counts 1/k in each): forked Python
    workers share most of their pages with their daemon, which RSS counts in each."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def snapshot(roots: list[int], pss: bool = False) -> dict:
    """The trees under `roots` (each a deployment's process): CPU seconds and resident MiB by kind (driver Python:
    the root; driver JVM, Python workers), with `pss` their proportional set size too, and the threads of each
    root and of its driver JVM."""
    table = process_table()
    cpu: dict[str, float] = {}
    rss: dict[str, float] = {}
    pss_by: dict[str, float] = {}
    others: set[str] = set()
    threads = []
    for root in roots:
        tree, frontier = {root} if root in table else set(), {root}
        while frontier:
            frontier = {p.pid for p in table.values() if p.ppid in frontier and p.pid not in tree}
            tree |= frontier
        jvm = 0
        for pid in tree:
            p = table[pid]
            kind = "driver Python" if pid == root else (kind_of(p.cmd) or (
                "Python source runners" if SOURCE_RUNNER in p.cmd else "other"))
            if kind == "driver JVM":
                jvm = threads_of(pid)
            elif kind == "other":
                others.add(p.cmd.replace(b"\0", b" ")[:80].decode(errors="replace"))
            cpu[kind] = cpu.get(kind, 0.0) + p.cpu_s
            rss[kind] = rss.get(kind, 0.0) + p.rss_mb
            if pss:
                pss_by[kind] = pss_by.get(kind, 0.0) + pss_mb(pid)
        threads.append((jvm, threads_of(root)))
    return {"cpu": cpu, "rss": rss, "pss": pss_by, "others": others, "threads": threads, "t": time.time()}


class PeakTrees(threading.Thread):
    """The highest summed resident memory of the trees under `roots`, sampled every `every_s` while open."""

    def __init__(self, roots: list[int], every_s: float = 1.0):
        super().__init__(name="peak-trees", daemon=True)
        self.roots, self.every_s, self.peak_mb = roots, every_s, 0.0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.peak_mb = max(self.peak_mb, sum(snapshot(self.roots)["rss"].values()))
            self.halt.wait(self.every_s)


def overrides(work: str, bootstrap: str, names: list[str], topics: dict[str, str], args) -> dict:
    """One deployment's configuration over `names` (a `clusters:` list when there are several), its paths under
    `work`, its exporter on a port of its own."""
    first = names[0]
    out = {"kafka.bootstrap_servers": bootstrap, "kafka.cluster_name": first, "kafka.events_topic": topics[first],
           "state.checkpoint_location": os.path.join(work, "ck"), "spark.local_dir": os.path.join(work, "spark"),
           "sinks.history.parquet_path": os.path.join(work, "history"),
           "sinks.dead_letter.path": os.path.join(work, "dead"), "exporter.port": free_port(),
           "spark.trigger_interval": f"{args.trigger}s"}
    if len(names) > 1:
        out["clusters"] = [{"name": n, "kafka": {"events_topic": topics[n]}} for n in names]
    return out


def run_mode(broker: Broker, work: str, run_no: int, n: int, one: bool, args) -> dict:
    """One mode: one deployment of `n` clusters (`one`) or `n` deployments of one, with their fleets."""
    names = [f"c{i:02d}" for i in range(n)]
    topics = {name: f"ev{run_no}-{name}" for name in names}
    broker.create_topics({t: args.partitions for t in topics.values()})
    groups = [names] if one else [[name] for name in names]
    deps = []
    t0 = time.time()
    for i, names_i in enumerate(groups):
        d = os.path.join(work, f"run{run_no}-d{i}")
        os.makedirs(d)
        conn, child_conn = SPAWN.Pipe()
        proc = SPAWN.Process(target=clusters_driver.main, name=f"deployment-{i}", args=(
            child_conn, overrides(d, broker.bootstrap, names_i, topics, args), os.path.join(d, "driver.log"),
            args.ready_timeout))
        proc.start()
        deps.append((proc, conn, os.path.join(d, "driver.log")))
    out = {"n": n, "one": one, "deployments": len(deps), "logs": [lg for _, _, lg in deps], "error": None}
    stopped: set[int] = set()
    try:
        for proc, conn, log in deps:
            left = max(1.0, args.ready_timeout + 30 - (time.time() - t0))
            msg = conn.recv() if conn.poll(left) else ("failed", f"no answer (see {log})")
            if msg[0] != "ready":
                raise RuntimeError(msg[1])
        out["ready_s"] = time.time() - t0
        roots = [proc.pid for proc, _, _ in deps]
        peak = PeakTrees(roots)
        peak.start()
        time.sleep(2 * args.trigger)
        idle0 = snapshot(roots)
        time.sleep(args.idle)  # every query running, nothing to read
        idle1 = snapshot(roots, pss=True)
        fconn, fchild = SPAWN.Pipe()
        fleet_args = {"groups": args.groups, "members": args.members, "seed": args.seed,
                      "churn_every_ms": args.churn_every * 1000, "frozen": 0, "stalled": 0}
        sender = SPAWN.Process(target=clusters_fleet.main, name="fleet", daemon=True, args=(
            fchild, broker.bootstrap, topics, fleet_args, args.warmup + args.busy))
        sender.start()
        assert fconn.poll(120) and fconn.recv()[0] == "started"
        time.sleep(args.warmup)
        busy0 = snapshot(roots)
        time.sleep(args.busy)
        busy1 = snapshot(roots, pss=True)
        assert fconn.poll(120)
        out["fleet"] = fconn.recv()[1]
        sender.join(timeout=30)
        time.sleep(3 * args.trigger)  # the last rebalances' records
        peak.halt.set()
        peak.join(timeout=5)
        out.update(busy=(busy0, busy1), idle=(idle0, idle1), peak_mb=peak.peak_mb)
        seen, stats = {}, {}
        for proc, conn, log in deps:
            conn.send("stop")
            stopped.add(proc.pid)
            if conn.poll(180):
                done = conn.recv()[1]
                seen.update(done["generations"])
                stats.update(done["stats"])
        out.update(seen=seen, stats=stats)
    except (RuntimeError, AssertionError, OSError, EOFError) as exc:
        out["error"] = str(exc) or repr(exc)
    finally:
        for proc, conn, _log in deps:
            if proc.pid not in stopped and proc.is_alive():
                try:
                    conn.send("stop")  # (after its answer: a deployment that failed to start waits for it)
                except OSError:
                    pass
        for proc, conn, _log in deps:
            proc.join(timeout=120)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=10)
    return out


def delays(r: dict) -> list[float]:
    """Each churn rebalance's last sync (event time) to its generation record (the groups' first ones left out)."""
    fleet, seen, out = r["fleet"], r["seen"], []
    for name, gens in fleet["generations"].items():
        churn = set(fleet["churn_groups"][name])
        for (group, gen), ts in gens.items():
            if gen > 1 and group in churn and (name, group, gen) in seen:
                out.append(seen[(name, group, gen)] - ts / 1000.0)
    return out


def missing(r: dict) -> int:
    """Churn rebalances (synced before the fleet stopped) without a generation record."""
    fleet, seen = r["fleet"], r["seen"]
    return sum(1 for name, gens in fleet["generations"].items() for (group, gen) in gens
               if gen > 1 and (name, group, gen) not in seen)


def _cpu(pair) -> dict:
    a, b = pair
    return {k: b["cpu"].get(k, 0.0) - a["cpu"].get(k, 0.0) for k in b["cpu"]}


def _pct(xs: list[float]) -> str:
    if not xs:
        return "none"
    xs = sorted(xs)
    return f"{statistics.median(xs):.1f} / {xs[int(0.9 * (len(xs) - 1))]:.1f} / {xs[-1]:.1f} (n={len(xs)})"


def report(args, results: list[dict], head: str) -> None:
    print(head)
    print(f"each cluster: {args.groups} groups x {args.members} members at live cadence (heartbeat 3 s, poll 3 s, "
          f"commit 5 s; a churn rebalance per group every {args.churn_every} s on average), its own events topic "
          f"({args.partitions} partitions) on one Apache Kafka 4.4 broker; trigger {args.trigger} s; busy window "
          f"{args.busy} s after a {args.warmup} s warm-up; idle window {args.idle} s before the fleet starts (every "
          f"query running, nothing to read)")
    cols = ("N", "mode", "JVMs", "ready s", "RSS peak MiB (per cluster)", "PSS end busy MiB (per cluster)",
            "CPU busy cores (per cluster)", "CPU idle cores (per cluster)", "threads JVM/Python a deployment",
            "sync->record s median/p90/max")
    print(" | ".join(cols))
    print(" | ".join("---" for _ in cols))
    for r in results:
        mode = "one (= separate)" if r["n"] == 1 else ("one deployment" if r["one"] else "separate")
        if r["error"]:
            print(f"{r['n']} | {mode} | {r['deployments']} | FAILED: {r['error']} (logs: {', '.join(r['logs'])})")
            continue
        n = r["n"]
        busy_cpu, idle_cpu = _cpu(r["busy"]), _cpu(r["idle"])
        bt = r["busy"][1]["t"] - r["busy"][0]["t"]
        it = r["idle"][1]["t"] - r["idle"][0]["t"]
        b, i = sum(busy_cpu.values()) / bt, sum(idle_cpu.values()) / it
        end = sum(r["busy"][1]["pss"].values())
        th = r["busy"][1]["threads"]
        jvm_t = "/".join(str(t[0]) for t in th[:3]) + ("/..." if len(th) > 3 else "")
        py_t = "/".join(str(t[1]) for t in th[:3]) + ("/..." if len(th) > 3 else "")
        print(f"{n} | {mode} | {r['deployments']} | {r['ready_s']:.0f} | {r['peak_mb']:,.0f} ({r['peak_mb'] / n:,.0f}) | "
              f"{end:,.0f} ({end / n:,.0f}) | {b:.2f} ({b / n:.3f}) | {i:.2f} ({i / n:.3f}) | {jvm_t} / {py_t} | "
              f"{_pct(delays(r))}")
    for r in results:
        if r["error"]:
            continue
        mode = "one deployment" if r["one"] else "separate deployments"
        busy_cpu, idle_cpu, rss = _cpu(r["busy"]), _cpu(r["idle"]), r["busy"][1]["rss"]
        fleet = r["fleet"]
        print(f"N={r['n']}, {mode}: fleet sent {fleet['sent']:,} events ({fleet['members']:,} members; sender at most "
              f"{fleet['behind_s']:.2f} s behind, its CPU {fleet['cpu_s']:.1f} s left out"
              f"{'; SENDER FAILED: ' + fleet['error'] if fleet['error'] else ''}); read per cluster (batches, "
              f"records): {r['stats']}; churn rebalances without a record: {missing(r)}")
        print("  busy CPU s by kind: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(busy_cpu.items())) +
              "; idle CPU s: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(idle_cpu.items())) +
              "; at the end of busy, RSS MiB: " + ", ".join(f"{k} {v:,.0f}" for k, v in sorted(rss.items())) +
              "; PSS MiB: " + ", ".join(f"{k} {v:,.0f}" for k, v in sorted(r["busy"][1]["pss"].items())) +
              "; PSS MiB at idle: " + ", ".join(f"{k} {v:,.0f}" for k, v in sorted(r["idle"][1]["pss"].items())) +
              (f"; other processes: {sorted(r['busy'][1]['others'])}" if r["busy"][1]["others"] else "") +
              "; threads (JVM, Python) at idle: " + ", ".join(f"{j}, {p}" for j, p in r["idle"][1]["threads"]))
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at the end", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="1,3", help="numbers of clusters, comma-separated (10: ten JVMs separate)")
    ap.add_argument("--groups", type=int, default=100, help="groups of each cluster's fleet")
    ap.add_argument("--members", type=int, default=5, help="members a group")
    ap.add_argument("--churn-every", type=int, default=120, help="seconds between a group's churn rebalances, mean")
    ap.add_argument("--partitions", type=int, default=2, help="partitions of each cluster's events topic")
    ap.add_argument("--trigger", type=int, default=5, help="spark.trigger_interval, s")
    ap.add_argument("--warmup", type=int, default=20, help="seconds of the fleet before the busy window")
    ap.add_argument("--busy", type=int, default=90, help="seconds of the busy window")
    ap.add_argument("--idle", type=int, default=30, help="seconds of the idle window")
    ap.add_argument("--ready-timeout", type=int, default=420, help="seconds for every query's first batch")
    ap.add_argument("--modes", default="one,separate", help="one, separate or both")
    ap.add_argument("--separate-up-to", type=int, default=3,
                    help="largest N run as N separate deployments (each its own driver JVM: about 1.2 GiB PSS)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (the deployments' logs)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    head = f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, commit {commit}"
    work = tempfile.mkdtemp(prefix="bench-clusters-")
    results, run_no = [], 0
    modes = [m.strip() for m in args.modes.split(",")]
    try:
        with Broker(log_path=os.path.join(work, "broker.log")) as broker:
            broker.create_topics({ORDERS: 12})
            for n in (int(c) for c in args.counts.split(",")):
                for one in (True, False):
                    if (n == 1 and not one) or ("one" if one else "separate") not in modes and n > 1:
                        continue
                    if not one and n > args.separate_up_to:
                        print(f"... N={n}: {n} separate deployments left out (--separate-up-to "
                              f"{args.separate_up_to}): about 1.2 GiB of memory (PSS) each", flush=True)
                        continue
                    run_no += 1
                    print(f"... N={n}, {'one deployment' if one or n == 1 else f'{n} deployments'}", flush=True)
                    results.append(run_mode(broker, work, run_no, n, one, args))
        report(args, results, head)
    finally:
        if args.keep or any(r["error"] for r in results):
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
