"""The monitor as a process (`rebalance-monitor run`), as the reliability tests drive it: started in a process group
of its own, killed hard (JVM included), its /metrics and /ready over HTTP, its history sink read back, and the
end of a run compared with `replay`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from helpers.eventually import eventually
from helpers.kafka_produce import produce
from helpers.replay import replay_records
from helpers.scripted_input import sentinel

from rebalance_monitor.core.vocabulary import HISTORY_KINDS


def start_job(config: Path, log: Path) -> subprocess.Popen:
    """`rebalance-monitor run --config <config>` in a session (process group) of its own, output appended to `log`."""
    return subprocess.Popen([sys.executable, "-m", "rebalance_monitor", "run", "--config", str(config)],
                            stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)


def kill_hard(proc: subprocess.Popen) -> None:
    """SIGKILL the job's whole process group (its JVM too) and reap it."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def history(path: Path) -> list[dict]:
    """The records in the history sink at `path` (Parquet, one directory per micro-batch), in batch order."""
    import pandas as pd

    if not path.exists() or not any(path.glob("batch_id=*/part-0.parquet")):
        return []
    # in batch order: batch_id=10 comes after batch_id=9, not before it as the directories' names sort
    parts = sorted(path.glob("batch_id=*/part-0.parquet"), key=lambda p: int(p.parent.name.split("=", 1)[1]))
    frames = [pd.read_parquet(p) for p in parts]
    df = pd.concat(frames)
    return [json.loads(p) for p in df["payload"]]


def scrape(port: int) -> str | None:
    """The /metrics text of the job's exporter on `port`, or None while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read().decode()
    except OSError:
        return None


def ready(port: int) -> bool:
    """Whether /ready of the job's exporter on `port` answers 200."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def finish_and_compare(proc, broker, topic, events, cfg, hist, what: str) -> tuple[list, list]:
    """Produce the sentinel (it moves event time to the last event), wait until the history holds every
    record replay expects, stop the job with SIGTERM (it must exit 0). Returns (history, expected)."""
    produce(broker, topic, [sentinel(events)])
    expected = [r for r in replay_records(events, cfg) if r["kind"] in HISTORY_KINDS]
    eventually(lambda: len([r for r in history(hist) if r["kind"] in HISTORY_KINDS]) >= len(expected), 240, what)
    time.sleep(3)  # not a wait: room for a duplicate to show before the job stops
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    return [r for r in history(hist) if r["kind"] in HISTORY_KINDS], expected
