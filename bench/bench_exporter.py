"""Scrape cost of the exporter for 1,000 groups x 10 members x 50 partitions (target: < 100 ms per scrape).

    .venv/bin/python bench/bench_exporter.py [--groups 1000] [--members 10] [--partitions 50] [--scrapes 5]

Prints, for the state built from realistic output records:
* render time of a scrape when nothing changed (the steady state between micro-batches),
* after a micro-batch that moved every partition's end offset (all lag lines re-rendered): with
  ``prerender`` off the next scrape pays the re-render; with it on (the default) ``apply`` pays it,
* the same for a batch that touched 5% of the groups (generation + status records),
* a cold render (every group rendered for the first time),
* the end-to-end HTTP scrape through the exporter (plain and gzip, as Prometheus asks),
* the exposition size (bytes, samples) raw and gzip-compressed.
"""
from __future__ import annotations

import argparse
import gzip
import statistics
import time
import urllib.request

from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter
from rebalance_monitor.metrics.updater import MetricsUpdater

T0 = int(time.time() * 1000)   # records as fresh as the wall clock (idle groups expire by it)


def build_records(groups: int, members: int, partitions: int, round_: int = 0) -> list[dict]:
    recs = []
    now = T0 + round_ * 10_000
    ends = []
    for gi in range(groups):
        g = f"service-{gi:05d}-consumers"
        topic = f"topic-{gi:05d}"
        mids = [f"consumer-{k}-{gi:05d}-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0" for k in range(members)]
        assignment = {m: [[topic, p] for p in range(k, partitions, members)] for k, m in enumerate(mids)}
        recs.append({"kind": "generation", "group": g, "generation": 10 + round_, "protocol": "cooperative-sticky",
                     "leader": mids[0], "started_ms": now - 3_000, "completed_ms": now - 500, "ts": now - 500,
                     "duration_ms": 2_500, "causes": [{"cause": "member_joined"}, {"cause": "member_left"}],
                     "members": mids, "assignment": assignment, "expected_assignment": assignment,
                     "mismatched_partitions": 0, "unassigned_partitions": 0, "partitions_moved": 5, "imbalance": 0,
                     "min_moves": 5})
        for k in range(2):
            recs.append({"kind": "member_timeout", "group": g, "member_id": mids[k], "timeout": "session",
                         "last_seen_ms": now - 50_000, "deadline_ms": now - 5_000, "detected_ms": now - 4_000 + round_,
                         "client_id": f"client-{k}", "host": f"/10.0.{gi % 250}.{k}"})
        recs.append({"kind": "group_status", "group": g, "ts": now, "state": "Stable", "generation": 10 + round_,
                     "protocol": "cooperative-sticky", "leader": mids[0], "members": members,
                     "max_heartbeat_gap_ratio": 0.2, "heartbeat_gap_ratios": {}, "in_storm": False,
                     "rebalancing_since_ms": None, "coordinator_partition": gi % 50})
        recs.append({"kind": "offsets_committed", "group": g, "ts": now, "member_id": mids[0],
                     "offsets": [[topic, p, 1000 * (round_ + 1) + p] for p in range(partitions)]})
        ends.extend([topic, p, 1000 * (round_ + 1) + 100 + p] for p in range(partitions))
    recs.append({"kind": "end_offsets", "group": "", "ts": now, "offsets": ends})
    return recs


def timed(fn, n: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=50)
    ap.add_argument("--scrapes", type=int, default=5)
    a = ap.parse_args()

    u = MetricsUpdater(max_groups=max(5000, a.groups), prerender=False)
    recs = build_records(a.groups, a.members, a.partitions)
    t = time.perf_counter()
    u.apply(recs, now_ms=T0)
    apply_s = time.perf_counter() - t
    t = time.perf_counter()
    text = u.render()
    cold_s = time.perf_counter() - t
    samples = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    raw = text.encode()
    t = time.perf_counter()
    gz = gzip.compress(raw, compresslevel=1)
    gzip_s = time.perf_counter() - t

    warm_s, _ = timed(u.render, a.scrapes)

    def ends_batch(i: int) -> list[dict]:
        return [{"kind": "end_offsets", "group": "", "ts": T0 + i * 1000,
                 "offsets": [[f"topic-{gi:05d}", p, 2000 + i * 10 + p]
                             for gi in range(a.groups) for p in range(a.partitions)]}]

    # prerender off: the first scrape after a micro-batch that moved every end offset re-renders every lag line
    lag_rerender = []
    for i in range(1, a.scrapes + 1):
        u.apply(ends_batch(i), now_ms=T0 + i * 1000)
        t = time.perf_counter()
        u.render()
        lag_rerender.append(time.perf_counter() - t)
    lag_rerender_s = statistics.median(lag_rerender)

    # prerender on (the default): apply() pays the re-render, the scrape after it only joins cached text
    u.prerender = True
    batch_s, scrape_after_s = [], []
    for i in range(a.scrapes + 1, 2 * a.scrapes + 1):
        b = ends_batch(i)
        t = time.perf_counter()
        u.apply(b, now_ms=T0 + i * 1000)
        batch_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        u.render()
        scrape_after_s.append(time.perf_counter() - t)

    # a micro-batch touching 5% of the groups
    part = [r for r in build_records(a.groups, a.members, a.partitions, round_=1)
            if r["kind"] in ("generation", "group_status") and int(r["group"].split("-")[1]) % 20 == 0]
    t = time.perf_counter()
    u.apply(part, now_ms=T0 + 60_000)
    partial_apply_s = time.perf_counter() - t
    t = time.perf_counter()
    u.render()
    partial_s = time.perf_counter() - t

    exp = MetricsExporter(ExporterSettings(port=0), updater=u).start()
    try:
        def scrape(enc: str | None):
            req = urllib.request.Request(exp.url + "/metrics", headers={"Accept-Encoding": enc} if enc else {})
            with urllib.request.urlopen(req, timeout=30) as r:
                return len(r.read())
        http_plain_s, plain_len = timed(lambda: scrape(None), a.scrapes)
        http_gzip_s, gzip_len = timed(lambda: scrape("gzip"), a.scrapes)
    finally:
        exp.stop()

    ms = lambda s: f"{s * 1000:8.1f} ms"  # noqa: E731
    print(f"groups={a.groups} members={a.members} partitions/group={a.partitions} scrapes={a.scrapes} (medians)")
    print(f"samples                         {samples:>10,}")
    print(f"exposition size raw             {len(raw):>10,} bytes")
    print(f"exposition size gzip (level 1)  {len(gz):>10,} bytes   (compress {ms(gzip_s)})")
    print(f"apply initial records           {ms(apply_s)}   ({len(recs):,} records)")
    print(f"render cold (all groups)        {ms(cold_s)}")
    print(f"render warm (nothing changed)   {ms(warm_s)}   <- the steady-state scrape; target < 100 ms")
    print(f"prerender off: scrape right after a batch moving all {a.groups * a.partitions:,} end offsets "
          f"{ms(lag_rerender_s)}")
    print(f"prerender on:  apply that batch (incl. re-render) {ms(statistics.median(batch_s))}, "
          f"scrape after it {ms(statistics.median(scrape_after_s))}")
    print(f"batch touching 5% of the groups: apply {ms(partial_apply_s)}, scrape after it {ms(partial_s)}")
    print(f"HTTP scrape plain               {ms(http_plain_s)}   ({plain_len:,} bytes)")
    print(f"HTTP scrape gzip                {ms(http_gzip_s)}   ({gzip_len:,} bytes)")


if __name__ == "__main__":
    main()
