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

The write is a temporary file, ``fsync``, then ``os.replace`` over the previous snapshot and an ``fsync`` of
the directory, so a reader finds the previous snapshot or the new one, never a torn one, also after a power
loss. A snapshot whose query id differs from the checkpoint's (the query checkpoint was deleted or replaced:
Spark numbers batches from 0 again) is ignored, as is an unreadable one: counters then start from 0, which
Prometheus treats as a reset, and the problem is logged.

Kept per process, never in the file: ``up``, ``ready``, the last batch time, state rows, watermark delay,
``groups_tracked`` (derived), the sink errors of this process, and the offsets (committed, end offsets,
time-lag samples), which the next commit record or broker poll brings back within ``lag.broker_poll_interval``
and which would make the file grow with the partitions rather than the groups.
"""
from __future__ import annotations

import json
import logging
import os
import time

log = logging.getLogger(__name__)

METRICS_STATE_FILE = "metrics-state.json"


class MetricsStateFile:
    """Loads and saves an updater's state at ``path``; ``query_checkpoint`` is the Spark query's checkpoint
    directory (its ``metadata`` file names the query), or None to skip that check."""

    def __init__(self, path: str, query_checkpoint: str | None = None, fsync: bool = True) -> None:
        self.path = path
        self.query_checkpoint = query_checkpoint
        self.fsync = fsync
        self.saved_batch_id: int | None = None
        self.last_bytes = 0
        self.last_write_s = 0.0
        self._query_id: str | None = None

    def query_id(self) -> str | None:
        """The id Spark wrote in ``<query checkpoint>/metadata`` when the query first started (None: none yet)."""
        if self._query_id is None and self.query_checkpoint is not None:
            try:
                with open(os.path.join(self.query_checkpoint, "metadata"), encoding="utf-8") as f:
                    self._query_id = json.loads(f.readline()).get("id")
            except (OSError, ValueError, AttributeError):
                return None
        return self._query_id

    def load(self, updater) -> bool:
        """Restore the snapshot into ``updater`` (a fresh one); False when there is none or it cannot be used."""
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
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
        tmp = self.path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        if self.fsync:
            _fsync_dir(os.path.dirname(os.path.abspath(self.path)))
        self.saved_batch_id = batch_id
        self.last_bytes = len(data)
        self.last_write_s = time.perf_counter() - t0


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
