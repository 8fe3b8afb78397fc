"""Scrape cost of the exporter for 1,000 groups x 10 members x 50 partitions (target: < 100 ms per scrape), at each
lag.granularity level side by side (partition, topic, group: docs/operations.md, "Cardinality").

    .venv/bin/python bench/bench_exporter.py [--groups 1000] [--members 10] [--partitions 50] [--topics 5]
                                             [--scrapes 5] [--granularity partition,topic,group]

Each group has its own --topics topics holding its --partitions partitions. Prints, per level, for the state
built from realistic output records:
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
from rebalance_monitor.metrics.catalogue import LAG_GRANULARITIES
from rebalance_monitor.metrics.updater import MetricsUpdater

T0 = int(time.time() * 1000)   # records as fresh as the wall clock (idle groups expire by it)


def build_records(groups: int, members: int, partitions: int, round_: int = 0, topics: int = 1) -> list[dict]:
    """A fleet's output records: each group has its own ``topics`` topics sharing ``partitions`` partitions."""
    recs = []
    now = T0 + round_ * 10_000
    ends = []
    for gi in range(groups):
        g = f"service-{gi:05d}-consumers"
        tps = _partitions(gi, partitions, topics)
        mids = [f"consumer-{k}-{gi:05d}-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0" for k in range(members)]
        assignment = {m: [list(tp) for tp in tps[k::members]] for k, m in enumerate(mids)}
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
                     "offsets": [[t, p, 1000 * (round_ + 1) + p] for t, p in tps]})
        ends.extend([t, p, 1000 * (round_ + 1) + 100 + p] for t, p in tps)
    recs.append({"kind": "end_offsets", "group": "", "ts": now, "offsets": ends})
    return recs


def _partitions(gi: int, partitions: int, topics: int) -> list[tuple[str, int]]:
    """Group ``gi``'s partitions: ``partitions`` in all over ``topics`` topics of its own."""
    if topics <= 1:
        return [(f"topic-{gi:05d}", p) for p in range(partitions)]
    return [(f"topic-{gi:05d}-{p % topics}", p // topics) for p in range(partitions)]


def timed(fn, n: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def measure(a, granularity: str) -> dict:
    """Every figure of one lag.granularity level (see the module's docstring)."""
    f: dict = {}
    u = MetricsUpdater(max_groups=max(5000, a.groups), prerender=False, lag_granularity=granularity)
    recs = build_records(a.groups, a.members, a.partitions, topics=a.topics)
    f["records"] = len(recs)
    t = time.perf_counter()
    u.apply(recs, now_ms=T0)
    f["apply"] = time.perf_counter() - t
    t = time.perf_counter()
    text = u.render()
    f["cold"] = time.perf_counter() - t
    f["samples"] = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    raw = text.encode()
    f["raw"] = len(raw)
    t = time.perf_counter()
    f["gzip"] = len(gzip.compress(raw, compresslevel=1))
    f["gzip_s"] = time.perf_counter() - t
    f["warm"], _ = timed(u.render, a.scrapes)

    keys = [tp for gi in range(a.groups) for tp in _partitions(gi, a.partitions, a.topics)]

    def ends_batch(i: int) -> list[dict]:
        return [{"kind": "end_offsets", "group": "", "ts": T0 + i * 1000,
                 "offsets": [[t, p, 2000 + i * 10 + p] for t, p in keys]}]

    # prerender off: the first scrape after a micro-batch that moved every end offset re-renders every lag line
    lag_rerender = []
    for i in range(1, a.scrapes + 1):
        u.apply(ends_batch(i), now_ms=T0 + i * 1000)
        t = time.perf_counter()
        u.render()
        lag_rerender.append(time.perf_counter() - t)
    f["rerender"] = statistics.median(lag_rerender)

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
    f["batch_apply"], f["batch_scrape"] = statistics.median(batch_s), statistics.median(scrape_after_s)

    # a micro-batch touching 5% of the groups
    part = [r for r in build_records(a.groups, a.members, a.partitions, round_=1, topics=a.topics)
            if r["kind"] in ("generation", "group_status") and int(r["group"].split("-")[1]) % 20 == 0]
    t = time.perf_counter()
    u.apply(part, now_ms=T0 + 60_000)
    f["partial_apply"] = time.perf_counter() - t
    t = time.perf_counter()
    u.render()
    f["partial_scrape"] = time.perf_counter() - t

    exp = MetricsExporter(ExporterSettings(port=0), updater=u).start()
    try:
        def scrape(enc: str | None):
            req = urllib.request.Request(exp.url + "/metrics", headers={"Accept-Encoding": enc} if enc else {})
            with urllib.request.urlopen(req, timeout=30) as r:
                return len(r.read())
        f["http_plain"], f["http_plain_bytes"] = timed(lambda: scrape(None), a.scrapes)
        f["http_gzip"], f["http_gzip_bytes"] = timed(lambda: scrape("gzip"), a.scrapes)
    finally:
        exp.stop()
    return f


ROWS = [  # (label, key, kind)
    ("samples (series) per scrape", "samples", "count"),
    ("exposition size raw", "raw", "bytes"),
    ("exposition size gzip (level 1)", "gzip", "bytes"),
    ("HTTP scrape plain", "http_plain", "ms"),
    ("HTTP scrape gzip", "http_gzip", "ms"),
    ("HTTP scrape gzip: bytes sent", "http_gzip_bytes", "bytes"),
    ("render warm (nothing changed): the steady-state scrape, target < 100 ms", "warm", "ms"),
    ("render cold (all groups)", "cold", "ms"),
    ("apply the initial records", "apply", "ms"),
    ("prerender off: scrape right after a batch moving every end offset", "rerender", "ms"),
    ("prerender on: apply that batch (incl. re-render)", "batch_apply", "ms"),
    ("prerender on: scrape after it", "batch_scrape", "ms"),
    ("batch touching 5% of the groups: apply", "partial_apply", "ms"),
    ("batch touching 5% of the groups: scrape after it", "partial_scrape", "ms"),
]


def _cell(value, kind: str) -> str:
    if kind == "ms":
        return f"{value * 1000:,.1f} ms"
    if kind == "bytes":
        return f"{value / 1e6:,.2f} MB" if value >= 100_000 else f"{value:,} B"
    return f"{value:,}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=50, help="partitions per group, over --topics topics")
    ap.add_argument("--topics", type=int, default=5, help="topics per group")
    ap.add_argument("--scrapes", type=int, default=5)
    ap.add_argument("--granularity", default=",".join(LAG_GRANULARITIES),
                    help="lag.granularity levels to measure, comma-separated")
    a = ap.parse_args()
    levels = [g.strip() for g in a.granularity.split(",") if g.strip()]
    figures = {g: measure(a, g) for g in levels}

    print(f"groups={a.groups} members={a.members} partitions/group={a.partitions} over {a.topics} topics/group "
          f"scrapes={a.scrapes} (medians); columns: lag.granularity")
    width = max(len(r[0]) for r in ROWS)
    print(f"{'':<{width}}  " + "".join(f"{g:>14}" for g in levels))
    for label, key, kind in ROWS:
        print(f"{label:<{width}}  " + "".join(f"{_cell(figures[g][key], kind):>14}" for g in levels))


if __name__ == "__main__":
    main()
