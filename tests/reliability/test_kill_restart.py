"""Restart safety: `rebalance-monitor run` is SIGKILLed (the whole process group, JVM included) in the middle
of the stream, restarted from its checkpoint, and at the end its history holds every generation, timeout and
storm exactly once: the same records `replay` gives for the same events. Its /metrics, scraped over HTTP at
the end, exports the same counters as a run of the same input that was never stopped, and no counter ever
goes back across a kill (one kill is aimed between the metrics snapshot and Spark's commit of its batch)."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from helpers.eventually import eventually
from helpers.exposition import parse, value
from helpers.kafka_produce import produce
from helpers.monitor_process import history, kill_hard, ready, scrape, start_job
from helpers.replay import comparable, replay_records
from helpers.scripted_input import BAD, scripted_events, sentinel

from rebalance_monitor.config import load_config
from rebalance_monitor.core.vocabulary import HISTORY_KINDS
from rebalance_monitor.metrics.catalogue import CATALOGUE
from rebalance_monitor.testing.broker import free_port

pytestmark = [pytest.mark.integration]


# Counter families that depend on how the input was cut into micro-batches (different in any two runs, killed
# or not) or that describe the process: not compared. Everything else counted must be equal.
NOT_COMPARED = {"rebalance_monitor_events_read_total",       # rows of the previous batch's progress report
                "rebalance_monitor_batches_total", "rebalance_monitor_batch_duration_seconds",
                "rebalance_monitor_sink_errors_total"}      # per process
COMPARED = {m.name for m in CATALOGUE if m.type in ("counter", "histogram")} - NOT_COMPARED
COMPARED_GAUGES = {"kafka_consumergroup_generation", "kafka_consumergroup_last_rebalance_timestamp_seconds"}


def family(sample: str) -> str:
    for suffix in ("_bucket", "_count", "_sum"):
        if sample.endswith(suffix) and sample.removesuffix(suffix) in COMPARED:
            return sample.removesuffix(suffix)
    return sample


SENTINEL_GROUP = ("group", sentinel([{"ts": 0}])["group"])


def counted(text: str, gauges: bool = False) -> dict:
    """The samples a run that never stopped must export alike (output records of kind group_status are one
    per group and micro-batch, so they follow the batching too). The sentinel's group is left out: it has no
    record but its group_status, so whether its series exist yet when a run is scraped follows the batching
    as well (a run that read everything in one batch has them; the killed run, scraped as soon as its last
    expected record is counted, may not: seen in a fresh-clone run of this test)."""
    keep = COMPARED | (COMPARED_GAUGES if gauges else set())
    return {k: v for k, v in parse(text).items()
            if family(k[0]) in keep and ("kind", "group_status") not in k[1] and SENTINEL_GROUP not in k[1]}


def total(samples: dict, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


def snapshot_and_commit(ck: Path) -> tuple[int, int]:
    """(batch id of the metrics snapshot, last batch id Spark committed); -1 for none."""
    state = ck / "metrics-state.json"
    snap = json.loads(state.read_text())["batch_id"] if state.exists() else -1
    commits = ck / "query" / "commits"
    ids = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.exists() else []
    return snap, max(ids, default=-1)


def stop_between_snapshot_and_commit(proc: subprocess.Popen, ck: Path, port: int, tries: int = 8) -> str | None:
    """SIGSTOP the job the moment it has written a metrics snapshot. If Spark has already committed that
    batch, let it go on and wait for the next snapshot; it ends stopped with the snapshot of a batch Spark
    has not committed (the crash window where the restarted job must skip the batch Spark runs again), or
    running if no try caught that moment. Returns the last /metrics scraped before it was stopped."""
    state = ck / "metrics-state.json"
    last = None

    def key():
        try:
            st = state.stat()
            return st.st_ino, st.st_mtime_ns
        except OSError:
            return None

    for attempt in range(tries):
        last = eventually(lambda: scrape(port), 60, "/metrics")
        before = key()
        deadline = time.time() + (180 if attempt == 0 else 10)    # the first batch waits for Spark to start
        while key() == before:  # not `eventually`: a watch every 0.5 ms, to SIGSTOP the job in time; gives up quietly
            if time.time() > deadline:
                return last
            time.sleep(0.0005)
        os.killpg(proc.pid, signal.SIGSTOP)
        snap, committed = snapshot_and_commit(ck)
        if snap > committed:
            return last
        os.killpg(proc.pid, signal.SIGCONT)
    return last


def test_sigkill_at_random_points_then_restart_counts_nothing_twice_and_loses_nothing(broker, unique, tmp_path):
    t_start = time.monotonic()
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    base = int(time.time() * 1000) - 120_000
    events = scripted_events(base)
    port = free_port()
    conf = {
        "kafka": {"bootstrap_servers": broker.bootstrap, "events_topic": topic, "starting_offsets": "earliest",
                  "connector": "python", "max_offsets_per_trigger": 15},
        "spark": {"trigger_interval": "1s", "local_dir": str(tmp_path / "spark")},
        "state": {"checkpoint_location": str(tmp_path / "ck"), "watermark_delay": "2s", "idle_clock": False},
        "sinks": {"history": {"parquet_path": str(tmp_path / "history")},
                  "dead_letter": {"path": str(tmp_path / "dlq")}},
        "exporter": {"host": "127.0.0.1", "port": port},
        "lag": {"enabled": False},
        "logging": {"progress_interval": "2s"},
    }
    config = tmp_path / "monitor.yaml"
    config.write_text(yaml.safe_dump(conf))
    cfg = load_config(config, env={})
    log = tmp_path / "job.log"
    rng = random.Random(11)
    n = len(events)
    # bad records in the middle third: dead letters (by reason) are counters to keep exactly too
    thirds = [events[: n // 3], events[n // 3: n // 2] + BAD + events[n // 2: 2 * n // 3], events[2 * n // 3:]]
    hist = tmp_path / "history"
    ck = tmp_path / "ck"
    kills = 0
    windows = []          # (metrics snapshot batch id, last batch Spark committed) at each kill
    last_scrape = None    # the last /metrics seen before a kill: what Prometheus may hold
    for i, part in enumerate(thirds):
        produce(broker, topic, part)
        proc = start_job(config, log)
        try:
            if last_scrape is not None:
                restarted_counters_never_go_back(port, last_scrape)
            seen = len(list(hist.glob("batch_id=*"))) if hist.exists() else 0
            if i == 1:
                # aim: stop it right after a metrics snapshot, before Spark commits that batch
                last_scrape = stop_between_snapshot_and_commit(proc, ck, port) or last_scrape
            else:
                # let it get somewhere, then pull the plug at a random moment
                eventually(lambda: hist.exists() and len(list(hist.glob("batch_id=*"))) > seen, 180, "a new batch")
                time.sleep(rng.uniform(0.0, 3.0))
                last_scrape = scrape(port) or last_scrape
        finally:
            kill_hard(proc)
            kills += 1
        snap, committed = snapshot_and_commit(ck)
        windows.append((snap, committed))
        # the snapshot holds every committed batch, and at most the one batch Spark has not committed yet
        assert committed <= snap <= committed + 1, windows
    print(f"kills at (snapshot batch, committed batch): {windows}; between snapshot and commit: "
          f"{sum(s > c for s, c in windows)}")
    # the last start: drain, move event time to the last event (as replay's end of input), stop cleanly
    expected = [r for r in replay_records(events, cfg) if r["kind"] in HISTORY_KINDS]
    proc = start_job(config, log)
    try:
        assert last_scrape is not None
        restarted_counters_never_go_back(port, last_scrape)
        eventually(lambda: ready(port), 180, "/ready after restart")
        produce(broker, topic, [sentinel(events)])  # moves event time to the last event

        def caught_up():
            got = [r for r in history(hist) if r["kind"] in HISTORY_KINDS]
            return got if len(got) >= len(expected) else None

        eventually(caught_up, 180, "the history to hold every expected record")
        killed_metrics = eventually(lambda: metrics_complete(port, expected), 60, "the metrics of every record")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            kill_hard(proc)
    got = [r for r in history(hist) if r["kind"] in HISTORY_KINDS]
    assert comparable(got) == comparable(expected)
    gens = [(r["group"], r["generation"]) for r in got if r["kind"] == "generation"]
    assert len(gens) == len(set(gens)) and len(gens) >= 6
    assert kills == 3
    text = log.read_text()
    assert "stopped" in text and "batch" in text
    # every restart after a kill that found a snapshot continued from it (the 1st kill may precede the 1st)
    assert text.count("exported metrics restored as of micro-batch") == sum(s >= 0 for s, _ in windows) >= 2

    print(f"killed run done at {time.monotonic() - t_start:.0f} s")
    # the same input, uninterrupted, into a checkpoint of its own; read in one micro-batch rather than 15
    # records at a time (quicker, and what is compared must not depend on how the input is cut anyway)
    port_a = free_port()
    conf_a = dict(conf, kafka=dict(conf["kafka"], max_offsets_per_trigger=100_000),
                  state=dict(conf["state"], checkpoint_location=str(tmp_path / "ck-a")),
                  sinks={"history": {"parquet_path": str(tmp_path / "history-a")},
                         "dead_letter": {"path": str(tmp_path / "dlq-a")}},
                  exporter={"host": "127.0.0.1", "port": port_a})
    config_a = tmp_path / "monitor-a.yaml"
    config_a.write_text(yaml.safe_dump(conf_a))
    proc = start_job(config_a, tmp_path / "job-a.log")
    try:
        straight_metrics = eventually(lambda: metrics_complete(port_a, expected), 180, "the uninterrupted run")
    finally:
        kill_hard(proc)     # its own shutdown is not under test (the killed run's last stop above is)
    print(f"uninterrupted run done at {time.monotonic() - t_start:.0f} s")
    killed, straight = counted(killed_metrics, gauges=True), counted(straight_metrics, gauges=True)
    assert killed == straight, {k: (killed.get(k), straight.get(k)) for k in set(killed) | set(straight)
                                if killed.get(k) != straight.get(k)}
    # and both are what the records say (not merely equally wrong)
    for group in ("g1", "g2"):
        gens_of = [r for r in expected if r["kind"] == "generation" and r["group"] == group]
        assert value(killed, "kafka_consumergroup_generations_total", group=group) == len(gens_of)
    assert total(killed, "rebalance_monitor_rejects_total") == len(BAD)
    for kind in HISTORY_KINDS:
        # a kind the records never hold is not exported at all (no sample of 0)
        assert (value(killed, "rebalance_monitor_output_records_total", kind=kind) or 0) == \
            sum(r["kind"] == kind for r in expected)
    assert total(killed, "kafka_consumergroup_member_timeouts_total") == 2
    assert total(killed, "kafka_consumergroup_storms_total") == 1


def metrics_complete(port: int, expected: list[dict]) -> str | None:
    """/metrics once it counts every expected generation, timeout and storm, and every bad record."""
    text = scrape(port)
    if text is None:
        return None
    c = counted(text)
    if total(c, "rebalance_monitor_rejects_total") < len(BAD):
        return None
    for kind in HISTORY_KINDS:
        n = sum(r["kind"] == kind for r in expected)
        if (value(c, "rebalance_monitor_output_records_total", kind=kind) or 0) < n:
            return None
    return text


def restarted_counters_never_go_back(port: int, before: str) -> None:
    """The first /metrics of the restarted job (it answers once Spark has started and the snapshot, read through
    its Hadoop FileSystem API, is restored; before any batch) holds every counter series seen before the kill,
    none lower: Prometheus sees no reset."""
    text = eventually(lambda: scrape(port), 180, "/metrics after the restart")
    now, then = counted(text), counted(before)
    lower = {k: (v, now.get(k)) for k, v in then.items() if now.get(k, -1) < v}
    assert not lower, lower
