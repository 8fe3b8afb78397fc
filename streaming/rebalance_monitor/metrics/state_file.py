"""The exported counters across restarts: a snapshot of the updater in the checkpoint directory.

``<state.checkpoint_location>/metrics-state.json`` holds what :meth:`MetricsUpdater.state_text` writes: the
cumulative counters and histograms (per group and of the job), the gauges that records set on each group,
tagged with the id of the last micro-batch they include (Spark's foreachBatch ``batch_id``) and with the id
of the Spark query whose checkpoint it goes with. The job (``spark/job.py``) loads it when it starts and
writes it after each micro-batch, through :meth:`MetricsUpdater.apply_batch`:

    apply batch N to the updater  ->  write the snapshot tagged N  ->  publish to /metrics  ->  Spark commits N

The crash windows, for a process killed at any point (SIGKILL, OOM, node loss):

* before batch N is applied, or after it is applied but before the snapshot is written: the snapshot says
  N-1 and Spark has not committed N, so the restarted job runs N again (same offsets, same state, same
  records) and applies it: once. Nothing of N was exported (the exposition is held until the snapshot is
  written), so Prometheus never saw a value the restart takes back.
* after the snapshot is written but before Spark commits N: the snapshot says N and Spark runs N again; its
  id is not above the snapshot's, so it is skipped: once.
* after Spark commits N: the next batch is N+1 > N: applied once.

Every byte goes through a file-system object (``files``): the job passes ``files.HadoopFiles``, so the
snapshot lives wherever the checkpoint does (a local path, ``file://``, ``s3a://``, ``hdfs://``), read and written
through Hadoop's FileSystem API as Spark writes its own checkpoint; without one (tests, benches) it is
``LocalFiles``, the same with Python's own calls. On a local file system the write is a temporary file,
``fsync``, then a rename over the previous snapshot and an ``fsync`` of the directory; on S3 one PUT, which
replaces the object whole. Either way a reader finds the previous snapshot or the new one, never a torn one,
also after a power loss. A snapshot whose query id differs from the checkpoint's (the query checkpoint was deleted or replaced:
Spark numbers batches from 0 again) is ignored, as is an unreadable one: counters then start from 0, which
Prometheus treats as a reset, and the problem is logged.

Kept per process, never in the file: ``up``, ``ready``, the Kafka cluster's up and last read, the last batch
time, state rows, watermark delay, ``groups_tracked`` (derived), the sink errors of this process, and the offsets
(committed, end offsets, time-lag samples), which the next commit record or broker poll brings back within ``lag.broker_poll_interval``
and which would make the file grow with the partitions rather than the groups.
"""
from __future__ import annotations

import json
import logging
import time

from ..files import LocalFiles, join

log = logging.getLogger(__name__)

METRICS_STATE_FILE = "metrics-state.json"


class MetricsStateFile:
    """Loads and saves an updater's state at ``path``; ``query_checkpoint`` is the Spark query's checkpoint
    directory (its ``metadata`` file names the query), or None to skip that check. ``files`` reads and writes
    them (``HadoopFiles`` in the job; by default ``LocalFiles``, local paths only)."""

    def __init__(self, path: str, query_checkpoint: str | None = None, fsync: bool = True, files=None) -> None:
        self.path = path
        self.query_checkpoint = query_checkpoint
        self.files = files if files is not None else LocalFiles(fsync=fsync)
        self.saved_batch_id: int | None = None
        self.last_bytes = 0
        self.last_write_s = 0.0
        self._query_id: str | None = None

    def query_id(self) -> str | None:
        """The id Spark wrote in ``<query checkpoint>/metadata`` when the query first started (None: none yet)."""
        if self._query_id is None and self.query_checkpoint is not None:
            try:
                text = self.files.read_bytes(join(self.query_checkpoint, "metadata")).decode("utf-8")
                self._query_id = json.loads(text.split("\n", 1)[0]).get("id")
            except (OSError, ValueError, AttributeError):
                return None
        return self._query_id

    def load(self, updater) -> bool:
        """Restore the snapshot into ``updater`` (a fresh one); False when there is none or it cannot be used."""
        try:
            data = json.loads(self.files.read_bytes(self.path))
        except FileNotFoundError:
            return False
        except (OSError, ValueError) as exc:
            log.error("metrics state %s unreadable (%s): exported counters start from 0", self.path, exc)
            return False
        if not isinstance(data, dict):
            log.error("metrics state %s is not a JSON object: exported counters start from 0", self.path)
            return False
        if self.query_checkpoint is not None and (self.query_id() is None or data.get("query_id") != self.query_id()):
            log.warning("metrics state %s belongs to query %s, the checkpoint to %s (replaced?): exported "
                        "counters start from 0", self.path, data.get("query_id"), self.query_id())
            return False
        try:
            groups = updater.load_state(data)
        except (ValueError, TypeError, KeyError) as exc:
            log.error("metrics state %s not usable (%s): exported counters start from 0", self.path, exc)
            return False
        self.saved_batch_id = int(data["batch_id"])
        log.info("exported metrics restored as of micro-batch %s (%d groups, saved %s)", data["batch_id"],
                 groups, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(data.get("saved_at", 0))))
        return True

    def save(self, updater, batch_id: int) -> None:
        """Write the state as of ``batch_id`` (atomically); nothing to do when the file already holds it."""
        if self.saved_batch_id is not None and batch_id <= self.saved_batch_id:
            return
        t0 = time.perf_counter()
        data = updater.state_text(batch_id, query_id=self.query_id(), saved_at=round(time.time(), 3)).encode()
        self.files.write_bytes(self.path, data)
        self.saved_batch_id = batch_id
        self.last_bytes = len(data)
        self.last_write_s = time.perf_counter() - t0

