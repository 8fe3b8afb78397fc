"""The live-cadence bench of the stateful step (bench/bench_live_groups.py), small: its batches reach every group,
and the processor gives the same rows with the worker's runner cache on and off; the driver's side applies them."""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import bench_live_groups as bench  # noqa: E402


def test_the_bench_runs_every_group_at_every_batch_cache_or_not():
    plan = bench.batches(30, 5, 2)
    on, rows_on, hits = bench.run_job_side(plan, bench.DEFAULT_CACHE_BYTES, 2)
    off, rows_off, misses = bench.run_job_side(plan, 0, 2)
    assert hits == 30 * 2 and misses == 0  # every group from the cache at each measured batch, or none
    on_rows = [sorted(tuple(r.values()) for r in t.to_pylist()) for t in rows_on]
    assert on_rows == [sorted(tuple(r.values()) for r in t.to_pylist()) for t in rows_off]
    for batch in on_rows:
        statuses = [json.loads(payload) for kind, _, _, payload in batch if kind == "group_status"]
        assert len({s["group"] for s in statuses}) == 30 and all(s["members"] == 5 for s in statuses)
        assert any(kind == "offsets_committed" for kind, _, _, _ in batch)
    total, apply, records = bench.driver_side(rows_on)
    assert records == sum(len(b) for b in on_rows) and 0 < apply <= total
