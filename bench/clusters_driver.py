"""One deployment of the clusters bench (bench_clusters.py), in a process of its own (multiprocessing's spawn):
`MonitorService` as `rebalance-monitor run` runs it (its exporter, each cluster's Kafka probe, lag poller, broker
poller and query), over one cluster or several. Its process, its driver JVM and Python workers are the tree the
bench measures; nothing else runs here.

The conversation on `conn`: ("ready", seconds from start to every cluster's first batch) once each cluster's query
has made progress (or ("failed", why)); then "stop" ends the service, and ("done", what it saw) answers: when each
generation record came ({(cluster, group, generation): time}), each cluster's batches and records read.
The process's stdout and stderr (Spark's JVM's too) go to `log_path`, the service's log lines at INFO.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time


class Generations:
    """on_records: when each (cluster, group, generation) record first came, after the sinks."""

    def __init__(self):
        self.seen: dict[tuple[str, str, int], float] = {}

    def __call__(self, _batch_id, records, _dead) -> None:
        now = time.time()
        for r in records:
            if r.get("kind") == "generation":
                self.seen.setdefault((r.get("kafka_cluster"), r.get("group"), r.get("generation")), now)


def _to_log(log_path: str) -> None:
    f = open(log_path, "ab", buffering=0)  # noqa: SIM115 - the process's stdout and stderr until it ends
    os.dup2(f.fileno(), 1)
    os.dup2(f.fileno(), 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s")
    for name in ("kafka", "py4j"):
        logging.getLogger(name).setLevel(logging.WARNING)


def main(conn, overrides: dict, log_path: str, ready_timeout_s: float) -> None:
    _to_log(log_path)
    from rebalance_monitor.config import load_config
    from rebalance_monitor.spark.run import MonitorService

    t0 = time.time()
    seen = Generations()
    monitor = MonitorService(load_config(env={}, overrides=overrides), on_records=seen)
    monitor.start_exporter()
    serving = threading.Thread(target=monitor.serve, name="serve", daemon=True)
    if len(monitor.watches) == 1:
        monitor.job.session()  # in the main thread: PySpark's context installs a signal handler
    else:
        monitor.ensure_spark(monitor.watches[0].job)  # (serve does it too; here, in the main thread)
    serving.start()

    def started() -> bool:
        return all(w.job.query is not None and w.job.query.recentProgress for w in monitor.watches)

    while time.time() - t0 < ready_timeout_s and not started() and serving.is_alive():
        time.sleep(0.5)
    if started():
        conn.send(("ready", time.time() - t0))
    else:
        conn.send(("failed", f"not every cluster's query made progress in {time.time() - t0:.0f} s (see {log_path})"))
    conn.recv()  # "stop"
    monitor.stop.set()
    serving.join(timeout=60)
    stats = {w.name: (w.job.stats.batches, w.job.stats.records_read) for w in monitor.watches}
    conn.send(("done", {"generations": seen.seen, "stats": stats}))
    monitor.close(stop_spark=True)
