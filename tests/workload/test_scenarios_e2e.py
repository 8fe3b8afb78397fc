"""End to end: every workload scenario runs real consumer groups on the real broker while the real Spark job
watches; the records it outputs must show what each scenario promises (generations, causes, timeouts,
storms, final membership)."""
from __future__ import annotations

import os
import threading
import time

import pytest

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.job import MonitorJob
from rebalance_monitor.workload import SCENARIOS, ScenarioError, run_scenario

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# partition_change needs CreatePartitions, which the bundled Tansu 0.6 broker refuses; its fallback (a new
# topic matching the members' pattern) stalls JoinGroup on Tansu in about half of the runs. It runs against
# a real Apache Kafka cluster (`rebalance-monitor workload partition_change --bootstrap ...`), not here.
UNRELIABLE_ON_TANSU = {"partition_change"}
# Two more depend on Tansu behaviour that is not deterministic under load (seen in full CI runs on this
# 2-core machine, not when run alone): on a static member's restart Tansu runs one or two extra rebalances
# whose timing decides the last membership before clean-up (static_restart), and it answers
# INCONSISTENT_GROUP_PROTOCOL to some joins of a mixed-assignor group, stalling the scenario before the
# monitor is even involved (mixed_assignors). They run with RM_E2E_ALL=1 (and pass when run alone).
if not os.environ.get("RM_E2E_ALL"):
    UNRELIABLE_ON_TANSU |= {"static_restart", "mixed_assignors"}
LANES = [[n for n in ("storm", "crash", "steady", "mixed_assignors", "static_restart") if n not in UNRELIABLE_ON_TANSU],
         [n for n in ("rolling_restart", "slow_consumer", "scale_out", "scale_in") if n not in UNRELIABLE_ON_TANSU]]


@pytest.fixture(scope="module")
def watched(spark, broker, tmp_path_factory):
    """Run every scenario (in two lanes) under one running job; collect its records."""
    tmp = tmp_path_factory.mktemp("scenarios")
    events_topic = "scenario-events"
    broker.create_topics({events_topic: 1})
    cfg = load_config(env={}, overrides={
        "kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": events_topic,
        "kafka.starting_offsets": "earliest", "kafka.connector": "python",
        "state.checkpoint_location": str(tmp / "ck"), "state.watermark_delay": "1s",
        "sinks.history.parquet_path": str(tmp / "history"), "sinks.dead_letter.path": str(tmp / "dlq"),
        "exporter.enabled": False, "spark.trigger_interval": "1s",
        # the bundled broker takes ~3 s between the syncs of one rebalance: settle well beyond that
        "core.settle": "10s"})
    records: list[dict] = []
    lock = threading.Lock()

    def keep(_batch, recs, _dead):
        with lock:
            records.extend(recs)

    job = MonitorJob(cfg, spark=spark, on_records=keep)
    job.start()
    results: dict[str, object] = {}
    errors: dict[str, Exception] = {}

    def lane(names):
        for name in names:
            # A scenario that cannot drive the bundled broker to the state it needs (Tansu occasionally
            # leaves members stuck in JoinGroup under load) is tried once more on a fresh group; the monitor
            # is judged on the run that happened.
            for attempt in (1, 2):
                try:
                    results[name] = run_scenario(name, broker.bootstrap, events_topic, group=f"e2e-{name}-{attempt}")
                    errors.pop(name, None)
                    break
                except ScenarioError as exc:
                    errors[name] = exc

    threads = [threading.Thread(target=lane, args=(names,)) for names in LANES]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    # the idle clock moves event time on; give the job a few triggers to fire the last timers
    time.sleep(12)
    job.stop()
    with lock:
        snapshot = list(records)
    return results, errors, snapshot


def _before(rec: dict, cutoff: int) -> bool:
    t = rec.get("completed_ms") or rec.get("deadline_ms") or rec.get("started_ms") or rec.get("ts")
    return t is not None and t <= cutoff


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n not in UNRELIABLE_ON_TANSU])
def test_scenario_is_reported_as_promised(watched, name):
    results, errors, records = watched
    assert name not in errors, f"the scenario itself failed: {errors.get(name)!r}"
    res = results[name]
    exp = res.expect
    cutoff = res.cleanup_ms or res.ended_ms
    mine = [r for r in records if r["group"] == res.group and _before(r, cutoff)]
    gens = sorted((r for r in mine if r["kind"] == "generation"), key=lambda r: r["generation"])
    assert len(gens) >= exp.get("generations_min", 1), [g["generation"] for g in gens]
    if "generations_max" in exp:
        assert len(gens) <= exp["generations_max"]
    causes = {c["cause"] for g in gens for c in g["causes"]}
    for cause in exp.get("causes", []):
        assert cause in causes, (cause, causes)
    if exp.get("causes_any"):
        assert causes & set(exp["causes_any"])
    if "timeouts" in exp:
        timeouts = [r for r in mine if r["kind"] == "member_timeout"]
        want = {t["timeout"]: t["count"] for t in exp["timeouts"]}
        got = {}
        for t in timeouts:
            got[t["timeout"]] = got.get(t["timeout"], 0) + 1
        assert got == want, (got, want)
    if "storm" in exp:
        storms = [r for r in records if r["group"] == res.group and r["kind"] == "storm"]
        assert bool(storms) == exp["storm"], storms
    if "members_final" in exp:
        assert len(gens[-1]["members"]) == exp["members_final"], gens[-1]["members"]
    if "protocol_first" in exp:
        assert gens[0]["protocol"] == exp["protocol_first"]
    # every generation the monitor reconstructed carries who caused it
    assert all(g["causes"] for g in gens)
