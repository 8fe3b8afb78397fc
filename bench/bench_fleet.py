"""A fleet at live cadence (issue 41 §1): a simulated fleet of consumer groups (fleet_schedule.py) sends its
canonical events to a real Apache Kafka broker as its clients would, in real time (heartbeats every 3 s, polls,
commits every 5 s, churn, a few members frozen or stalled at known times), while the job runs as `rebalance-monitor
run` runs it (MonitorService: exporter on loopback, lag poller, broker facts, the query with its default
configuration apart from paths, topic and port) and reads it live. Measured:

- each batch's duration against the trigger (the query's progress, triggerExecution), the Kafka records it read;
- a batch's fixed cost apart from its per-event cost: the quiet batches after the fleet stops against the busy ones;
- CPU of the job's processes (driver JVM, Python workers, the driver's Python: this process) per member-second; the
  fleet's sender and the scraper run in a process of their own (fleet_process.py), left out;
- peak memory of the driver JVM and Python workers (proc_tree.PeakRss), the state store per group (progress:
  stateOperators numRowsTotal, memoryUsedBytes);
- delay from a churn rebalance's last sync (its event time) to its generation record (after the job's sinks);
- each frozen/stalled member's warning lead: its member_at_risk record, and in the exporter's /metrics (scraped every
  `--scrape-every` s) its own series of kafka_consumergroup_member_at_risk_deadline_timestamp_seconds (by member id;
  with the deadline it gives) and its group's heartbeat/poll gap ratio reaching core.early_warning_percent, against
  its deadline; and its timeout's delay after the deadline (the member_timeout record; the timeouts counter and the
  member's at-risk series gone in /metrics).
The members' commits are canonical `commit` events on the events topic; with `--offsets` they are offset commits
instead (fleet_process.OffsetCommits: each group's commits of a second in one OffsetCommit), which the job reads
from `__consumer_offsets` as the brokers write it, beside the events topic.

    python bench/bench_fleet.py [--groups 1000] [--members 10] [--duration 150] [--partitions 4] [--offsets] [--spark-workers 2]

`--spark-workers N` runs the same job on a Spark standalone cluster of N one-core workers (rebalance_monitor.testing.
spark_cluster, all on loopback), the driver in this process: its executors' JVMs count in the job's CPU.
"""
from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import shutil
import socket
import statistics
import tempfile
import threading
import time

import fleet_process
from bench_job import count_batch_reads, tree_cpu_s
from fleet_schedule import TOPIC as ORDERS
from proc_tree import PeakRss

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.run import MonitorService
from rebalance_monitor.testing.broker import TEST_BROKER_SETTINGS, Broker

TOPIC = "fleet-events"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Records:
    """The job's output records (MonitorService's on_records, after the sinks): when each generation, at-risk and
    timeout record came (the first of each), matched against the fleet's schedule at the end."""

    def __init__(self):
        self.generations: dict[tuple[str, int], float] = {}
        self.at_risk: dict[str, float] = {}
        self.timeouts: dict[str, float] = {}
        self.timeout_batch: dict[str, int] = {}  # the batch whose output held each member's timeout
        self.timeouts_all = 0

    def __call__(self, batch_id, records, _dead) -> None:
        now = time.time()
        for r in records:
            kind = r.get("kind")
            if kind == "generation":
                self.generations.setdefault((r["group"], r.get("generation")), now)
            elif kind == "member_at_risk":
                self.at_risk.setdefault(r.get("member_id"), now)
            elif kind == "member_timeout":
                self.timeouts_all += 1
                self.timeouts.setdefault(r.get("member_id"), now)
                self.timeout_batch.setdefault(r.get("member_id"), batch_id)

    def generation_delays(self, fleet: dict) -> list[float]:
        """Churn rebalances' last sync (event time) to their generation record (the groups' first ones left out)."""
        churn = set(fleet["churn_groups"])
        return [self.generations[k] - ts / 1000.0 for k, ts in fleet["generations"].items()
                if k[1] > 1 and k[0] in churn and k in self.generations]


def run(args) -> dict:
    work = tempfile.mkdtemp(prefix="bench-fleet-")
    try:
        with Broker(log_path=os.path.join(work, "broker.log")) as broker:
            # the members' own topic too, for the lag poller (the fleet's commits name its partitions)
            broker.create_topics({TOPIC: args.partitions, ORDERS: 12})
            port = free_port()
            overrides = {
                "kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": TOPIC,
                "state.checkpoint_location": os.path.join(work, "ck"), "spark.local_dir": os.path.join(work, "spark"),
                "sinks.history.parquet_path": os.path.join(work, "history"),
                "sinks.dead_letter.path": os.path.join(work, "dead"), "exporter.port": port}
            if args.offsets:  # the commits come from __consumer_offsets, as the brokers have them
                overrides.update({"kafka.offsets_topic": "__consumer_offsets",
                                  "kafka.offsets_topic_partitions": int(
                                      {**TEST_BROKER_SETTINGS, **broker.settings}["offsets.topic.num.partitions"])})
            with _spark_cluster(args.spark_workers, work) as cluster:
                if cluster is not None:
                    overrides.update({"spark.master": cluster.master_url, "spark.conf": {
                        "spark.executor.memory": "512m", "spark.executor.cores": "1",
                        "spark.cores.max": str(args.spark_workers), "spark.driver.host": "127.0.0.1",
                        "spark.driver.bindAddress": "127.0.0.1"}})
                return live(args, load_config(env={}, overrides=overrides), broker.bootstrap,
                            f"http://127.0.0.1:{port}/metrics")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _spark_cluster(workers: int, work: str):
    """A Spark standalone cluster of `workers` one-core workers (their own JVMs, executors and Python workers; the
    driver stays in this process), all on loopback; none (`local[2]`) for 0."""
    if not workers:
        return contextlib.nullcontext()
    from rebalance_monitor.testing.spark_cluster import StandaloneCluster

    return StandaloneCluster(os.path.join(work, "spark-cluster"), workers=workers, cores_per_worker=1,
                             memory_per_worker="1g")


def live(args, cfg, bootstrap: str, url: str) -> dict:
    trigger_s = int(cfg.spark.trigger_interval) / 1000.0
    monitor = MonitorService(cfg)
    monitor.start_exporter()
    job = monitor.job
    read = count_batch_reads(job)  # Kafka records per batch (numInputRows counts the decoded, packed rows)
    job.session()  # in this (the main) thread: PySpark's context installs a signal handler
    serving = threading.Thread(target=monitor.serve, name="serve", daemon=True)
    t_start = time.time()
    serving.start()
    records = Records()
    monitor.on_records = records
    fleet_args = {"groups": args.groups, "members": args.members, "seed": args.seed, "poll_ms": args.poll_ms,
                  "churn_every_ms": args.churn_every * 1000, "frozen": args.frozen, "stalled": args.stalled,
                  "session_ms": args.session * 1000, "max_poll_ms": args.max_poll * 1000}
    with PeakRss() as peak:
        while time.time() - t_start < 300 and not (job.query is not None and job.query.recentProgress):
            time.sleep(0.5)
        started_s = time.time() - t_start
        ctx = multiprocessing.get_context("spawn")
        conn, child_conn = ctx.Pipe()
        child = ctx.Process(target=fleet_process.main, name="fleet", daemon=True, args=(
            child_conn, bootstrap, TOPIC, url, fleet_args, args.duration, cfg.core.early_warning_percent / 100.0,
            args.scrape_every, args.offsets))
        child.start()
        assert conn.poll(120) and conn.recv()[0] == "started"
        first_batch = max(read, default=-1) + 1
        cpu0, own0, read0 = tree_cpu_s(), time.process_time(), job.stats.records_read
        assert conn.poll(args.duration + 120)
        sent = conn.recv()[1]
        cpu1, own1, read1 = tree_cpu_s(), time.process_time(), job.stats.records_read
        busy_last = max(read, default=-1)
        time.sleep(args.quiet * trigger_s)  # quiet batches: the fixed cost of a batch with nothing to read
        conn.send("stop")
        assert conn.poll(60)
        fleet = conn.recv()[1]
        child.join(timeout=30)
        progress = {p["batchId"]: p for p in job.query.recentProgress}
    monitor.stop.set()
    serving.join(timeout=60)
    monitor.close(stop_spark=True)
    cpu = {k: cpu1.get(k, 0.0) - cpu0.get(k, 0.0) for k in cpu1}
    cpu["driver Python"] = own1 - own0
    from proc_tree import process_table

    return {"backlog": sent["sent"] + sent.get("commit_records", 0) - (read1 - read0), "warn": cfg.core.early_warning_percent / 100.0,
            "driver_rss_mb": process_table()[os.getpid()].rss_mb,"fleet": fleet, "records": records, "progress": progress, "read": read,
            "first": first_batch, "busy_last": busy_last, "cpu": cpu, "peak_mb": peak.peak_mb, "trigger_s": trigger_s,
            "started_s": started_s, "delay_s": int(cfg.state.watermark_delay) / 1000.0}


def _stats(xs: list[float], fmt: str = ".1f") -> str:
    if not xs:
        return "none"
    xs = sorted(xs)
    return (f"median {statistics.median(xs):{fmt}}, p90 {xs[int(0.9 * (len(xs) - 1))]:{fmt}}, max {xs[-1]:{fmt}} "
            f"(n={len(xs)})")


def report(args, r: dict) -> None:
    fleet, prog, read, trig = r["fleet"], r["progress"], r["read"], r["trigger_s"]
    members = args.groups * args.members
    if fleet["error"] is not None:
        print(f"THE FLEET'S GENERATOR FAILED (the figures below are not a fleet's): {fleet['error']}")
    print(f"fleet: {args.groups:,} groups x {args.members} members ({members:,}), {args.duration} s live; sent "
          f"{fleet['sent']:,} events ({fleet['sent'] / args.duration:,.0f}/s; the sender at most "
          f"{fleet['behind_s']:.2f} s behind); churn {fleet['churned']}; query up {r['started_s']:.0f} s after start; "
          f"not yet read when the fleet stopped: {r['backlog']:,} records", flush=True)
    if "commits" in fleet:
        print(f"commits through __consumer_offsets (not events): {fleet['commits']:,} members' commits, "
              f"{fleet['commit_requests']:,} OffsetCommit requests ({fleet['commit_records']:,} records), "
              f"{fleet['commit_failures']:,} failed", flush=True)
    dur = lambda b: prog[b]["durationMs"]["triggerExecution"] / 1000.0  # noqa: E731
    # the fleet's first two batches hold every group's first join: not steady
    busy = [b for b in sorted(prog) if r["first"] + 2 <= b <= r["busy_last"] and read.get(b)]
    quiet = [b for b in sorted(prog) if b > r["busy_last"] + 1 and not read.get(b)]
    print(f"trigger {trig:.0f} s; busy batches (after the fleet's first two): durations {_stats([dur(b) for b in busy])} "
          f"s; {sum(dur(b) > trig for b in busy)} of {len(busy)} over the trigger; Kafka records a batch "
          f"{_stats([read[b] for b in busy], ',.0f')}")
    print("  per batch (id: records, s): " + ", ".join(f"{b}: {read.get(b, 0):,}, {dur(b):.1f}" for b in sorted(prog)
                                                          if b >= r["first"]))
    if busy and quiet:
        fixed = statistics.median(dur(b) for b in quiet)
        per = (sum(dur(b) for b in busy) - fixed * len(busy)) / max(1, sum(read[b] for b in busy))
        print(f"  fixed cost of a batch (quiet batches after the fleet stopped): {fixed:.2f} s (n={len(quiet)}); "
              f"per event over that in busy batches: {per * 1e6:.1f} us")
    cpu = r["cpu"]
    kinds = ("driver JVM", "executor JVM", "Python workers", "driver Python")  # (a cluster's daemons left out)
    total = sum(cpu.get(k, 0) for k in kinds)
    print(f"CPU over the {args.duration} s live: {total:.1f} s = {total / args.duration:.2f} cores; "
          f"{total / members / args.duration * 1e6:.1f} us per member-second ("
          + ", ".join(f"{k} {cpu[k]:.1f} s" for k in kinds if k in cpu) + "; "
          f"the fleet's process, sender and scraper, {fleet['cpu_all_s']:.1f} s left out; machine load "
          f"{os.getloadavg()[0]:.1f})")
    ops = prog[max(busy)].get("stateOperators") or [] if busy else []
    rows = sum(o.get("numRowsTotal", 0) for o in ops)
    mem = sum(o.get("memoryUsedBytes", 0) for o in ops)
    print(f"memory: peak resident of the driver JVM and Python workers {r['peak_mb']:,.0f} MiB; driver Python now "
          f"{r['driver_rss_mb']:,.0f} MiB; state store at the last busy batch: {rows:,} rows, {mem / 2 ** 20:,.1f} MiB "
          f"used ({mem / args.groups / 1024:.1f} KiB a group)")
    rec = r["records"]
    print(f"churn rebalance's last sync -> its generation record: {_stats(rec.generation_delays(fleet))} s; "
          f"member_timeout records: {rec.timeouts_all}")
    print(f"/metrics: {len(fleet['scrape_s'])} scrapes, {fleet['scrape_bytes'] / 2 ** 20:.1f} MiB, "
          f"{_stats(fleet['scrape_s'], '.3f')} s each")
    print(f"watched (lead: deadline - when seen, + is before it; after: when seen - deadline; /metrics: the member's "
          f"at-risk series (its deadline against the schedule's: - is earlier, the member's last beat before it "
          f"stopped), its group's gap ratio >= {r['warn']:.2f}; the group's timeouts counter, the member's series "
          f"gone):")
    start = fleet["start_ms"] / 1000.0
    at_risk, cleared = fleet["at_risk"], fleet["cleared"]
    # a trigger's start (the batch's time, as the processor's clock has it); a silent member's group clock
    # reaches its deadline at deadline + the watermark delay (core/group_clock.py): the first batch at or after
    # that can decide the timeout, and "triggers late" counts the batches after it that still had not
    starts = {b: _epoch_s(p["timestamp"]) for b, p in prog.items()}
    judged = []
    for group, mid, kind, stop_ms, deadline_ms in fleet["watched"]:
        d = deadline_ms / 1000.0 if deadline_ms else float("nan")
        f = lambda t: f"{t:+.1f}" if t is not None else "never"  # noqa: E731
        seen = at_risk.get(mid)
        print(f"  {kind:7} {mid}: stopped at {stop_ms / 1000 - start:.1f} s, deadline {d - start:.1f} s; lead: at-risk "
              f"record {f(d - rec.at_risk[mid] if mid in rec.at_risk else None)} s, /metrics member "
              f"{f(d - seen[0] if seen else None)} s{f' (deadline {seen[1] - d:+.1f} s)' if seen else ''}, group "
              f"{f(d - fleet['warned'][group] if group in fleet['warned'] else None)} s; after: timeout record "
              f"{f(rec.timeouts[mid] - d if mid in rec.timeouts else None)} s, /metrics "
              f"{f(fleet['timed_out'][group] - d if group in fleet['timed_out'] else None)} s, member's series gone "
              f"{f(cleared[mid] - d if mid in cleared else None)} s; {_triggers_late(mid, d, starts, rec, r['delay_s'], judged)}",
              flush=True)
    if judged:
        print(f"timeouts decided by the first batch that could (at or after deadline + watermark delay "
              f"{r['delay_s']:.0f} s): {sum(1 for x in judged if x == 0)} of {len(judged)}; triggers late: "
              f"{sorted(judged)}")


def _epoch_s(iso: str) -> float:
    """A progress report's timestamp (`2026-11-28T08:47:10.123Z`) in Unix seconds."""
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _triggers_late(mid: str, deadline_s: float, starts: dict, rec: Records, delay_s: float, judged: list) -> str:
    """Which batch gave the member's timeout, against the first batch that could (its start at or after the
    deadline plus the watermark delay); the count of batches between goes to `judged`."""
    got = rec.timeout_batch.get(mid)
    could = next((b for b in sorted(starts) if starts[b] >= deadline_s + delay_s), None)
    if got is None or could is None:
        return "timeout batch: " + ("never" if got is None else f"{got} (no batch after the deadline seen)")
    late = sum(1 for b in starts if could <= b < got)
    judged.append(late)
    return f"timeout in batch {got}, the first that could: {could} ({late} triggers late)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--members", type=int, default=10, help="members a group (5-50)")
    ap.add_argument("--duration", type=int, default=150, help="seconds of live cadence")
    ap.add_argument("--partitions", type=int, default=4, help="partitions of the events topic")
    ap.add_argument("--poll-ms", type=int, default=3000, help="a member's poll events' interval")
    ap.add_argument("--churn-every", type=int, default=600, help="seconds between a group's churn events, on average")
    ap.add_argument("--frozen", type=int, default=4)
    ap.add_argument("--stalled", type=int, default=2)
    ap.add_argument("--session", type=int, default=45, help="session.timeout.ms, s")
    ap.add_argument("--max-poll", type=int, default=60, help="max.poll.interval.ms, s")
    ap.add_argument("--scrape-every", type=float, default=1.0)
    ap.add_argument("--quiet", type=int, default=6, help="triggers to wait after the fleet stops (quiet batches)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--offsets", action="store_true",
                    help="the members' commits as offset commits the job reads from __consumer_offsets (not events)")
    ap.add_argument("--spark-workers", type=int, default=0,
                    help="run the job on a Spark standalone cluster of this many one-core workers (0: local[2])")
    args = ap.parse_args()
    report(args, run(args))


if __name__ == "__main__":
    main()
