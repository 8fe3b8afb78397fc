"""Broker faults, with the real job (`rebalance-monitor run`), one after the other under one running job:

* the broker hangs (SIGSTOP: a hung broker or a network partition), then answers again;
* the broker process is killed (SIGKILL) and started again on the same ports, with its log directory kept
  (Apache Kafka recovers its logs after the unclean shutdown), so its topics survive as a real cluster's would.

Each time the job must keep running without a manual restart, report the outage (/ready 503 while /healthz
stays 200), and once the broker is back go on; at the end it has processed everything, with the same output as
`replay` of all the events (a run that never saw an outage).
"""
from __future__ import annotations

import os
import re
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from helpers.eventually import eventually
from helpers.kafka_produce import produce
from helpers.monitor_process import finish_and_compare, history, kill_hard, ready, start_job
from helpers.replay import comparable
from helpers.scripted_input import scripted_events

from rebalance_monitor.config import load_config
from rebalance_monitor.testing.broker import Broker, free_port

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


def _ready_body(port: int) -> str:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=5) as r:
            return r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.read().decode()


def start_past_first_generations(tmp_path: Path, broker, topic: str, events: list[dict], first: int):
    """The first `first` scripted events in `topic` and the real job started on it, ready, with its first
    generations in the history: (port, cfg, job process, history path)."""
    broker.create_topics({topic: 1})
    port = free_port()
    config = job_config(tmp_path, broker.bootstrap, topic, port)
    produce(broker, topic, events[:first])
    proc = start_job(config, tmp_path / "job.log")
    hist = tmp_path / "history"
    try:
        eventually(lambda: ready(port), 180, "the job to be ready")
        eventually(lambda: any(r["kind"] == "generation" for r in history(hist)), 120, "first generations")
    except BaseException:
        kill_hard(proc)
        raise
    return port, load_config(config, env={}), proc, hist


def test_job_survives_a_hung_then_a_restarted_broker_reports_both_and_loses_nothing(tmp_path):
    with Broker(log_path=str(tmp_path / "broker.log")) as broker:
        topic = "events-outage"
        events = scripted_events(int(time.time() * 1000) - 120_000)
        n = len(events)
        port, cfg, proc, hist = start_past_first_generations(tmp_path, broker, topic, events, n // 3)
        try:
            # 1. the broker hangs
            os.kill(broker.proc.pid, signal.SIGSTOP)
            try:
                eventually(lambda: not ready(port), 120, "/ready to report the hung broker")
                body = _ready_body(port)  # it says why: a batch too old, or the query that failed
                assert body.startswith("not ready: ") and len(body) > len("not ready: ") + 10, body
                time.sleep(10)  # not a wait: the outage lasts a while
                assert proc.poll() is None, "the job must keep running through the outage"
            finally:
                os.kill(broker.proc.pid, signal.SIGCONT)
            produce(broker, topic, events[n // 3: 2 * n // 3])
            eventually(lambda: ready(port), 240, "/ready again once the broker answers")
            # 2. the broker process is killed, then started again
            broker.kill()  # SIGKILL: the broker process is gone, its port refuses connections
            eventually(lambda: not ready(port), 120, "/ready to report the killed broker")
            assert proc.poll() is None, "the job must keep running through the outage"
            assert get(port, "/healthz")[0] == 200, "liveness stays green: restarting the job would not help"
            metrics = get(port, "/metrics")[1]
            assert 'rebalance_monitor_ready{kafka_cluster="default"} 0\n' in metrics
            assert 'rebalance_monitor_up{kafka_cluster="default"} 1\n' in metrics
            broker.start()  # same ports, same log directory: the topic and what it held are still there
            produce(broker, topic, events[2 * n // 3:])
            eventually(lambda: ready(port), 240, "/ready again once the broker is back")
            got, expected = finish_and_compare(proc, broker, topic, events, cfg, hist,
                                               "every record after both outages")
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
