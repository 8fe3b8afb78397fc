"""The job with its checkpoint, metrics snapshot, history and dead letters on S3 (`s3a://`, a bucket of the local
S3 server, through Hadoop's S3A), on the real broker and the shared SparkSession: stopped and started again from
the S3 checkpoint, its state and its exported counters continue (no counter back at 0, no generation counted
twice), and the history it wrote to S3 equals `replay` of the same events, read back by `rebalance-monitor
history` too."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from helpers.exposition import parse, series
from helpers.in_process_job import make_cfg, run_until_idle
from helpers.kafka_produce import produce
from helpers.replay import comparable, replay_records
from helpers.scripted_input import BAD, scripted_events

from rebalance_monitor.history.reader import Query, read_parquet
from rebalance_monitor.metrics.state_file import MetricsStateFile
from rebalance_monitor.metrics.updater import MetricsUpdater
from rebalance_monitor.files import HadoopFiles
from rebalance_monitor.core.vocabulary import HISTORY_KINDS

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def generations_counted(updater: MetricsUpdater) -> dict:
    return {dict(labels)["group"]: v
            for labels, v in series(parse(updater.render()), "kafka_consumergroup_generations_total").items()}


def test_a_job_on_an_s3_checkpoint_resumes_state_and_counters_and_writes_its_history_there(
        spark, broker, object_store, s3_bucket, unique, tmp_path):
    bucket, uri = s3_bucket
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    events = scripted_events(int(time.time() * 1000) - 120_000)
    half = len(events) // 2
    cfg = make_cfg(broker, topic, tmp_path, **{"state.checkpoint_location": f"{uri}/ck",
                                               "sinks.history.parquet_path": f"{uri}/history",
                                               "sinks.dead_letter.path": f"{uri}/dlq"})
    files = HadoopFiles(spark)
    collected = []

    produce(broker, topic, events[:half] + BAD)
    first = MetricsUpdater()
    job = run_until_idle(spark, cfg, collected, updater=first)
    # the snapshot is on S3, tagged with the last batch and the query Spark's own checkpoint there names
    snapshot = json.loads(files.read_bytes(f"{uri}/ck/metrics-state.json"))
    query_id = json.loads(files.read_bytes(f"{uri}/ck/query/metadata").decode().splitlines()[0])["id"]
    assert snapshot["batch_id"] == job.stats.last_batch_id and snapshot["query_id"] == query_id
    assert "state" in files.list(f"{uri}/ck/query")            # the state store is on S3 too
    assert not os.path.exists("s3a:"), "a URI setting was used as a local path"
    counted_first = generations_counted(first)
    assert sum(counted_first.values()) >= 2

    # a new process would find it: the snapshot loads, with the counters of the first run
    probe = MetricsUpdater()
    assert MetricsStateFile(f"{uri}/ck/metrics-state.json", f"{uri}/ck/query", files=files).load(probe)
    assert generations_counted(probe) == counted_first

    produce(broker, topic, events[half:])
    second = MetricsUpdater()
    run_until_idle(spark, cfg, collected, flush_to=max(e["ts"] for e in events), updater=second)

    expected = replay_records(events, cfg)
    records = [r for _, recs, _ in collected for r in recs]
    assert comparable(records) == comparable(expected)
    # counted once across the restart: the second run continued from the first run's counters
    assert generations_counted(second) == {
        g: sum(1 for r in expected if r["kind"] == "generation" and r["group"] == g) for g in ("g1", "g2")}
    # the history on S3 holds every record of the kinds kept, once; read back with pyarrow's S3 client
    history = list(read_parquet(f"{uri}/history", Query(), object_store.hadoop_conf(bucket)))
    kept = [r for r in expected if r["kind"] in HISTORY_KINDS]
    assert comparable(history) == comparable(kept)
    assert all(name.startswith("batch_id=") for name in files.list(f"{uri}/history"))
    # the dead letters too, one file per batch
    dead = [json.loads(line) for name in files.list(f"{uri}/dlq")
            for line in files.read_bytes(f"{uri}/dlq/{name}").decode().splitlines()]
    assert sorted(d["reason"] for d in dead) == sorted(
        ["not_json", "not_json", "unsupported_version", "missing_field:ts", "unknown_type"])

    # `rebalance-monitor history` reads the S3 history with the settings of the job's spark.conf
    config = tmp_path / "monitor.yaml"
    config.write_text(yaml.safe_dump({"sinks": {"history": {"parquet_path": f"{uri}/history"}},
                                      "spark": {"conf": object_store.spark_conf(bucket)}}))
    proc = subprocess.run([sys.executable, "-m", "rebalance_monitor", "history", "--config", str(config),
                           "--group", "g1", "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["generation"] for r in rows if r["event"] == "generation"] == \
        [r["generation"] for r in sorted(kept, key=lambda r: r["ts"]) if r["group"] == "g1" and r["kind"] == "generation"]
