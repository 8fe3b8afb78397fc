"""Spark's own Kafka connector (spark-sql-kafka at PySpark's version, fetched by scripts/fetch_spark_jars.sh into
var/spark-jars) against the project's Python source: the same real inputs give the same records.

The connector runs the way a user runs it: `rebalance-monitor run --once --config FILE` in its own process, with
`spark.jars_dir` and `kafka.connector: spark` in the file, writing the history sink. The Python source runs in
this process on the shared SparkSession. Inputs are what real Apache Kafka 4.4 brokers and clients recorded
(tests/witnesses/data/4.4.0: instrumented clients' events, the coordinator's log lines, `__consumer_offsets`
records with their timestamps) plus undecodable records; then partitions are added to the events topic and a
second run from the same checkpoint must read them and count nothing twice."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers.job_output import comparable, dead_letter_reasons, history_records

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.job import StreamingQueryJob
from rebalance_monitor.testing.kafka_admin import add_partitions
from rebalance_monitor.testing.witnesses import load_captured, produce_records

pytestmark = [pytest.mark.integration, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
JARS = ROOT / "var" / "spark-jars"
DATA = Path(__file__).resolve().parents[1] / "witnesses" / "data" / "4.4.0"
BAD = [b"not json at all", b"\x00\x01\x02 binary", b'{"v": 1, "type": "teleport", "ts": 1, "group": "g"}']


def _later_group(base: int) -> list[bytes]:
    """A group that forms after the captured ones: two members, one generation, heartbeats."""
    members = ("late-a", "late-b")
    common = {"v": 1, "group": "late-group"}
    ev = [{**common, "type": "join", "ts": base + i, "member_id": m, "client_id": m, "host": "/127.0.0.1",
           "protocols": ["range"], "topics": ["late-t"], "owned": [], "session_timeout_ms": 45000,
           "rebalance_timeout_ms": 30000, "heartbeat_interval_ms": 3000} for i, m in enumerate(members)]
    ev += [{**common, "type": "sync", "ts": base + 100 + i, "member_id": m, "generation": 1, "protocol": "range",
            "leader": "late-a", "assignment": [["late-t", i]]} for i, m in enumerate(members)]
    ev += [{**common, "type": "heartbeat", "ts": t + i, "member_id": m, "generation": 1}
           for t in range(base + 1000, base + 6000, 1000) for i, m in enumerate(members)]
    return [json.dumps(e).encode() for e in ev]


def _settings(broker, topics: dict, work: Path, connector: str) -> dict:
    return {
        "kafka": {"bootstrap_servers": broker.bootstrap, "events_topic": topics["events"],
                  "coordinator_log_topic": topics["log"], "offsets_topic": topics["offsets"],
                  "offsets_topic_partitions": 10, "starting_offsets": "earliest",
                  "max_offsets_per_trigger": 400, "connector": connector,
                  # the captured cluster's topic ids (KIP-848 records name topics by id): both decode paths
                  "topic_ids": str(DATA / "topic_ids.json")},
        "spark": {"jars_dir": str(JARS) if connector == "spark" else None, "local_dir": str(work / "spark"),
                  "shuffle_partitions": 2},
        "state": {"checkpoint_location": str(work / "ck"), "watermark_delay": "2s"},
        "sinks": {"history": {"parquet_path": str(work / "history")}, "dead_letter": {"path": str(work / "dlq")}},
        "exporter": {"enabled": False},
    }


def _run_connector_process(work: Path, settings: dict) -> str:
    cfg_path = work / "monitor.yaml"
    cfg_path.write_text(yaml.safe_dump(settings))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "-m", "rebalance_monitor", "run", "--once", "--config", str(cfg_path)],
                          capture_output=True, text=True, timeout=420, env=env, cwd=str(work))
    runs = len(list(work.glob("run-*.log")))
    (work / f"run-{runs + 1}.log").write_text(proc.stderr)  # kept for a look after a failure (--basetemp)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stderr


def _run_python_source(spark, settings: dict) -> None:
    flat = {}

    def walk(prefix, d):
        for k, v in d.items():
            if isinstance(v, dict) and k != "conf":
                walk(f"{prefix}{k}.", v)
            else:
                flat[f"{prefix}{k}"] = v
    walk("", settings)
    job = StreamingQueryJob(load_config(env={}, overrides=flat), spark=spark, idle_clock=False)
    job.run_once(timeout_s=300)


@pytest.fixture(scope="module")
def connector_jars():
    if not any(JARS.glob("spark-sql-kafka-0-10_2.13-*.jar")):
        pytest.fail(f"Spark's Kafka connector is not in {JARS}: run scripts/bootstrap.sh (scripts/fetch_spark_jars.sh)")
    return JARS


def test_sparks_connector_and_the_python_source_give_the_same_records(spark, broker, unique, tmp_path,
                                                                       connector_jars):
    # each run reads its own copy of the inputs: a run writes a wake-up record to its events topic, and a
    # shared topic would then hold one more record for the second run, which moves where its batches split
    runs = {"spark": tmp_path / "spark-connector", "python": tmp_path / "python-source"}
    captured = load_captured(DATA)
    events = [v for _, v, _ in captured["events"]]
    topics = {}
    for name, work in runs.items():
        work.mkdir()
        topics[name] = {"events": f"ev-{name}-{unique}", "log": f"log-{name}-{unique}",
                        "offsets": f"off-{name}-{unique}"}
        broker.create_topics({t: 1 for t in topics[name].values()})
        produce_records(broker.bootstrap, topics[name]["events"],
                        captured["events"] + [(None, v, None) for v in BAD])
        produce_records(broker.bootstrap, topics[name]["log"], captured["coordinator-log"])
        produce_records(broker.bootstrap, topics[name]["offsets"], captured["offsets-topic"])
    settings = {name: _settings(broker, topics[name], work, name) for name, work in runs.items()}

    log = _run_connector_process(runs["spark"], settings["spark"])
    assert "format 'kafka'" in log, log[-3000:]  # Spark's connector read, not the fallback
    assert "in a mapInArrow stage" in log
    # the offset commits compacted in the JVM (streaming/java/spark-input-stage, built by the bootstrap into
    # var/spark-jars), every record still counted as read
    assert f"compacting the offset commits of {topics['spark']['offsets']} in the JVM" in log, log[-3000:]
    # and the events' heartbeats, polls and commits packed per group there (spark/jvm_packing.py)
    assert f"packing the heartbeats, polls and commits of {topics['spark']['events']} in the JVM" in log, log[-3000:]
    produced = sum(len(captured[k]) for k in ("events", "coordinator-log", "offsets-topic")) + len(BAD)
    assert f"{produced} records read" in log, log[-3000:]
    _run_python_source(spark, settings["python"])

    first = {name: history_records(work / "history") for name, work in runs.items()}
    assert sum(r["kind"] == "generation" for r in first["python"]) >= 20  # the captured scenarios' generations
    assert {r["kind"] for r in first["python"]} >= {"generation", "rebalance_started"}
    assert comparable(first["spark"]) == comparable(first["python"])
    kip848 = [r for r in first["spark"] if r["group"] == "w-kip848_scale" and r["kind"] == "generation"
              and r["assignment"]]
    assert kip848 and {tp[0] for r in kip848 for tps in r["assignment"].values() for tp in tps} == {"w-kip848_scale"}
    assert dead_letter_reasons(runs["spark"] / "dlq") == dead_letter_reasons(runs["python"] / "dlq")
    assert len(dead_letter_reasons(runs["spark"] / "dlq")) == len(BAD)

    # partitions added while the job is down: the next run reads them (from their start) and nothing twice
    base = max(json.loads(v)["ts"] for v in events) + 60_000
    for name in runs:
        add_partitions(broker.bootstrap, topics[name]["events"], 3)
        produce_records(broker.bootstrap, topics[name]["events"], [(None, v, None) for v in _later_group(base)],
                        partition=None)
    _run_connector_process(runs["spark"], settings["spark"])
    _run_python_source(spark, settings["python"])
    second = {name: history_records(work / "history")[len(first[name]):] for name, work in runs.items()}
    late = [r for r in second["spark"] if r["group"] == "late-group" and r["kind"] == "generation"]
    assert len(late) == 1 and sorted(late[0]["members"]) == ["late-a", "late-b"]
    assert all(r["group"] == "late-group" or r["kind"] != "generation" for r in second["spark"])
    assert comparable(second["spark"]) == comparable(second["python"])
