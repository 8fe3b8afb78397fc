"""Broker faults, with the real job (`rebalance-monitor run`):

* the broker hangs (SIGSTOP: a hung broker or a network partition), then answers again;
* the broker process is killed (SIGKILL) and started again on the same ports, with its log directory kept
  (Apache Kafka recovers its logs after the unclean shutdown), so its topics survive as a real cluster's would.

Either way the job must keep running without a manual restart, report the outage (/ready 503 while /healthz
stays 200), and once the broker is back process everything, with the same output as `replay` of all the
events (a run that never saw an outage).
"""
from __future__ import annotations

import os
import re
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "spark_job"))
sys.path.insert(0, str(HERE.parent / "core"))
sys.path.insert(0, str(HERE))
from test_job import comparable, produce, replay_records, scripted_events, sentinel  # noqa: E402
from test_kill_restart import HISTORY_KINDS, _ready, history, kill_hard, start_job, wait_for  # noqa: E402

from rebalance_monitor.config import load_config  # noqa: E402
from rebalance_monitor.testing.broker import Broker, free_port  # noqa: E402

pytestmark = [pytest.mark.integration]


def job_config(tmp_path: Path, bootstrap: str, topic: str, port: int) -> Path:
    conf = {
        "kafka": {"bootstrap_servers": bootstrap, "events_topic": topic, "starting_offsets": "earliest",
                  "connector": "python"},
        "spark": {"trigger_interval": "1s", "local_dir": str(tmp_path / "spark")},
        "state": {"checkpoint_location": str(tmp_path / "ck"), "idle_clock": False},
        "sinks": {"history": {"parquet_path": str(tmp_path / "history")},
                  "dead_letter": {"path": str(tmp_path / "dlq")}},
        "exporter": {"port": port, "ready_max_batch_age": "8s"},
        "lag": {"enabled": False},
        "logging": {"progress_interval": "2s"},
    }
    config = tmp_path / "monitor.yaml"
    config.write_text(yaml.safe_dump(conf))
    return config


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError:
        return 0, ""



def finish_and_compare(proc, broker, topic, events, cfg, hist, what: str) -> tuple[list, list]:
    """Produce the sentinel (it moves event time to the last event), wait until the history holds every
    record replay expects, stop the job with SIGTERM (it must exit 0). Returns (history, expected)."""
    produce(broker, topic, [sentinel(events)])
    expected = [r for r in replay_records(events, cfg) if r["kind"] in HISTORY_KINDS]
    wait_for(lambda: len([r for r in history(hist) if r["kind"] in HISTORY_KINDS]) >= len(expected), 240, what)
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    return [r for r in history(hist) if r["kind"] in HISTORY_KINDS], expected

def _ready_body(port: int) -> str:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=5) as r:
            return r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.read().decode()


def start_past_first_generations(tmp_path: Path, broker, topic: str):
    """The scripted events' first half in `topic` and the real job started on it, ready, with its first
    generations in the history: (events, port, cfg, job process, history path)."""
    broker.create_topics({topic: 1})
    events = scripted_events(int(time.time() * 1000) - 120_000)
    port = free_port()
    config = job_config(tmp_path, broker.bootstrap, topic, port)
    produce(broker, topic, events[:len(events) // 2])
    proc = start_job(config, tmp_path / "job.log")
    hist = tmp_path / "history"
    try:
        wait_for(lambda: _ready(port), 180, "the job to be ready")
        wait_for(lambda: any(r["kind"] == "generation" for r in history(hist)), 120, "first generations")
    except BaseException:
        kill_hard(proc)
        raise
    return events, port, load_config(config, env={}), proc, hist


def test_job_survives_a_hung_broker_reports_it_and_loses_nothing(tmp_path):
    with Broker(log_path=str(tmp_path / "broker.log")) as broker:
        topic = "events-outage"
        events, port, cfg, proc, hist = start_past_first_generations(tmp_path, broker, topic)
        half = len(events) // 2
        try:
            os.kill(broker.proc.pid, signal.SIGSTOP)  # the broker hangs
            try:
                wait_for(lambda: not _ready(port), 120, "/ready to report the outage")
                body = _ready_body(port)  # it says why: a batch too old, or the query that failed
                assert body.startswith("not ready: ") and len(body) > len("not ready: ") + 10, body
                time.sleep(10)
                assert proc.poll() is None, "the job must keep running through the outage"
            finally:
                os.kill(broker.proc.pid, signal.SIGCONT)
            produce(broker, topic, events[half:])
            wait_for(lambda: _ready(port), 240, "/ready again once the broker answers")
            got, expected = finish_and_compare(proc, broker, topic, events, cfg, hist, "every record after the outage")
        finally:
            if proc.poll() is None:
                kill_hard(proc)
        assert comparable(got) == comparable(expected)


def test_job_waits_out_a_broker_restart_reports_it_and_loses_nothing(tmp_path):
    with Broker(log_path=str(tmp_path / "broker.log")) as broker:
        topic = "events-restart"
        events, port, cfg, proc, hist = start_past_first_generations(tmp_path, broker, topic)
        half = len(events) // 2
        try:
            broker.kill()  # SIGKILL: the broker process is gone, its port refuses connections
            wait_for(lambda: not _ready(port), 120, "/ready to report the outage")
            assert proc.poll() is None, "the job must keep running through the outage"
            assert get(port, "/healthz")[0] == 200, "liveness stays green: restarting the job would not help"
            metrics = get(port, "/metrics")[1]
            assert "rebalance_monitor_ready 0" in metrics and "rebalance_monitor_up 1" in metrics
            broker.start()  # same ports, same log directory: the topic and its first half are still there
            produce(broker, topic, events[half:])
            wait_for(lambda: _ready(port), 240, "/ready again once the broker is back")
            got, expected = finish_and_compare(proc, broker, topic, events, cfg, hist, "every record after the restart")
        finally:
            if proc.poll() is None:
                kill_hard(proc)
        assert comparable(got) == comparable(expected)
        # the Kafka clients' own connection failures (librdkafka's `%3|...|FAIL|` on stderr, several a second per
        # client while the broker was gone) stay out of the log: the job reports an outage itself (kafka_reach.py)
        log = (tmp_path / "job.log").read_text(errors="replace").splitlines()
        noise = [ln for ln in log if " rebalance_monitor." not in ln and re.search(
            r"\|FAIL\||Connection refused|ECONNREFUSED|could not be established", ln)]
        assert noise == [], "\n".join(noise[:20])
