"""The stateful step at live cadence, without Spark: where a group's time goes in each micro-batch.

A fleet at live cadence (fleet_schedule.py: heartbeats and poll events every 3 s, commits every 5 s) gives every
group a few events in every 5 s micro-batch, so the job's stateful step runs every group at every batch. This
bench drives `GroupProcessor` (spark/processor.py) directly, through the in-memory handle the processor tests use
(tests/helpers/processor_handle.py: one per `__consumer_offsets` shard), with the decode stage's own rows built
beforehand, the watermark and the processing time moving 5 s a batch, status records on (as the job has them), and
the worker's runner cache (spark/runner_cache.py) at its default bound or off. Then the driver's side of the same
batches: its foreachBatch (`spark/batch.handle_batch`, sinks left out) on each batch's rows as Arrow gives them,
parsed and applied by the metrics updater (`MetricsUpdater.apply_batch`, with its prerendering, as the exporter has
it). The time in Python's garbage collector is given apart (it is in the totals). Times are the bench process's CPU
time (it is one thread), so that other work on the machine weighs little on them.

Figures: ms per group per batch, in total and split into the processor's phases: state read (+ JSON parse and
`GroupRunner.from_state`), the core's run, the `group_status` record, `to_state` + JSON + write, output rows
(records as JSON), and the rest (the shard's own state, unpacking the rows, wake-ups). The split is timed by
wrappers around those calls, in a run of its own (the total comes from a run without them). `--profile` prints
cProfile's top functions of one measured run.

    .venv/bin/python bench/bench_live_groups.py [--groups 2000 10000] [--members 10] [--batches 6]
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import sys
import time
from collections import defaultdict

import pyarrow as pa
from pyspark.sql import Row

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from helpers.processor_handle import MemoryHandle, TimerValues  # noqa: E402

from fleet_schedule import Fleet  # noqa: E402

from rebalance_monitor.core.group import GroupMonitor  # noqa: E402
from rebalance_monitor.core.runner import GroupRunner  # noqa: E402
from rebalance_monitor.core.settings import CoreSettings  # noqa: E402
from rebalance_monitor.decoding.row_batches import make_decoder  # noqa: E402
from rebalance_monitor.metrics.updater import MetricsUpdater  # noqa: E402
from rebalance_monitor.spark import processor as proc_mod  # noqa: E402
from rebalance_monitor.spark import runner_cache  # noqa: E402
from rebalance_monitor.spark.batch import JobStats, handle_batch  # noqa: E402
from rebalance_monitor.spark.processor import GroupProcessor  # noqa: E402

T0 = 1_800_000_000_000
TRIGGER_MS = 5_000
DELAY_MS = 2_000
DEFAULT_CACHE_BYTES = 16 << 20  # state.runner_cache_mb's default
# CPU time of this process (the bench is one thread): on a machine shared with other work, wall time measures
# the neighbours as much as the code
CLOCK = time.process_time
WARMUP_S = 20  # the first joins and syncs of every group, then a few batches of heartbeats only


def decoded_rows(evs: list[dict], first_offset: int) -> list:
    """The decode stage's rows for `evs` (appended to Kafka at their own time, as a live fleet's are), as Arrow
    record batches (the clock row among them): held as Spark holds them, not as Python objects that the garbage
    collector would walk at every collection of the processor's run."""
    values = [json.dumps(e).encode() for e in evs]
    n = len(values)
    batch = pa.RecordBatch.from_pydict({
        "topic": ["ev"] * n, "partition": pa.array([0] * n, pa.int32()),
        "offset": list(range(first_offset, first_offset + n)),
        "timestamp": pa.array([e["ts"] * 1000 for e in evs], pa.timestamp("us", tz="UTC")),
        "key": pa.array([None] * n, pa.binary()), "value": pa.array(values, pa.binary())})
    return list(make_decoder({"ev": "events"}, 1 << 20, 10 ** 12)(iter([batch])))


def shard_rows(decoded: list) -> dict[int, list]:
    """The rows the processor gets (Spark's Rows), by shard; the clock row left out."""
    shards: dict[int, list] = defaultdict(list)
    for out in decoded:
        for r in out.to_pylist():
            if r["kind"] != "tick":
                shards[r["shard"]].append(Row(**r))
    return shards


def output_table(rows: list) -> pa.Table:
    """The processor's rows out, as the serializer hands them to Spark (and the driver gets them: Arrow)."""
    return pa.table({name: [r[k] for r in rows] for k, name in enumerate(("kind", "group", "ts", "payload"))})


def batches(groups: int, members: int, count: int) -> list[tuple[int, dict]]:
    """(batch time, rows by shard) of the warm-up and `count` batches of live cadence, 5 s apart."""
    fleet = Fleet(groups, members, T0, frozen=0, stalled=0, churn_every_ms=0)
    out, offset = [], 0
    steps = WARMUP_S * 1000 // TRIGGER_MS + count
    for k in range(1, steps + 1):
        now = T0 + k * TRIGGER_MS
        evs = fleet.due(now)
        out.append((now, decoded_rows(evs, offset)))
        offset += len(evs)
    return out


class Phases:
    """Wall time by phase of the processor's calls, exclusive of the phase a call is nested in (a phase's
    inner calls of JSON text count for it)."""

    def __init__(self):
        self.ms: dict[str, float] = defaultdict(float)
        self.depth = 0
        self.saved: list = []

    def wrap(self, owner, name: str, phase: str, inner: bool = False):
        """Time `owner.name` as `phase`; `inner`: only when called outside every other timed phase."""
        fn = getattr(owner, name)
        self.saved.append((owner, name, owner.__dict__[name]))
        ms = self.ms
        pc = CLOCK

        def timed(*a, **k):
            if inner and self.depth:
                return fn(*a, **k)
            self.depth += 1
            t = pc()
            try:
                return fn(*a, **k)
            finally:
                ms[phase] += (pc() - t) * 1000
                self.depth -= 1
        if isinstance(owner.__dict__[name], classmethod):
            setattr(owner, name, classmethod(lambda cls, *a, **k: timed(*a, **k)))
        else:
            setattr(owner, name, timed)

    def install(self):
        self.wrap(proc_mod, "loads_json", "read", inner=True)
        self.wrap(GroupRunner, "from_state", "read")
        self.wrap(GroupRunner, "run", "run")
        self.wrap(proc_mod, "last_commits", "run")
        self.wrap(GroupMonitor, "status", "status")
        self.wrap(GroupRunner, "to_state", "encode")
        self.wrap(proc_mod, "dumps", "encode", inner=True)
        self.wrap(proc_mod, "_record_rows", "rows")

    def remove(self):
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)
        self.saved.clear()


class GcTime:
    """Time spent in the cyclic garbage collector, by generation, while counting."""

    def __init__(self):
        self.ms = [0.0, 0.0, 0.0]
        self.counting = False
        self._t = 0.0
        gc.callbacks.append(self._note)

    def _note(self, phase, info):
        if phase == "start":
            self._t = CLOCK()
        elif self.counting:
            self.ms[info["generation"]] += (CLOCK() - self._t) * 1000


GC = GcTime()


def run_job_side(plan, cache_bytes: int, measured: int, profile=None, phases: Phases | None = None):
    """Run every batch through one processor per shard; returns (ms of the measured batches, groups run in
    them, the measured batches' output rows, cache hits)."""
    runner_cache._CACHES.clear()
    settings = CoreSettings()
    procs: dict[int, GroupProcessor] = {}
    total_ms, outputs = 0.0, []
    prev_max = 0
    first_measured = len(plan) - measured
    before = None
    for k, (now, decoded) in enumerate(plan):
        shards = shard_rows(decoded)
        watermark = max(0, prev_max - DELAY_MS)
        tv = TimerValues(watermark, now)
        measuring = k >= first_measured
        if measuring and before is None:
            before = sum(c.hits for c in runner_cache._CACHES.values())
            GC.ms = [0.0, 0.0, 0.0]
            if phases is not None:
                phases.install()
            if profile is not None:
                profile.enable()
        dt, out = 0.0, []
        tables = []  # each shard's rows out, as Spark's serializer takes them (Arrow, after each shard's call)
        for shard, rows in shards.items():
            p = procs.get(shard)
            if p is None:
                p = procs[shard] = GroupProcessor(settings, emit_status=True, release_delay_ms=DELAY_MS,
                                                  started_ms=T0, horizon_ms=TRIGGER_MS + DELAY_MS,
                                                  cache_bytes=cache_bytes)
                p.init(MemoryHandle())
            GC.counting, t = measuring, CLOCK()
            out = list(p.handleInputRows((shard,), iter(rows), tv))
            dt += CLOCK() - t
            GC.counting = False
            tables.append(output_table(out))
        for shard, p in procs.items():  # shards with no rows whose timer is due
            if shard not in shards and any(t_ <= now for t_ in p.handle.timers):
                p.handle.timers = {t_ for t_ in p.handle.timers if t_ > now}
                GC.counting, t = measuring, CLOCK()
                out = list(p.handleExpiredTimer((shard,), tv, None))
                dt += CLOCK() - t
                GC.counting = False
                tables.append(output_table(out))
        del out
        if measuring:
            total_ms += dt * 1000
            outputs.append(pa.concat_tables(tables))
        prev_max = max(prev_max, max((r.ts for rows in shards.values() for r in rows), default=0))
        del shards, tables
    GC.counting = False
    if profile is not None:
        profile.disable()
    if phases is not None:
        phases.remove()
    hits = sum(c.hits for c in runner_cache._CACHES.values()) - (before or 0)
    return total_ms, outputs, hits


class _Frame:
    """A batch's output as the driver's foreachBatch gets it (only `toArrow` is used)."""

    def __init__(self, table):
        self.table = table

    def toArrow(self):
        return self.table


class _Sinks:
    def write_history(self, batch_id, rows):
        pass

    def write_dead_letters(self, batch_id, rows):
        pass


class _Job:
    """What `handle_batch` uses of a StreamingQueryJob: no sinks, the metrics updater with its prerendering."""

    def __init__(self):
        self.stopping = False
        self.sinks = _Sinks()
        self.updater = MetricsUpdater(max_groups=100_000, clock=lambda: T0 / 1000)
        self.metrics_state = None
        self.query = None
        self.stats = JobStats()
        self.on_records = None
        self.cfg = None

    def saw_event_time(self, ts):
        pass


def driver_side(outputs) -> tuple[float, float, int]:
    """ms of the driver's foreachBatch (spark/batch.handle_batch: the rows from Arrow, parsed, applied by the
    metrics updater) over each batch's output, and of the updater's `apply_batch` alone in it."""
    job = _Job()
    frames = [_Frame(rows) for rows in outputs]
    spent = {"apply": 0.0}
    apply = job.updater.apply_batch

    def timed_apply(*a, **k):
        t = CLOCK()
        try:
            return apply(*a, **k)
        finally:
            spent["apply"] += (CLOCK() - t) * 1000
    job.updater.apply_batch = timed_apply
    total = 0.0
    for b, frame in enumerate(frames):
        t = CLOCK()
        handle_batch(job, frame, b)
        total += (CLOCK() - t) * 1000
    return total, spent["apply"], sum(job.stats.records.values())


def measure(groups: int, members: int, count: int, profile: bool, top: int, caches=("on", "off"),
            split: bool = True) -> None:
    t = time.perf_counter()
    plan = batches(groups, members, count)
    events = sum(b.nbytes for _, decoded in plan[-count:] for b in decoded)
    print(f"\n{groups:,} groups x {members} members: {count} batches of 5 s measured after {WARMUP_S} s "
          f"(rows built in {time.perf_counter() - t:.1f} s; {events / count / 1024:.0f} KiB of rows a batch)",
          flush=True)
    gc.collect()
    for label, cache in (("cache on", DEFAULT_CACHE_BYTES), ("cache off", 0)):
        if label.removeprefix("cache ") not in caches:
            continue
        total, outputs, hits = run_job_side(plan, cache, count)
        gc_ms = list(GC.ms)
        per = total / count / groups
        kinds = defaultdict(int)
        for table in outputs:
            for kind in table.column("kind").to_pylist():
                kinds[kind] += 1
        phases = Phases()
        if split:
            run_job_side(plan, cache, count, phases=phases)
        parts = " ".join(f"{ph} {phases.ms[ph] / count / groups * 1000:.0f}"
                         for ph in ("read", "run", "status", "encode", "rows"))
        rest = total - sum(phases.ms.values())  # (the wrappers' own cost lands in the phases)
        if not split:
            parts, rest = "(not split)", 0.0
        print(f"  job side, {label}: {per:.3f} ms/group/batch ({total / count:.0f} ms a batch; cache hits "
              f"{hits / count / groups:.0%}; in the garbage collector, generations 0/1/2: "
              + "/".join(f"{ms / count / groups * 1000:.0f}" for ms in gc_ms) + " us/group/batch)\n"
              f"    us/group/batch: {parts} other {rest / count / groups * 1000:.0f}"
              f" [phases timed in a run of their own]; rows out a batch: "
              + ", ".join(f"{k} {v / count:.0f}" for k, v in sorted(kinds.items())), flush=True)
        if label == "cache on":
            GC.ms, GC.counting = [0.0, 0.0, 0.0], True
            total_d, apply, n = driver_side(outputs)
            GC.counting = False
            print(f"  driver side (handle_batch): {total_d / count / groups * 1000:.0f} us/group/batch, of which "
                  f"the updater's apply_batch {apply / count / groups * 1000:.0f} ({n / count:.0f} records a "
                  "batch; in the garbage collector, generations 0/1/2: "
                  + "/".join(f"{ms / count / groups * 1000:.0f}" for ms in GC.ms) + " us/group/batch)",
                  flush=True)
        if profile:
            pr = cProfile.Profile()
            run_job_side(plan, cache, count, profile=pr)
            print(f"  cProfile, job side, {label} (tottime):")
            pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(top)
            if label == "cache on":
                pr = cProfile.Profile()
                pr.enable()
                driver_side(outputs)
                pr.disable()
                print("  cProfile, driver side (tottime):")
                pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(top)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, nargs="+", default=[2000, 10000])
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--cache", choices=("on", "off"), nargs="+", default=["on", "off"],
                    help="the runner cache at its default bound, or off")
    ap.add_argument("--no-split", action="store_true", help="no run of its own to time the phases")
    args = ap.parse_args()
    for n in args.groups:
        measure(n, args.members, args.batches, args.profile, args.top, args.cache, not args.no_split)
    return 0


if __name__ == "__main__":
    sys.exit(main())
