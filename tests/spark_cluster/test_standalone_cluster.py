"""The job as users run it on a cluster: a Spark standalone master and two workers (separate JVMs, from PySpark's
own classes), `spark-submit --deploy-mode client` with Spark's Kafka connector and Hadoop's S3A (`--jars
var/spark-jars/*`), executors in their own JVMs with their own Python workers, the checkpoint on storage all of
them share: S3 (a bucket of the local S3 server, `s3a://`), with the history sink beside it.

One test, because each stage needs the previous one: an executor is killed mid-stream (its tasks are retried on
the replacement, nothing lost or doubled), then the driver is killed and submitted again (it resumes from the
checkpoint, and its exported counters from the metrics snapshot there); at the end the history equals `replay`
of the same real events, no generation is counted twice and no /metrics counter went backwards across the
restart."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import yaml

from helpers.eventually import eventually

from rebalance_monitor.config import load_config
from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.vocabulary import HISTORY_KINDS
from rebalance_monitor.testing.broker import free_port
from rebalance_monitor.testing.job_output import comparable, committed_batches, committed_offsets, history_records
from rebalance_monitor.testing.object_store import s3a_jars
from rebalance_monitor.testing.spark_cluster import StandaloneCluster
from rebalance_monitor.testing.witnesses import load_captured, produce_records

pytestmark = [pytest.mark.integration, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
JARS = sorted((ROOT / "var" / "spark-jars").glob("*.jar"))
DATA = ROOT / "tests" / "witnesses" / "data" / "4.4.0"
SPARK_MAIN = ROOT / "deploy" / "spark_main.py"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not any(j.name.startswith("spark-sql-kafka") for j in JARS) or not s3a_jars(str(ROOT / "var" / "spark-jars")):
        pytest.fail("Spark's Kafka connector or Hadoop's S3A is not in var/spark-jars: run scripts/bootstrap.sh")
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores_per_worker=1,
                           memory_per_worker="1g") as c:
        yield c


def _scrape(url: str) -> dict[str, float]:
    """Counter samples (name{labels} -> value) of /metrics."""
    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+_total(?:\{[^}]*\})?) ([0-9.e+-]+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def _wait(what: str, predicate, timeout_s: float, proc=None, log: Path | None = None):
    """`eventually`, every second, failing at once if the driver `proc` exits; the end of `log` in the message."""
    def tail() -> str:
        return log.read_text(errors="replace")[-4000:] if log else ""

    def done():
        value = predicate()
        if not value and proc is not None and proc.poll() is not None:
            raise AssertionError(f"the driver exited ({proc.returncode}) while waiting for {what}: {tail()}")
        return value

    return eventually(done, timeout_s, lambda: f"{what}: {tail()}", interval_s=1)


def _replay(lines: list[bytes], cfg) -> list[dict]:
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay))
    out = []
    for raw in lines:
        out.extend(recon.feed(parse_event(json.loads(raw))))
    out.extend(recon.finish())
    return out


def test_executor_and_driver_killed_mid_stream_lose_and_double_nothing(cluster, broker, object_store, unique,
                                                                       tmp_path):
    topic = f"ev-{unique}"
    bucket = object_store.create_bucket(f"rm-cluster-{os.getpid()}-{int(time.time())}")
    s3 = object_store.hadoop_conf(bucket)
    broker.create_topics({topic: 1})
    events = [v for _, v, _ in load_captured(DATA)["events"]]
    last = max(json.loads(v)["ts"] for v in events)
    # a last event 2 s (the watermark delay) later, in a group of its own: once read, event time is exactly where
    # replay's end of input leaves it
    sentinel = json.dumps({"v": 1, "type": "poll", "ts": last + 2000, "group": "zz-sentinel",
                           "member_id": "s"}).encode()
    produce_records(broker.bootstrap, topic, [(None, v, None) for v in events + [sentinel]])

    port = free_port()
    settings = {
        "kafka": {"bootstrap_servers": broker.bootstrap, "events_topic": topic, "starting_offsets": "earliest",
                  "max_offsets_per_trigger": 80, "connector": "spark"},
        # master null: the one spark-submit was given (as under the Spark operator)
        # the S3A settings reach the driver's and the executors' Hadoop configuration (spark.hadoop.*)
        "spark": {"master": None, "trigger_interval": "2s", "shuffle_partitions": 2,
                  "local_dir": str(tmp_path / "spark-local"), "conf": object_store.spark_conf(bucket)},
        "state": {"checkpoint_location": f"s3a://{bucket}/ck", "watermark_delay": "2s", "idle_clock": False},
        "sinks": {"history": {"parquet_path": f"s3a://{bucket}/history"},
                  "dead_letter": {"path": str(tmp_path / "dlq")}},
        "exporter": {"enabled": True, "host": "127.0.0.1", "port": port},
    }
    cfg_path = tmp_path / "monitor.yaml"
    cfg_path.write_text(yaml.safe_dump(settings))
    cfg = load_config(cfg_path, env={})
    metrics_url = f"http://127.0.0.1:{port}/metrics"
    end = len(events) + 1
    expected = [r for r in _replay(events + [sentinel], cfg) if r["kind"] in HISTORY_KINDS]
    query_dir = f"s3a://{bucket}/ck/query"

    def submit(n: int):
        log = tmp_path / f"driver-{n}.log"
        conf = {"spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "2",
                "spark.task.maxFailures": "8"}
        return cluster.submit([str(SPARK_MAIN), "run", "--config", str(cfg_path)], jars=JARS, conf=conf,
                              log_path=log, cwd=tmp_path), log

    def read_offset() -> int:
        return committed_offsets(query_dir, s3).get(topic, {}).get(0, 0)

    started = time.monotonic()
    stages = {}
    driver, log = submit(1)
    try:
        executors = _wait("two executors", lambda: len(cluster.executor_pids()) >= 2 and cluster.executor_pids(),
                          180, driver, log)
        _wait("a first committed batch", lambda: read_offset() > 0, 360, driver, log)
        stages["first batch"] = time.monotonic() - started
        at_kill = read_offset()
        cluster.kill(executors[0])  # SIGKILL: its running tasks fail and are retried elsewhere
        _wait("progress past the executor's death", lambda: read_offset() >= min(end, at_kill + 160), 360,
              driver, log)
        assert executors[0] not in cluster.executor_pids()
        before = _wait("counters on /metrics", lambda: _scrape(metrics_url), 60, driver, log)
        assert read_offset() < end, "the input was drained before the driver could be killed mid-stream"
        stages["executor killed and replaced"] = time.monotonic() - started
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(30)

        driver, log = submit(2)
        _wait("the whole input committed", lambda: read_offset() >= end, 600, driver, log)
        stages["resubmitted driver drained the input"] = time.monotonic() - started
        # the batches after the input's end (Spark runs one at every trigger) fire the last timers
        _wait("the history to hold every record replay gives",
              lambda: len(history_records(f"s3a://{bucket}/history", s3)) >= len(expected), 300, driver, log)
        after = _wait("every generation counted on /metrics",
                      lambda: (m := _scrape(metrics_url)) and _generations(m) >= _generations_of(expected) and m,
                      60, driver, log)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGTERM)
            try:
                driver.wait(60)
            except subprocess.TimeoutExpired:  # a hard stop is fine at the end
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait(30)

    print("stages (s from the first submit):", {k: round(v, 1) for k, v in stages.items()})
    # the resubmitted driver found the metrics snapshot on S3 (through Hadoop's S3A) and continued from it
    assert "exported metrics restored as of micro-batch" in log.read_text(errors="replace")
    went_back = {k: (v, after.get(k)) for k, v in before.items()
                 if k.startswith("kafka_consumergroup_") and after.get(k, 0) < v}
    assert not went_back, f"counters went backwards across the driver restart: {went_back}"
    got = history_records(f"s3a://{bucket}/history", s3)
    missing, extra = Counter(comparable(expected)) - Counter(comparable(got)), Counter(comparable(got)) - \
        Counter(comparable(expected))
    assert not missing and not extra, f"missing from the history: {list(missing)}; not in replay: {list(extra)}"
    # Spark's connector kept to maxOffsetsPerTrigger (80): the input took at least end / 80 batches
    assert len(committed_batches(query_dir, s3)) >= end // 80
    assert _generations_of(expected) >= 20 and _generations(after) == _generations_of(expected)


def _generations(samples: dict[str, float]) -> float:
    return sum(v for k, v in samples.items() if k.startswith("kafka_consumergroup_generations_total"))


def _generations_of(records: list[dict]) -> int:
    return sum(r["kind"] == "generation" for r in records)
