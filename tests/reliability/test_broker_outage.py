"""Broker faults: the broker stops answering mid-run (SIGSTOP: a hung broker or a network partition; the
bundled broker keeps its data only in memory, so a real restart would erase the very data under test). The
job must keep running, report the outage on /ready, and once the broker answers again process everything,
with the same output as a run that never saw an outage."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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


def test_job_survives_a_hung_broker_reports_it_and_loses_nothing(tmp_path):
    with Broker(log_path=str(tmp_path / "broker.log")) as broker:
        topic = "events-outage"
        broker.create_topics({topic: 1})
        base = int(time.time() * 1000) - 120_000
        events = scripted_events(base)
        half = len(events) // 2
        port = free_port()
        conf = {
            "kafka": {"bootstrap_servers": broker.bootstrap, "events_topic": topic, "starting_offsets": "earliest",
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
        cfg = load_config(config, env={})
        produce(broker, topic, events[:half])
        log = tmp_path / "job.log"
        proc = start_job(config, log)
        hist = tmp_path / "history"
        try:
            wait_for(lambda: _ready(port), 180, "the job to be ready")
            wait_for(lambda: any(r["kind"] == "generation" for r in history(hist)), 120, "first generations")
            os.kill(broker.proc.pid, signal.SIGSTOP)  # the broker hangs
            try:
                wait_for(lambda: not _ready(port), 120, "/ready to report the outage")
                time.sleep(10)
                assert proc.poll() is None, "the job must keep running through the outage"
            finally:
                os.kill(broker.proc.pid, signal.SIGCONT)
            produce(broker, topic, events[half:])
            wait_for(lambda: _ready(port), 240, "/ready again once the broker answers")
            produce(broker, topic, [sentinel(events)])  # moves event time to the last event
            expected = [r for r in replay_records(events, cfg) if r["kind"] in HISTORY_KINDS]
            wait_for(lambda: len([r for r in history(hist) if r["kind"] in HISTORY_KINDS]) >= len(expected), 240,
                     "every record after the outage")
            time.sleep(3)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                kill_hard(proc)
        got = [r for r in history(hist) if r["kind"] in HISTORY_KINDS]
        assert comparable(got) == comparable(expected)
