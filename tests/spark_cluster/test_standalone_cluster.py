"""The job as users run it on a cluster: a Spark standalone master and two workers (separate JVMs, from PySpark's
own classes), `spark-submit --deploy-mode client` with Spark's Kafka connector and Hadoop's S3A (`--jars
var/spark-jars/*`), executors in their own JVMs with their own Python workers, the checkpoint on storage the
driver and the executors share, with the history sink beside it. Two kinds of shared storage, one test each, on
the one cluster of the module:

* S3 (a bucket of the local S3 server, `s3a://`). One test, because each stage needs the previous one: an
  executor is killed mid-stream (its tasks are retried on the replacement, nothing lost or doubled), then the
  driver is killed and submitted again (it resumes from the checkpoint, and its exported counters from the
  metrics snapshot there); at the end the history equals `replay` of the same real events, no generation is
  counted twice and no /metrics counter went backwards across the restart.
* A local directory that the driver and both executors reach at the same path (what a ReadWriteMany volume
  mounted in every pod gives), named by a plain path in the first submission and by a `file://` URI of the same
  directory in the second: both forms name the one checkpoint. Two `run --once` submissions: the first reads
  the input up to the middle of one group's rolling restart, the second the rest. The executors write the
  state store under the checkpoint's `state/` and the second run resumes from it: that group's first
  generation in the second run is what the state from the first makes of it (from an empty state it would
  differ), the history equals `replay` of the whole input, and no generation is counted twice, in the history
  or in the restored exported counters."""
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
from helpers.job_output import comparable, committed_batches, committed_offsets, history_records
from helpers.object_store import s3a_jars

from rebalance_monitor.config import load_config
from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.vocabulary import HISTORY_KINDS
from rebalance_monitor.testing.broker import free_port
from rebalance_monitor.testing.processes import stop_process_group
from rebalance_monitor.testing.spark_cluster import StandaloneCluster
from rebalance_monitor.testing.witnesses import load_captured, produce_records

pytestmark = [pytest.mark.integration, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
JARS = sorted((ROOT / "var" / "spark-jars").glob("*.jar"))
DATA = ROOT / "tests" / "witnesses" / "data" / "4.4.0"
SPARK_MAIN = ROOT / "deploy" / "spark_main.py"
# the driver's settings for this 2-core machine: one executor per worker, tasks retried on the other one
SUBMIT_CONF = {"spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "2",
               "spark.task.maxFailures": "8"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not any(j.name.startswith("spark-sql-kafka") for j in JARS) or not s3a_jars(str(ROOT / "var" / "spark-jars")):
        pytest.fail("Spark's Kafka connector or Hadoop's S3A is not in var/spark-jars: run scripts/bootstrap.sh")
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores_per_worker=1,
                           memory_per_worker="1g") as c:
        yield c


def _captured_events() -> list[bytes]:
    """The instrumented clients' events real brokers recorded (12 groups' scenarios, one after another)."""
    return [v for _, v, _ in load_captured(DATA)["events"]]


def _settings(broker, topic: str, work: Path, checkpoint: str, history: str, port: int,
              conf: dict | None = None) -> dict:
    """The job's configuration on the cluster: Spark's connector from `earliest`, `spark.master` null (the one
    spark-submit was given, as under the Spark operator), a 2 s trigger and watermark delay, the exporter on
    `port`; `conf` reaches the driver's and the executors' Hadoop configuration (`spark.hadoop.*`)."""
    return {
        "kafka": {"bootstrap_servers": broker.bootstrap, "events_topic": topic, "starting_offsets": "earliest",
                  "max_offsets_per_trigger": 80, "connector": "spark"},
        "spark": {"master": None, "trigger_interval": "2s", "shuffle_partitions": 2,
                  "local_dir": str(work / "spark-local"), "conf": conf or {}},
        "state": {"checkpoint_location": checkpoint, "watermark_delay": "2s", "idle_clock": False},
        "sinks": {"history": {"parquet_path": history}, "dead_letter": {"path": str(work / "dlq")}},
        "exporter": {"enabled": True, "host": "127.0.0.1", "port": port},
        # the job is held against replay of the captured history it reads: what the broker poller would add (today's
        # settings of the test broker, stamped when the job read them) is no part of that history
        "broker_facts": {"enabled": False},
    }


def _write_config(path: Path, settings: dict):
    """Write `settings` as the job's config file at `path`; the configuration the job reads from it."""
    path.write_text(yaml.safe_dump(settings))
    return load_config(path, env={})


def _submit(cluster, cfg_path: Path, log: Path, *args: str) -> subprocess.Popen:
    """`spark-submit --deploy-mode client ... deploy/spark_main.py run --config FILE [args]` against `cluster`."""
    return cluster.submit([str(SPARK_MAIN), "run", "--config", str(cfg_path), *args], jars=JARS, conf=SUBMIT_CONF,
                          log_path=log, cwd=log.parent)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:]


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
    def done():
        value = predicate()
        if not value and proc is not None and proc.poll() is not None:
            raise AssertionError(f"the driver exited ({proc.returncode}) while waiting for {what}: "
                                 f"{_tail(log) if log else ''}")
        return value

    return eventually(done, timeout_s, lambda: f"{what}: {_tail(log) if log else ''}", interval_s=1)


def _replay(lines: list[bytes], cfg) -> list[dict]:
    """The history records `replay` gives for `lines` (one input, from an empty state)."""
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay))
    out = []
    for raw in lines:
        out.extend(recon.feed(parse_event(json.loads(raw))))
    out.extend(recon.finish())
    return [r for r in out if r["kind"] in HISTORY_KINDS]


def _assert_same_records(expected: list[dict], got: list[dict]) -> None:
    """`got` holds what `expected` holds, each record as many times (batch boundaries aside: `comparable`)."""
    want, have = Counter(comparable(expected)), Counter(comparable(got))
    assert want == have, f"missing from the history: {list(want - have)}; not in replay: {list(have - want)}"


def _generations(samples: dict[str, float]) -> float:
    return sum(v for k, v in samples.items() if k.startswith("kafka_consumergroup_generations_total"))


def _generations_of(records: list[dict], group: str | None = None) -> list[dict]:
    return [r for r in records if r["kind"] == "generation" and group in (None, r["group"])]


def test_executor_and_driver_killed_mid_stream_lose_and_double_nothing(cluster, broker, object_store, unique,
                                                                       tmp_path):
    topic = f"ev-{unique}"
    bucket = object_store.create_bucket(f"rm-cluster-{os.getpid()}-{int(time.time())}")
    s3 = object_store.hadoop_conf(bucket)
    broker.create_topics({topic: 1})
    events = _captured_events()
    last = max(json.loads(v)["ts"] for v in events)
    # a last event 2 s (the watermark delay) later, in a group of its own: once read, event time is exactly where
    # replay's end of input leaves it
    sentinel = json.dumps({"v": 1, "type": "poll", "ts": last + 2000, "group": "zz-sentinel",
                           "member_id": "s"}).encode()
    produce_records(broker.bootstrap, topic, [(None, v, None) for v in events + [sentinel]])

    port = free_port()
    cfg_path = tmp_path / "monitor.yaml"
    cfg = _write_config(cfg_path, _settings(broker, topic, tmp_path, f"s3a://{bucket}/ck", f"s3a://{bucket}/history",
                                            port, conf=object_store.spark_conf(bucket)))
    metrics_url = f"http://127.0.0.1:{port}/metrics"
    end = len(events) + 1
    expected = _replay(events + [sentinel], cfg)
    query_dir = f"s3a://{bucket}/ck/query"

    def read_offset() -> int:
        return committed_offsets(query_dir, s3).get(topic, {}).get(0, 0)

    started = time.monotonic()
    stages = {}
    log = tmp_path / "driver-1.log"
    driver = _submit(cluster, cfg_path, log)
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

        log = tmp_path / "driver-2.log"
        driver = _submit(cluster, cfg_path, log)
        _wait("the whole input committed", lambda: read_offset() >= end, 600, driver, log)
        stages["resubmitted driver drained the input"] = time.monotonic() - started
        # the batches after the input's end (Spark runs one at every trigger) fire the last timers
        _wait("the history to hold every record replay gives",
              lambda: len(history_records(f"s3a://{bucket}/history", s3)) >= len(expected), 300, driver, log)
        after = _wait("every generation counted on /metrics",
                      lambda: (m := _scrape(metrics_url)) and _generations(m) >= len(_generations_of(expected))
                      and m, 60, driver, log)
    finally:
        stop_process_group(driver, timeout_s=60)  # a hard stop after that is fine at the end

    print("stages (s from the first submit):", {k: round(v, 1) for k, v in stages.items()})
    # the resubmitted driver found the metrics snapshot on S3 (through Hadoop's S3A) and continued from it
    assert "exported metrics restored as of micro-batch" in log.read_text(errors="replace")
    went_back = {k: (v, after.get(k)) for k, v in before.items()
                 if k.startswith("kafka_consumergroup_") and after.get(k, 0) < v}
    assert not went_back, f"counters went backwards across the driver restart: {went_back}"
    _assert_same_records(expected, history_records(f"s3a://{bucket}/history", s3))
    # Spark's connector kept to maxOffsetsPerTrigger (80): the input took at least end / 80 batches
    assert len(committed_batches(query_dir, s3)) >= end // 80
    assert len(_generations_of(expected)) >= 20 and _generations(after) == len(_generations_of(expected))


def _middle_of(events: list[bytes], group: str) -> int:
    """The index of the middle one of `group`'s events: the input split there, halfway through its scenario."""
    where = [i for i, raw in enumerate(events) if json.loads(raw)["group"] == group]
    return where[len(where) // 2]


def _run_once(cluster, cfg_path: Path, log: Path, timeout_s: float = 420) -> None:
    """Submit `run --once` and wait for it to end; it must exit 0."""
    driver = _submit(cluster, cfg_path, log, "--once")
    try:
        driver.wait(timeout_s)
    except subprocess.TimeoutExpired:
        pytest.fail(f"run --once did not end within {timeout_s} s: {_tail(log)}")
    finally:
        stop_process_group(driver)
    assert driver.returncode == 0, f"run --once exited with {driver.returncode}: {_tail(log)}"


def test_checkpoint_on_a_shared_local_directory_resumes_without_counting_twice(cluster, broker, unique, tmp_path):
    topic = f"ev-{unique}"
    broker.create_topics({topic: 1})
    events = _captured_events()
    group = "w-rolling_restart"  # 7 generations as members restart one by one
    split = _middle_of(events, group)
    ts = [json.loads(raw)["ts"] for raw in events]
    # run 1 leaves every group at its last event time (replay's end of input): the rest must come after it
    assert min(ts[split:]) > max(ts[:split])
    shared = tmp_path / "shared"  # what the driver and both executors read and write, at this one path
    checkpoint, history = shared / "ck", shared / "history"
    port = free_port()
    forms = {1: (str(checkpoint), str(history)), 2: (checkpoint.as_uri(), history.as_uri())}
    cfg = {n: _write_config(tmp_path / f"monitor-{n}.yaml",
                            _settings(broker, topic, tmp_path, ck, hist, port)) for n, (ck, hist) in forms.items()}
    assert cfg[2].state.checkpoint_location.startswith("file:///")
    query_dir = checkpoint / "query"

    started = time.monotonic()
    produce_records(broker.bootstrap, topic, [(None, v, None) for v in events[:split]])
    _run_once(cluster, tmp_path / "monitor-1.yaml", tmp_path / "driver-1.log")
    first_run_s = time.monotonic() - started
    first = history_records(history)
    assert committed_offsets(query_dir) == {topic: {0: split}}
    # the state store, written by the executors (the driver runs no task): a directory per shuffle partition
    # of the one stateful operator, each with the files of a committed version
    state = query_dir / "state" / "0"
    written = {p.name: sorted(f.name for f in p.rglob("*") if f.is_file()) for p in state.iterdir()
               if p.name.isdigit()}
    assert sorted(written) == ["0", "1"] and all(written.values()), written

    produce_records(broker.bootstrap, topic, [(None, v, None) for v in events[split:]])
    _run_once(cluster, tmp_path / "monitor-2.yaml", tmp_path / "driver-2.log")
    print(f"run --once: {first_run_s:.1f} s, then {time.monotonic() - started - first_run_s:.1f} s")
    assert committed_offsets(query_dir) == {topic: {0: len(events)}}
    got = history_records(history)
    second = got[len(first):]
    assert got[:len(first)] == first  # the second run wrote beside the first one's batches, replacing none

    expected = _replay(events, cfg[1])
    _assert_same_records(expected, got)
    # the group's generations continue from where run 1 left them, and the first one of run 2 is what its
    # state from run 1 makes of it: from an empty state (replay of the second half alone) it would differ
    before, after = _generations_of(first, group), _generations_of(second, group)
    assert before and after and after[0]["generation"] == before[-1]["generation"] + 1, (before, after)
    fresh = {r["generation"]: r for r in _generations_of(_replay(events[split:], cfg[1]), group)}
    assert comparable([after[0]]) != comparable([fresh[after[0]["generation"]]])
    # the exported counters: run 2 restored the snapshot run 1 left in the checkpoint and added its own
    assert "exported metrics restored as of micro-batch" in (tmp_path / "driver-2.log").read_text(errors="replace")
    snapshot = json.loads((checkpoint / "metrics-state.json").read_text())
    assert snapshot["counters"]["output_records"]["generation"] == len(_generations_of(expected)) >= 20
