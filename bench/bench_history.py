"""`rebalance-monitor history` on a year of history for a fleet, written in the job's own sink layout (one Parquet file
per micro-batch under batch_id=N/): time to answer one group's year, and the fleet's top 20, each a fresh process
(cold: the command as an operator runs it).

Usage: python bench/bench_history.py [--groups 5000] [--per-day 1] [--days 365] [--batches-per-day 4]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import yaml

from rebalance_monitor.spark.sinks import Sinks

DAY = 86_400_000


def generation(rng: random.Random, group: str, ts: int, gen: int) -> dict:
    m = rng.randrange(20)
    return {"kind": "generation", "group": group, "ts": ts, "generation": gen, "protocol": "range",
            "leader": f"{group}-m0", "started_ms": ts - 1500, "completed_ms": ts, "duration_ms": 1500,
            "causes": [{"cause": rng.choice(["member_joined", "member_left", "session_timeout"]),
                        "member_id": f"{group}-m{m}", "client_id": f"client-{m}", "host": f"/10.0.{m}.1"}],
            "members": [f"{group}-m{i}" for i in range(10)], "assignment": None, "expected_assignment": None,
            "mismatched_partitions": None, "unassigned_partitions": None, "partitions_moved": rng.randrange(5),
            "imbalance": 0, "min_moves": None, "expected_reason": "bench"}


def write_year(path: str, groups: int, per_day: float, days: int, batches_per_day: int, seed: int = 1) -> int:
    rng = random.Random(seed)
    sinks = Sinks(path, None, None, None, None)
    start = int(time.time() * 1000) - days * DAY
    gens = {}
    n = 0
    for batch in range(days * batches_per_day):
        t0 = start + batch * DAY // batches_per_day
        rows = []
        for g in range(groups):
            if rng.random() < per_day / batches_per_day:
                group = f"group-{g:05d}"
                gens[group] = gens.get(group, 0) + 1
                rec = generation(rng, group, t0 + rng.randrange(DAY // batches_per_day), gens[group])
                rows.append(("generation", group, rec["ts"], json.dumps(rec)))
        sinks.write_history(batch, rows)
        n += len(rows)
    return n


def timed(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=5000)
    ap.add_argument("--per-day", type=float, default=1.0, help="generations per group and day, on average")
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--batches-per-day", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rm-bench-history-") as work:
        path = os.path.join(work, "history")
        t = time.perf_counter()
        n = write_year(path, args.groups, args.per_day, args.days, args.batches_per_day)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
        print(f"{n:,} generation records of {args.groups:,} groups over {args.days} days in "
              f"{args.days * args.batches_per_day} batch files ({size / 2**20:.0f} MiB), written in "
              f"{time.perf_counter() - t:.0f} s", flush=True)
        cfg = os.path.join(work, "monitor.yaml")
        with open(cfg, "w") as f:
            yaml.safe_dump({"sinks": {"history": {"parquet_path": path}}}, f)
        base = [sys.executable, "-m", "rebalance_monitor", "history", "--config", cfg]
        s, out = timed(base + ["--group", "group-00042", "--format", "json"])
        print(f"one group's year ({len(out.splitlines())} events): {s:.2f} s", flush=True)
        s, out = timed(base + ["--group", "group-00042", "--since", "7d", "--format", "json"])
        print(f"one group's last week ({len(out.splitlines())} events): {s:.2f} s", flush=True)
        s, out = timed(base + ["--top", "20", "--format", "csv"])
        print(f"fleet top 20 over the year: {s:.2f} s", flush=True)
        s, out = timed(base + ["--top", "20", "--since", "1d", "--format", "csv"])
        print(f"fleet top 20 over the last day: {s:.2f} s", flush=True)
        s, _ = timed([sys.executable, "-c", "import rebalance_monitor.history, pyarrow.dataset"])
        print(f"(of which starting Python and importing pyarrow: {s:.2f} s)")


if __name__ == "__main__":
    main()
