"""Failing well: the real `rebalance-monitor run` against a Kafka it cannot reach.

* a closed loopback port: one log line per back-off step, naming the address and the client's error (not the
  clients' own lines several times a second), /ready red with that line, /healthz green; then a broker starts
  on that port and the job recovers by itself: /ready turns green; then SIGTERM to the job's whole process group
  (as a terminal, systemd or a container runtime may send it, Spark's JVM included) stops it in order, one line
  per step, exit code 0, with no traceback, Java exception or ERROR anywhere; and at INFO the job said nothing
  (no line of Spark's either) but its configuration summary, its inputs, where its metrics are, the back-off steps, one progress line per
  interval and its stop;
* a listener reached with the wrong security protocol (SSL against the test broker's PLAINTEXT): the same
  report, with the client's error.
"""
from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from helpers.eventually import eventually
from helpers.monitor_process import start_job

from rebalance_monitor.testing.broker import Broker, free_port

pytestmark = [pytest.mark.integration]

WATCH_S = 12  # how long the job is watched failing (back-off probes at 0, 1, 3, 7 s: a flood would show dozens)


def job_config(tmp_path: Path, bootstrap: str, topic: str, port: int, **kafka) -> Path:
    conf = {
        "kafka": {"bootstrap_servers": bootstrap, "events_topic": topic, "connector": "python", **kafka},
        "spark": {"trigger_interval": "1s", "local_dir": str(tmp_path / "spark")},
        "state": {"checkpoint_location": str(tmp_path / "ck")},
        "sinks": {"history": {"parquet_path": str(tmp_path / "history")},
                  "dead_letter": {"path": str(tmp_path / "dlq")}},
        "exporter": {"port": port},
        "lag": {"enabled": True},  # the broker offsets poller must not flood the log either
        "logging": {"progress_interval": "5s"},
    }
    config = tmp_path / "monitor.yaml"
    config.write_text(yaml.safe_dump(conf))
    return config


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def max_reports(elapsed_s: float) -> int:
    """Probes in `elapsed_s` with back-off steps of 1, 2, 4, ... s: the k-th starts 2^k - 1 s after the first."""
    return int(math.log2(elapsed_s + 1)) + 1


def watch_failing(proc, log: Path, port: int, address: str) -> tuple[list[str], str, float]:
    """Wait until /ready says Kafka is not reachable, watch for WATCH_S; returns (log lines, /ready body, the
    seconds the job was watched from its start)."""
    started = time.monotonic()
    eventually(lambda: address in get(port, "/ready")[1], 120, "/ready to name the unreachable Kafka")
    time.sleep(WATCH_S)
    status, body = get(port, "/ready")
    elapsed = time.monotonic() - started
    assert proc.poll() is None, log.read_text()[-3000:]
    assert status == 503, body
    assert get(port, "/healthz")[0] == 200
    return log.read_text(errors="replace").splitlines(), body, elapsed


def test_closed_port_reported_once_per_backoff_step_then_recovered(tmp_path, unique):
    kafka_port, port = free_port(), free_port()
    address = f"127.0.0.1:{kafka_port}"
    log = tmp_path / "job.log"
    proc = start_job(job_config(tmp_path, address, unique, port), log)
    broker = None
    try:
        lines, body, elapsed = watch_failing(proc, log, port, address)
        reports = [ln for ln in lines if "is not reachable" in ln]
        assert 1 <= len(reports) <= max_reports(elapsed), "\n".join(lines)
        for ln in reports:
            assert f"Kafka at {address} is not reachable" in ln and "Connection refused" in ln, ln
        # the clients' own connection lines are gone (librdkafka's `%3|...|FAIL|`, kafka-python's ECONNREFUSED);
        # the job's own lines name the address only in its reports and its configuration
        ours = [ln for ln in lines if " rebalance_monitor." in ln]
        assert [ln for ln in ours if ln not in reports and "Connection refused" in ln] == []
        noise = [ln for ln in lines if ln not in ours and re.search(
            r"Connection refused|ECONNREFUSED|\|FAIL\||Unable to bootstrap|" + re.escape(address), ln)]
        assert noise == [], "\n".join(noise)
        assert body.startswith(f"not ready: Kafka at {address} is not reachable") and "Connection refused" in body
        assert re.search(r"retrying in \d+ s$", body.strip()), body

        # a broker on that port: the job starts Spark and the query by itself, /ready turns green
        broker = Broker(port=kafka_port, log_path=str(tmp_path / "broker.log")).start()
        broker.create_topics({unique: 1})
        eventually(lambda: get(port, "/ready")[0] == 200, 300, "/ready to turn green once Kafka answers")
        text = log.read_text(errors="replace")
        assert f"Kafka at {address} answers" in text
        # a batch has run and been reported: the stop below cancels a running query, not one starting
        eventually(lambda: PROGRESS.search(log.read_text(errors="replace")), 180, "a progress line of a batch")
        jvms = child_jvms(proc.pid)
        assert jvms, "the job's Spark driver JVM, a child of its Python process"
        os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout=90)
        text = log.read_text(errors="replace")
        assert code == 0, text[-3000:]
        # the job ended its JVM and reaped it before it exited: no orphan left for init (not even a zombie)
        assert [pid for pid in jvms if os.path.exists(f"/proc/{pid}")] == [], text[-3000:]
        stopped_in_order_and_said_only_what_an_operator_reads(text, address)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        if broker is not None:
            broker.stop()


def child_jvms(pid: int) -> list[int]:
    """The pids of the `java` processes whose parent is `pid`."""
    out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if line.split()[1:] == ["java"]]


PROGRESS = re.compile(r" INFO rebalance_monitor\.job: batch \d+: \d+ input records")
STOP_STEPS = ("signal SIGTERM: stopping", "stopping the query and its sinks", "stopping the broker offsets poller",
              "stopping the broker poller", "stopping the metrics exporter", "stopping Spark", "stopped after ")
# what `run` says at INFO, in the order it first says it (docs/operations.md, "What the job logs")
SAID = (("summary", r"configuration: Kafka \S+ \(PLAINTEXT\); Spark local\[2\], trigger 1s; "),
        ("inputs", r"inputs: client events from \S+; from the latest offsets"),
        ("metrics", r"metrics at http://127\.0\.0\.1:\d+/metrics$"),
        ("backoff", r"Kafka at \S+ is not reachable .* retrying in \d+ s$"),
        ("recovered", r"Kafka at \S+ answers$"),
        ("source", r"(Kafka source: format 'rmkafka' |decoding in the Python Kafka source$)"),
        ("progress", r"(no batch yet|batch \d+: \d+ input records .*)$"),
        ("cancelled", r"batch \d+ cancelled by the stop: it runs again at the next start$"),
        ("stop", "(" + "|".join(re.escape(s) for s in STOP_STEPS) + ")"))


def stopped_in_order_and_said_only_what_an_operator_reads(text: str, address: str) -> None:
    ours = [ln.split(": ", 1)[1] for ln in text.splitlines()
            if re.match(r"\d{4}-\d\d-\d\d [\d:,]+ (INFO|WARNING|ERROR|CRITICAL) rebalance_monitor\.", ln)]
    kinds = []
    for line in ours:
        kind = next((k for k, pattern in SAID if re.match(pattern, line)), None)
        assert kind is not None, f"said at INFO, and not what an operator reads: {line}\n{text[-3000:]}"
        kinds.append(kind)
    assert kinds[:3] == ["summary", "inputs", "metrics"], ours
    assert "backoff" in kinds and "progress" in kinds, ours
    stops = [ln for ln in ours if any(ln.startswith(s) for s in STOP_STEPS)]
    assert [next(s for s in STOP_STEPS if ln.startswith(s)) for ln in stops] == list(STOP_STEPS), stops
    assert ours[-1].startswith("stopped after "), ours
    # nothing of a stop racing Spark's own shutdown: no Python traceback, no Java exception, no ERROR line
    bad = re.compile(r"Traceback|Exception in thread|^\s+at [\w.$]+\(|\b(java|py4j|org)\.[\w.]*(Exception|Error)\b"
                     r"|\bERROR\b|Cannot call methods on a stopped SparkContext|Connection ?refused", re.M)
    after = text.split("is not reachable")[-1].split("\n", 1)[-1]  # the back-off lines name the refusal
    assert not bad.search(after), bad.search(after).group(0) + "\n" + after[-4000:]
    assert " ERROR " not in text and "Traceback" not in text
    # and nothing but the monitor's own lines: Spark's JVM and its Python workers write into the log, below
    # logging.spark_level at DEBUG (Spark's WARN lines and start-up banner, the JVM's incubator-module warning)
    others = [ln for ln in text.splitlines()
              if ln.strip() and not re.match(r"\d{4}-\d\d-\d\d [\d:,]+ [A-Z]+ rebalance_monitor\.", ln)]
    assert others == [], "\n".join(others[:20])


def test_wrong_security_protocol_is_reported_with_the_clients_error(broker, tmp_path, unique):
    port = free_port()
    log = tmp_path / "job.log"
    proc = start_job(job_config(tmp_path, broker.bootstrap, unique, port, security={"protocol": "SSL"}), log)
    try:
        lines, body, elapsed = watch_failing(proc, log, port, broker.bootstrap)
        reports = [ln for ln in lines if "is not reachable" in ln]
        assert 1 <= len(reports) <= max_reports(elapsed), "\n".join(lines)
        for ln in reports:
            assert f"Kafka at {broker.bootstrap} is not reachable (security protocol SSL): " in ln, ln
            assert "SSL" in ln.split("(security protocol SSL): ", 1)[1], ln  # the client's own error says SSL
        assert "security protocol SSL" in body
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_run_once_against_a_closed_port_says_so_and_exits_1(tmp_path, unique):
    import subprocess

    address = f"127.0.0.1:{free_port()}"
    config = job_config(tmp_path, address, unique, free_port())
    done = subprocess.run([sys.executable, "-m", "rebalance_monitor", "run", "--once", "--config", str(config)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    reports = [ln for ln in done.stderr.splitlines() if "is not reachable" in ln]
    assert len(reports) == 1 and f"run --once: Kafka at {address} is not reachable" in reports[0], done.stderr
    assert "Connection refused" in reports[0] and "retrying" not in reports[0]
    assert "SparkSession" not in done.stderr  # nothing else started
