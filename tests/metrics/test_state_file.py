"""Exported counters across restarts (metrics/state_file.py): the snapshot round trip, and every crash window of
`apply -> persist -> Spark commits` replayed against a simulated Spark driver, compared with a run that never
stopped. The real job, SIGKILLed, is in tests/reliability/test_kill_restart.py."""
import json
import os

import pytest

from rebalance_monitor.metrics.catalogue import CATALOGUE
from rebalance_monitor.metrics.state_file import MetricsStateFile
from rebalance_monitor.metrics.updater import MetricsUpdater
from rebalance_monitor.files import HadoopFiles

from helpers.exposition import parse, series, value

T0 = 1_700_000_000_000

# per process by design (state_file.py docstring): not compared across a restart
PER_PROCESS = {"rebalance_monitor_up", "rebalance_monitor_ready", "rebalance_monitor_last_batch_timestamp_seconds",
               "rebalance_monitor_state_rows", "rebalance_monitor_watermark_delay_seconds",
               "rebalance_monitor_sink_errors_total", "kafka_consumergroup_lag", "kafka_consumergroup_lag_sum",
               "kafka_consumergroup_lag_seconds", "kafka_consumergroup_committed_offset",
               "kafka_topic_partition_end_offset"}
COUNTER_FAMILIES = {m.name for m in CATALOGUE if m.type in ("counter", "histogram")} - PER_PROCESS


class Clock:
    def __init__(self, t=T0 / 1000 + 600):
        self.t = t

    def __call__(self):
        return self.t


def family_of(sample_name: str) -> str:
    for suffix in ("_bucket", "_count", "_sum"):
        base = sample_name.removesuffix(suffix)
        if base != sample_name and any(m.name == base for m in CATALOGUE):
            return base
    return sample_name


def kept(text: str) -> dict:
    """The samples that must be the same as in a run that never stopped."""
    return {k: v for k, v in parse(text).items() if family_of(k[0]) not in PER_PROCESS}


def counters(text: str) -> dict:
    return {k: v for k, v in parse(text).items() if family_of(k[0]) in COUNTER_FAMILIES}


def gen(group, generation, completed_ms, causes=("member_joined",), duration_ms=1500, members=("m1", "m2")):
    return {"kind": "generation", "group": group, "generation": generation, "protocol": "range",
            "leader": members[0], "started_ms": completed_ms - duration_ms, "completed_ms": completed_ms,
            "ts": completed_ms, "duration_ms": duration_ms, "causes": [{"cause": c} for c in causes],
            "members": list(members), "mismatched_partitions": 0, "unassigned_partitions": 0,
            "partitions_moved": 2, "imbalance": 1, "min_moves": 1}


def timeout(group, member, detected_ms, kind="session"):
    return {"kind": "member_timeout", "group": group, "member_id": member, "timeout": kind, "last_seen_ms": 1,
            "deadline_ms": 2, "detected_ms": detected_ms, "client_id": f"client-{member}", "host": "/10.0.0.1"}


def storm(group, started_ms, ended_ms=None):
    return {"kind": "storm", "group": group, "started_ms": started_ms, "ended_ms": ended_ms, "rebalances": 4,
            "window_ms": 600_000}


def status(group, ts, state="Stable", generation=1, members=2, ratio=0.3, in_storm=False):
    return {"kind": "group_status", "group": group, "ts": ts, "state": state, "generation": generation,
            "protocol": "range", "members": members, "max_heartbeat_gap_ratio": ratio, "in_storm": in_storm,
            "coordinator_partition": 7}


def batches() -> list[tuple[list[dict], dict]]:
    """(records, record_batch figures) of eight micro-batches: generations in two groups, a storm that starts
    in batch 3 and ends in batch 6 (its end record repeats its start key), timeouts, dead letters, a group
    that goes quiet after batch 1, a deleted group, and groups the cardinality cap and the deny list drop."""
    out = []
    for n in range(8):
        t = T0 + n * 10_000
        recs = [gen("busy", 10 + n, t, causes=("member_joined", "member_left") if n % 2 else ("unknown",),
                    duration_ms=300 * (n + 1)), status("busy", t, generation=10 + n, in_storm=3 <= n < 6)]
        if n <= 1:
            recs += [gen("quiet", 3 + n, t + 5), status("quiet", t + 5, generation=3 + n, ratio=0.9),
                     {"kind": "coordinator", "group": "quiet", "ts": t, "partition": 7, "broker": 2,
                      "action": "elected"}]
        if n == 3:
            recs.append(storm("busy", t))
        if n == 6:
            recs.append(storm("busy", T0 + 30_000, ended_ms=t))
        if n in (2, 5):
            recs.append(timeout("busy", f"m{n}", t - 1))
        if n == 2:
            recs += [gen("doomed", 1, t), {"kind": "rebalance_started", "group": "busy", "generation": 13,
                                           "started_ms": t + 1, "ts": t + 1}]
        if n == 4:
            recs.append({"kind": "group_deleted", "group": "doomed", "ts": t})
        if n == 5:
            recs += [gen("tmp-1", 1, t), gen("overflow-1", 1, t), gen("overflow-2", 1, t)]
        figures = {"rejects": {"not_json": n % 3, "late_event": 1 if n == 4 else 0},
                   "output_counts": {"generation": sum(r["kind"] == "generation" for r in recs)},
                   "events_read": {"kafka": 10 + n}, "duration_s": 0.01 * (n + 1),
                   "notes": {"unresolved_topic_id": n % 2}}
        out.append((recs, figures))
    return out


def updater(clock) -> MetricsUpdater:
    return MetricsUpdater(clock=clock, max_groups=3, group_deny="tmp-.*")


def uninterrupted(tmp_path) -> str:
    clock = Clock()
    u = updater(clock)
    for n, (recs, figures) in enumerate(batches()):
        u.apply_batch(n, recs, **figures)
        clock.t += 1
    return u.render()


class Crash(BaseException):
    """The process dies here (SIGKILL): nothing after it runs, nothing in memory survives."""


WINDOWS = ("before_apply", "after_apply_before_persist", "after_persist_before_commit")


def run_with_crash(ck, crash_batch: int, window: str, files=None) -> tuple[str, list[dict], dict]:
    """Drive the batches like Spark's micro-batch loop (a batch is committed after foreachBatch returns; a
    restarted query runs the first uncommitted batch again with the same records), crash once at
    (crash_batch, window), restart from the state file. Returns the final exposition, every scrape taken
    before the crash (counters only), and the first scrape after the restart. `ck`: the checkpoint directory
    (a path, or a URI with `files`, the file-system object the snapshot is written through)."""
    plan = batches()
    clock = Clock()
    committed = -1
    scrapes = []
    crashed = False
    after_restart = None
    while committed + 1 < len(plan):
        u = updater(clock)
        state = MetricsStateFile(f"{ck}/metrics-state.json", files=files)
        state.load(u)
        if crashed and after_restart is None:
            after_restart = counters(u.render())
        try:
            while committed + 1 < len(plan):
                n = committed + 1
                recs, figures = plan[n]
                armed = not crashed and n == crash_batch
                if armed and window == "before_apply":
                    raise Crash

                def persist(up, batch_id, armed=armed):
                    scrapes.append(counters(up.render()))        # a scrape while the batch is being saved
                    if armed and window == "after_apply_before_persist":
                        raise Crash
                    state.save(up, batch_id)

                u.apply_batch(n, recs, persist, **figures)
                scrapes.append(counters(u.render()))
                if armed and window == "after_persist_before_commit":
                    raise Crash
                committed = n
                clock.t += 1
        except Crash:
            crashed = True
            scrapes_before = list(scrapes)
            continue
    assert crashed
    return u.render(), scrapes_before, after_restart


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("crash_batch", [0, 3, 4, 6, 7])
def test_a_crash_in_any_window_exports_what_a_run_that_never_stopped_exports(tmp_path, crash_batch, window):
    expected = uninterrupted(tmp_path)
    final, before, after_restart = run_with_crash(tmp_path, crash_batch, window)
    assert kept(final) == kept(expected)
    # storms counted once although the end record (batch 6) repeats the start key (batch 3) across a restart
    assert value(parse(final), "kafka_consumergroup_storms_total", group="busy") == 1
    # durable before visible: no counter scraped before the crash is above its value after the restart
    # (Prometheus would take the drop for a counter reset and count the whole value again)
    for scrape in before:
        for key, v in scrape.items():
            if dict(key[1]).get("group") == "doomed" and crash_batch >= 4:
                continue                                  # deleted in batch 4: its series are gone, rightly
            assert after_restart.get(key, 0) >= v, (key, v, after_restart.get(key))


def test_the_quiet_groups_series_are_back_at_once_after_a_restart(tmp_path):
    clock = Clock()
    u = updater(clock)
    state = MetricsStateFile(str(tmp_path / "metrics-state.json"))
    for n, (recs, figures) in enumerate(batches()[:3]):
        u.apply_batch(n, recs, state.save, **figures)
    before = kept(u.render())
    restarted = updater(clock)
    assert MetricsStateFile(str(tmp_path / "metrics-state.json")).load(restarted)
    after = kept(restarted.render())
    assert after == before
    assert value(parse(restarted.render()), "kafka_consumergroup_generation", group="quiet") == 4
    assert value(parse(restarted.render()), "kafka_consumergroup_coordinator_info", group="quiet", partition="7",
                 broker="2") == 1
    assert restarted.applied_batch_id == 2
    # a batch Spark runs again after the crash is not applied a second time
    assert restarted.apply_batch(2, batches()[2][0], **batches()[2][1]) is False
    assert kept(restarted.render()) == before


def test_a_snapshot_of_another_query_checkpoint_is_not_used(tmp_path):
    query = tmp_path / "query"
    query.mkdir()
    (query / "metadata").write_text(json.dumps({"id": "11111111-aaaa"}) + "\n")
    u = updater(Clock())
    state = MetricsStateFile(str(tmp_path / "metrics-state.json"), str(query))
    u.apply_batch(0, batches()[0][0], state.save, **batches()[0][1])
    saved = json.loads((tmp_path / "metrics-state.json").read_text())
    assert saved["query_id"] == "11111111-aaaa" and saved["batch_id"] == 0
    assert MetricsStateFile(str(tmp_path / "metrics-state.json"), str(query)).load(updater(Clock()))
    # the query checkpoint was replaced: Spark numbers batches from 0 again, so the snapshot must not fence them
    (query / "metadata").write_text(json.dumps({"id": "22222222-bbbb"}) + "\n")
    fresh = updater(Clock())
    assert not MetricsStateFile(str(tmp_path / "metrics-state.json"), str(query)).load(fresh)
    assert fresh.applied_batch_id == -1 and fresh.groups == []
    (query / "metadata").unlink()
    assert not MetricsStateFile(str(tmp_path / "metrics-state.json"), str(query)).load(updater(Clock()))


@pytest.mark.parametrize("content", ["{\"version\": 1, \"batch_id\": 3, \"groups\": {\"g\": {\"generation\": 1}}}",
                                     "{\"version\": 99, \"batch_id\": 3}", "{truncated", "[1, 2]"])
def test_an_unusable_snapshot_is_ignored_whole(tmp_path, content, caplog):
    path = tmp_path / "metrics-state.json"
    path.write_text(content)
    u = updater(Clock())
    assert not MetricsStateFile(str(path)).load(u)
    assert u.applied_batch_id == -1 and u.groups == []
    assert "exported counters start from 0" in caplog.text


def test_a_failed_save_keeps_the_exposition_then_the_retry_applies_nothing_twice(tmp_path):
    u = updater(Clock())
    state = MetricsStateFile(str(tmp_path / "metrics-state.json"))
    u.apply_batch(0, batches()[0][0], state.save, **batches()[0][1])
    u.set_ready(True)
    before = u.render()
    recs, figures = batches()[1]

    def broken(up, batch_id):
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        u.apply_batch(1, recs, broken, **figures)
    during = parse(u.render())
    assert counters(u.render()) == counters(before)          # batch 1 applied in memory, not exported
    assert value(during, "rebalance_monitor_sink_errors_total", sink="metrics_state") == 1
    assert not u.is_ready()
    assert u.apply_batch(1, recs, state.save, **figures) is False     # Spark's retry: only the save runs
    assert json.loads((tmp_path / "metrics-state.json").read_text())["batch_id"] == 1
    after = parse(u.render())
    assert value(after, "kafka_consumergroup_generations_total", group="busy") == 2
    assert value(after, "rebalance_monitor_batches_total") == 2


def test_the_write_is_atomic_and_leaves_no_temporary_file(tmp_path):
    u = updater(Clock())
    state = MetricsStateFile(str(tmp_path / "metrics-state.json"))
    for n, (recs, figures) in enumerate(batches()):
        u.apply_batch(n, recs, state.save, **figures)
        assert json.loads((tmp_path / "metrics-state.json").read_text())["batch_id"] == n
    assert sorted(os.listdir(tmp_path)) == ["metrics-state.json"]
    assert state.last_bytes == (tmp_path / "metrics-state.json").stat().st_size
    state.save(u, 7)                                   # already saved: nothing written
    assert state.saved_batch_id == 7


def test_groups_the_filters_no_longer_admit_are_left_out(tmp_path):
    u = updater(Clock())
    state = MetricsStateFile(str(tmp_path / "metrics-state.json"))
    for n, (recs, figures) in enumerate(batches()):
        u.apply_batch(n, recs, state.save, **figures)
    assert set(u.groups) == {"busy", "quiet", "overflow-1"}
    narrower = MetricsUpdater(clock=Clock(), max_groups=3, group_deny="tmp-.*|quiet")
    assert MetricsStateFile(str(tmp_path / "metrics-state.json")).load(narrower)
    assert set(narrower.groups) == {"busy", "overflow-1"}
    s = parse(narrower.render())
    assert value(s, "rebalance_monitor_groups_dropped_total", reason="max_groups") == 1
    assert value(s, "rebalance_monitor_groups_dropped_total", reason="denied") == 1
    assert series(s, "kafka_consumergroup_generations_total").keys() == {(("group", "busy"),),
                                                                        (("group", "overflow-1"),)}


# --- on S3, through Hadoop's FileSystem API (what the job does with `state.checkpoint_location: s3a://...`) -----

@pytest.mark.integration
@pytest.mark.spark
def test_on_s3_a_crash_between_snapshot_and_commit_exports_what_a_run_that_never_stopped_exports(
        tmp_path, spark, s3_bucket):
    _, uri = s3_bucket
    expected = uninterrupted(tmp_path)
    final, before, after_restart = run_with_crash(f"{uri}/ck", 4, "after_persist_before_commit",
                                                  files=HadoopFiles(spark))
    assert kept(final) == kept(expected)
    for scrape in before:
        for key, v in scrape.items():
            if dict(key[1]).get("group") != "doomed":     # deleted in batch 4
                assert after_restart.get(key, 0) >= v, (key, v, after_restart.get(key))


@pytest.mark.integration
@pytest.mark.spark
def test_on_s3_the_snapshot_is_tied_to_the_query_checkpoint_spark_wrote(spark, s3_bucket):
    """The query id comes from `<checkpoint>/query/metadata` on S3 (it used to be open()ed as a local path,
    never found, so the snapshot was never loaded on S3)."""
    _, uri = s3_bucket
    files = HadoopFiles(spark)
    path, query = f"{uri}/ck/metrics-state.json", f"{uri}/ck/query"
    files.write_bytes(f"{query}/metadata", (json.dumps({"id": "11111111-aaaa"}) + "\n").encode())
    u = updater(Clock())
    u.apply_batch(0, batches()[0][0], MetricsStateFile(path, query, files=files).save, **batches()[0][1])
    assert json.loads(files.read_bytes(path))["query_id"] == "11111111-aaaa"
    restored = updater(Clock())
    assert MetricsStateFile(path, query, files=files).load(restored)
    assert kept(restored.render()) == kept(u.render()) and restored.applied_batch_id == 0
    files.write_bytes(f"{query}/metadata", (json.dumps({"id": "22222222-bbbb"}) + "\n").encode())
    assert not MetricsStateFile(path, query, files=files).load(updater(Clock()))
    assert files.list(f"{uri}/ck") == ["metrics-state.json", "query"]   # one object, no temporary beside it


def test_a_groups_type_outlives_a_restart_and_an_older_snapshot_reads_as_unknown():
    from rebalance_monitor.metrics.series import GroupSeries
    s = GroupSeries("g", 1)
    s.set_group_type("streams")
    state = s.to_state()
    assert GroupSeries.from_state("g", state).label == 'kafka_cluster="default",group="g",group_type="streams"'
    assert GroupSeries.from_state("g", state, "eu").label == 'kafka_cluster="eu",group="g",group_type="streams"'
    del state["group_type"]               # written before the type was kept
    assert GroupSeries.from_state("g", state).group_type == "unknown"
