"""A sink that fails (here the history directory is replaced by a file, so writes fail) is counted, the batch
is retried from the checkpoint with backoff, and once the sink is back nothing is missing."""
from __future__ import annotations

import shutil
import time
import urllib.request

import pytest
import yaml

from helpers.eventually import eventually
from helpers.kafka_produce import produce
from helpers.monitor_process import finish_and_compare, kill_hard, ready, start_job
from helpers.replay import comparable
from helpers.scripted_input import scripted_events

from rebalance_monitor.config import load_config
from rebalance_monitor.testing.broker import free_port

pytestmark = [pytest.mark.integration]


def sink_errors(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith('rebalance_monitor_sink_errors_total{kafka_cluster="default",sink="history"}'))


def test_history_sink_outage_is_counted_retried_and_loses_nothing(broker, unique, tmp_path):
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    base = int(time.time() * 1000) - 120_000
    events = scripted_events(base)
    port = free_port()
    hist = tmp_path / "history"
    conf = {
        "kafka": {"bootstrap_servers": broker.bootstrap, "events_topic": topic, "starting_offsets": "earliest",
                  "connector": "python", "max_offsets_per_trigger": 20},
        "spark": {"trigger_interval": "1s", "local_dir": str(tmp_path / "spark")},
        "state": {"checkpoint_location": str(tmp_path / "ck"), "idle_clock": False},
        "sinks": {"history": {"parquet_path": str(hist)}, "dead_letter": {"path": str(tmp_path / "dlq")}},
        "exporter": {"port": port},
        "lag": {"enabled": False},
    }
    config = tmp_path / "monitor.yaml"
    config.write_text(yaml.safe_dump(conf))
    cfg = load_config(config, env={})
    proc = start_job(config, tmp_path / "job.log")
    try:
        eventually(lambda: ready(port), 180, "ready")
        saved = tmp_path / "saved"
        shutil.move(str(hist), str(saved))
        hist.write_text("not a directory")  # the sink is now broken
        produce(broker, topic, events)
        eventually(lambda: sink_errors(port) >= 1, 120, "a counted sink error")
        time.sleep(4)  # not a wait: the sink stays broken a while (retries, with backoff)
        assert proc.poll() is None
        hist.unlink()
        shutil.move(str(saved), str(hist))  # the sink is back
        got, expected = finish_and_compare(proc, broker, topic, events, cfg, hist,
                                           "the history after the sink came back")
    finally:
        if proc.poll() is None:
            kill_hard(proc)
    assert comparable(got) == comparable(expected)
