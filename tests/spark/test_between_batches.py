"""The job stops its query only between batches (spark/batch.py, `between_batches`): stopped while Spark plans or
commits a batch, the interruption is logged at ERROR (a broadcast failing to store, RocksDB's commit), which an
operator must not see on a plain stop. Seen once in a full run: SIGTERM 0.5 s after a batch, while the next one
was being planned."""
from __future__ import annotations

import time

from rebalance_monitor.spark.batch import between_batches


class _Query:
    """A query whose trigger is active for the first `busy` looks at its status."""

    def __init__(self, busy: int, active: bool = True, fails: bool = False):
        self.busy = busy
        self.looks = 0
        self.isActive = active
        self.fails = fails

    @property
    def status(self):
        if self.fails:
            raise RuntimeError("py4j: the gateway is gone")
        self.looks += 1
        return {"isTriggerActive": self.looks <= self.busy, "isDataAvailable": False}


def test_it_waits_while_a_trigger_is_active_and_goes_once_the_thread_waits_for_the_next():
    q = _Query(busy=5)
    assert between_batches(q, lambda: False, timeout_s=5, poll_s=0.001)
    assert q.looks == 6  # the sixth look saw no trigger active


def test_a_held_batch_is_a_pause_too():
    q = _Query(busy=10 ** 9)
    held = iter([False, False, True])
    assert between_batches(q, lambda: next(held), timeout_s=5, poll_s=0.001)
    assert q.looks == 2


def test_a_query_gone_or_failing_is_stopped_at_once():
    assert between_batches(_Query(busy=10 ** 9, active=False), lambda: False, timeout_s=5)
    assert between_batches(_Query(busy=10 ** 9, fails=True), lambda: False, timeout_s=5)


def test_no_pause_within_the_time_given():
    q = _Query(busy=10 ** 9)
    t0 = time.monotonic()
    assert not between_batches(q, lambda: False, timeout_s=0.05, poll_s=0.001)
    assert 0.05 <= time.monotonic() - t0 < 2
    # no time at all: one look
    q = _Query(busy=10 ** 9)
    assert not between_batches(q, lambda: False, timeout_s=0)
    assert q.looks == 1
