"""Restart safety: `rebalance-monitor run` is SIGKILLed (the whole process group, JVM included) in the middle
of the stream, restarted from its checkpoint, and at the end its history holds every generation, timeout and
storm exactly once: the same records `replay` gives for the same events."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "spark_job"))
sys.path.insert(0, str(HERE.parent / "core"))
from test_job import comparable, produce, replay_records, scripted_events, sentinel  # noqa: E402

from rebalance_monitor.config import load_config  # noqa: E402
from rebalance_monitor.testing.broker import free_port  # noqa: E402

pytestmark = [pytest.mark.integration]

HISTORY_KINDS = ("generation", "member_timeout", "storm", "rebalance_started")


def start_job(config: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rebalance_monitor", "run", "--config", str(config)],
                            stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)


def kill_hard(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def history(path: Path) -> list[dict]:
    import pandas as pd

    if not path.exists() or not any(path.glob("batch_id=*/part-0.parquet")):
        return []
    frames = [pd.read_parquet(p) for p in sorted(path.glob("batch_id=*/part-0.parquet"))]
    df = pd.concat(frames)
    return [json.loads(p) for p in df["payload"]]


def wait_for(predicate, timeout_s: float, what: str):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_sigkill_at_random_points_then_restart_counts_nothing_twice_and_loses_nothing(broker, unique, tmp_path):
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    base = int(time.time() * 1000) - 120_000
    events = scripted_events(base)
    port = free_port()
    conf = {
        "kafka": {"bootstrap_servers": broker.bootstrap, "events_topic": topic, "starting_offsets": "earliest",
                  "connector": "python", "max_offsets_per_trigger": 15},
        "spark": {"trigger_interval": "1s", "local_dir": str(tmp_path / "spark")},
        "state": {"checkpoint_location": str(tmp_path / "ck"), "watermark_delay": "2s", "idle_clock": False},
        "sinks": {"history": {"parquet_path": str(tmp_path / "history")},
                  "dead_letter": {"path": str(tmp_path / "dlq")}},
        "exporter": {"host": "127.0.0.1", "port": port},
        "lag": {"enabled": False},
        "logging": {"progress_interval": "2s"},
    }
    config = tmp_path / "monitor.yaml"
    config.write_text(yaml.safe_dump(conf))
    cfg = load_config(config, env={})
    log = tmp_path / "job.log"
    rng = random.Random(11)
    thirds = [events[: len(events) // 3], events[len(events) // 3: 2 * len(events) // 3],
              events[2 * len(events) // 3:]]
    hist = tmp_path / "history"
    kills = 0
    for part in thirds:
        produce(broker, topic, part)
        proc = start_job(config, log)
        try:
            # let it get somewhere, then pull the plug at a random moment
            seen = len(list(hist.glob("batch_id=*"))) if hist.exists() else 0
            wait_for(lambda: hist.exists() and len(list(hist.glob("batch_id=*"))) > seen, 180, "a new batch")
            time.sleep(rng.uniform(0.0, 3.0))
        finally:
            kill_hard(proc)
            kills += 1
    # the last start: drain, move event time to the last event (as replay's end of input), stop cleanly
    proc = start_job(config, log)
    try:
        wait_for(lambda: _ready(port), 180, "/ready after restart")
        produce(broker, topic, [sentinel(events)])  # moves event time to the last event
        expected = [r for r in replay_records(events, cfg) if r["kind"] in HISTORY_KINDS]

        def caught_up():
            got = [r for r in history(hist) if r["kind"] in HISTORY_KINDS]
            return got if len(got) >= len(expected) else None

        wait_for(caught_up, 180, "the history to hold every expected record")
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            kill_hard(proc)
    got = [r for r in history(hist) if r["kind"] in HISTORY_KINDS]
    assert comparable(got) == comparable(expected)
    gens = [(r["group"], r["generation"]) for r in got if r["kind"] == "generation"]
    assert len(gens) == len(set(gens)) and len(gens) >= 6
    assert kills == 3
    text = log.read_text()
    assert "stopped" in text and "batch" in text


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False
