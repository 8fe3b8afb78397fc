"""`rebalance-monitor history` on a history the real job wrote (Parquet and Kafka sinks at once), from what real
Apache Kafka brokers and clients recorded of every workload scenario (tests/witnesses/data/4.4.0)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers.job_output import history_records

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.job import StreamingQueryJob
from rebalance_monitor.testing.witnesses import load_captured, produce_records

pytestmark = [pytest.mark.integration, pytest.mark.spark]

DATA = Path(__file__).resolve().parents[1] / "witnesses" / "data" / "4.4.0"


@pytest.fixture(scope="module")
def written(spark, broker, tmp_path_factory):
    work = tmp_path_factory.mktemp("history")
    topic, history_topic = "history-input", "history-output"
    broker.create_topics({topic: 1, history_topic: 3})
    produce_records(broker.bootstrap, topic, load_captured(DATA)["events"])
    settings = {"kafka": {"bootstrap_servers": broker.bootstrap, "events_topic": topic,
                          "starting_offsets": "earliest"},
                "state": {"checkpoint_location": str(work / "ck")},
                "sinks": {"history": {"parquet_path": str(work / "parquet"), "kafka_topic": history_topic},
                          "dead_letter": {"path": str(work / "dlq")}},
                "exporter": {"enabled": False}}
    cfg_path = work / "monitor.yaml"
    cfg_path.write_text(yaml.safe_dump(settings))
    StreamingQueryJob(load_config(cfg_path, env={}), spark=spark, idle_clock=False).run_once(timeout_s=300)
    return cfg_path, history_records(work / "parquet")


def _history(cfg_path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rebalance_monitor", "history", "--config", str(cfg_path), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("source", ["parquet", "kafka"])
def test_a_groups_timeline(written, source):
    cfg_path, records = written
    group = "w-crash"
    gens = [r for r in records if r["group"] == group and r["kind"] == "generation"]
    timeouts = [r for r in records if r["group"] == group and r["kind"] == "member_timeout"]
    assert len(gens) >= 3 and timeouts
    proc = _history(cfg_path, "--group", group, "--source", source, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(ln) for ln in proc.stdout.splitlines()]
    assert [r["generation"] for r in rows if r["event"] == "generation"] == [g["generation"] for g in gens]
    assert {r["cluster"] for r in rows} == {"default"}  # the sink stamped each record (kafka.cluster_name)
    assert sum(r["event"] == "session timeout" for r in rows) == \
        sum(t["timeout"] == "session" for t in timeouts)
    crash = next(r for r in rows if r["event"] == "generation" and "session_timeout" in r["detail"])
    assert "crash-" in crash["detail"]  # the crashed member's client id names the cause
    # a time range keeps only what is inside it
    since = gens[-1]["ts"]
    proc = _history(cfg_path, "--group", group, "--source", source, "--format", "json", "--since", str(since))
    assert all(json.loads(ln)["time"] >= _iso(since) for ln in proc.stdout.splitlines())


def _iso(ms: int) -> str:
    from rebalance_monitor.history.row_formats import _iso as iso

    return iso(ms)


def test_fleet_top_groups_and_the_table(written):
    cfg_path, records = written
    assert records and {r["kafka_cluster"] for r in records} == {"default"}
    counts = {}
    for r in records:
        if r["kind"] == "generation":
            counts[r["group"]] = counts.get(r["group"], 0) + 1
    proc = _history(cfg_path, "--format", "csv", "--top", "3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("cluster,group,rebalances,")
    top = [ln.split(",") for ln in lines[1:]]
    assert [int(t[2]) for t in top] == sorted(counts.values(), reverse=True)[:3]
    assert all(t[0] == "default" and counts[t[1]] == int(t[2]) for t in top)
    table = _history(cfg_path, "--group", "w-storm")
    assert table.returncode == 0 and table.stdout.startswith("group w-storm: ") and "generation" in table.stdout


def test_a_missing_history_is_said_plainly(tmp_path):
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(yaml.safe_dump({"sinks": {"history": {"parquet_path": str(tmp_path / "none")}}}))
    proc = _history(cfg, "--group", "g")
    assert proc.returncode == 1 and "no history at" in proc.stderr
