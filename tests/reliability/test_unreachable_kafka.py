"""Failing well: the real `rebalance-monitor run` against a Kafka it cannot reach.

* a closed loopback port: one log line per back-off step, naming the address and the client's error (not the
  clients' own lines several times a second), /ready red with that line, /healthz green; then a broker starts
  on that port and the job recovers by itself: /ready turns green;
* a listener reached with the wrong security protocol (SSL against the test broker's PLAINTEXT): the same
  report, with the client's error.
"""
from __future__ import annotations

import math
import re
import signal
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
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=90) == 0, text[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        if broker is not None:
            broker.stop()


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
