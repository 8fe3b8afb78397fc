"""Size and write cost of the exported-metrics snapshot (metrics/state_file.py) the job writes after every
micro-batch, for 1,000 groups x 10 members.

    .venv/bin/python bench/bench_metrics_state.py [--groups 1000] [--members 10] [--partitions 50] [--writes 20]

The state is built from the exporter benchmark's records (bench_exporter.py: a generation with two causes,
status, commits on 50 partitions per group), plus, per group, a member timeout of every member (so each group
has 10 timeout series) and a storm: more series per group than a real fleet usually has. Prints the file
size, then the median time of ``MetricsStateFile.save`` (serialize + write + fsync + rename + fsync of the
directory, and without the fsyncs) after micro-batches touching 5% (the steady state) and 100% of the groups,
the cost of the first write (every group serialized) and of loading the file at start-up. For scale, it also
prints what the committed offsets alone would add if they were kept (they are not: see state_file.py).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

from bench_exporter import T0, build_records

from rebalance_monitor.metrics.state_file import MetricsStateFile
from rebalance_monitor.metrics.updater import MetricsUpdater


def extra_records(groups: int, members: int, round_: int) -> list[dict]:
    recs = []
    for gi in range(groups):
        g = f"service-{gi:05d}-consumers"
        for k in range(members):
            recs.append({"kind": "member_timeout", "group": g, "member_id": f"consumer-{k}-{gi:05d}",
                         "timeout": "poll" if k % 2 else "session", "detected_ms": T0 + round_ * 10_000 + k,
                         "client_id": f"client-{k}", "host": f"/10.{gi % 250}.{k}.1"})
        recs.append({"kind": "storm", "group": g, "started_ms": T0 - 60_000, "ended_ms": None, "rebalances": 4,
                     "window_ms": 600_000})
    return recs


def touch(groups: int, members: int, share: float, round_: int) -> list[dict]:
    """A micro-batch that completes a generation in ``share`` of the groups."""
    n = max(1, int(groups * share))
    recs = build_records(groups, members, 1, round_)
    return [r for r in recs if r["kind"] in ("generation", "group_status")
            and int(r["group"].split("-")[1]) < n]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=50)
    ap.add_argument("--writes", type=int, default=20)
    a = ap.parse_args()

    u = MetricsUpdater(max_groups=max(5000, a.groups), prerender=False, clock=lambda: T0 / 1000)
    base = build_records(a.groups, a.members, a.partitions) + extra_records(a.groups, a.members, 0)
    u.apply_batch(0, base)

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as d:
        path = os.path.join(d, "metrics-state.json")
        st = MetricsStateFile(path)
        t = time.perf_counter()
        st.save(u, 0)
        first = time.perf_counter() - t
        size = os.path.getsize(path)
        print(f"{a.groups} groups x {a.members} members: {len(u.render().splitlines())} exposition lines")
        print(f"snapshot: {size:,} bytes ({size / a.groups:.0f} bytes per group)")
        print(f"first write (every group serialized): {first * 1000:.1f} ms")

        batch = 1
        for share in (0.05, 1.0):
            for fsync in (True, False):
                st.files.fsync = fsync
                times = []
                for _ in range(a.writes):
                    u.apply_batch(batch, touch(a.groups, a.members, share, batch))
                    t = time.perf_counter()
                    st.save(u, batch)
                    times.append(time.perf_counter() - t)
                    batch += 1
                print(f"write after a micro-batch touching {share:.0%} of the groups "
                      f"({'fsync' if fsync else 'no fsync'}): median {median_ms(times):.1f} ms, "
                      f"max {max(times) * 1000:.1f} ms")
        t = time.perf_counter()
        fresh = MetricsUpdater(max_groups=max(5000, a.groups), prerender=False, clock=lambda: T0 / 1000)
        MetricsStateFile(path).load(fresh)
        fresh.render()
        print(f"load at start-up (parse + restore + first render): {(time.perf_counter() - t) * 1000:.0f} ms")
        committed = [[r["group"], r["offsets"]] for r in base if r["kind"] == "offsets_committed"]
        extra = len(json.dumps(committed, separators=(",", ":")))
        print(f"(committed offsets, not kept, would add {extra:,} bytes: {a.partitions} partitions per group)")


if __name__ == "__main__":
    main()
