"""The monitor's own health and self metrics: up, ready (and why not), micro-batches, what the job read, rejected,
noted and wrote, sink errors, state rows, watermark delay; like KMinion's ``collect_exporter_metrics.go``.

:class:`JobHealth` is fed by the streaming job (``record_batch`` once per micro-batch, ``set_ready``,
``note_sink_error``, ...) and writes the families of the catalogue that carry no ``group`` label, except the
topics' end offsets, in catalogue order. Its counters (:meth:`JobHealth.counter_lines`) are in the persisted
snapshot (``persistence.py``); up, ready, the last batch time, state rows, watermark delay and sink errors are
per process.
"""
from __future__ import annotations

import threading

from .catalogue import (
    BATCH_DURATION, BATCH_DURATION_BUCKETS, BATCHES, CATALOGUE, END_OFFSET, EVENTS_READ, GROUPS_DROPPED,
    BROKER_FACTS_ERRORS, GROUPS_TRACKED, INPUT_NOTES, LAST_BATCH_TS, OUTPUT_RECORDS, READY, REJECTS, SINK_ERRORS, STATE_ROWS, UP,
    WATERMARK_DELAY,
)
from .exposition import Family, Histogram, header
from .series import Dedupe

SEEN_BATCH_IDS = 1024

# the families written here, in catalogue order, with their headers
HEALTH_FAMILIES = tuple(spec for spec in CATALOGUE if not spec.group_scoped and spec is not END_OFFSET)
_HEADERS = tuple((spec.name, header(spec)) for spec in HEALTH_FAMILIES)

_UP, _READY, _STATE_ROWS, _WATERMARK_DELAY = Family(UP), Family(READY), Family(STATE_ROWS), Family(WATERMARK_DELAY)
_LAST_BATCH_TS, _GROUPS_TRACKED, _BATCHES = Family(LAST_BATCH_TS), Family(GROUPS_TRACKED), Family(BATCHES)
_EVENTS_READ, _REJECTS, _INPUT_NOTES = Family(EVENTS_READ), Family(REJECTS), Family(INPUT_NOTES)
_GROUPS_DROPPED, _OUTPUT_RECORDS, _SINK_ERRORS = Family(GROUPS_DROPPED), Family(OUTPUT_RECORDS), Family(SINK_ERRORS)
_BROKER_FACTS_ERRORS = Family(BROKER_FACTS_ERRORS)


class JobHealth:
    """Thread-safe under ``lock`` (the store's). ``clock`` returns epoch seconds."""

    def __init__(self, clock, ready_max_age_s: float, lock: threading.RLock) -> None:
        self.clock = clock
        self.ready_max_age_s = ready_max_age_s
        self._lock = lock
        self.up = 1
        self.ready = False
        self.ready_since: float | None = None
        self.not_ready_reason: str | None = None
        # counters kept across restarts (persistence.py)
        self.events_read: dict[str, int] = {}
        self.rejects: dict[str, int] = {}
        self.notes: dict[str, int] = {}  # input used with a caveat (e.g. unresolved_topic_id), by reason
        self.batches = 0
        self.batch_duration = Histogram(BATCH_DURATION_BUCKETS)
        self.output_records: dict[str, int] = {}
        # per process
        self.state_rows: int | None = None
        self.watermark_delay: float | None = None
        self.last_batch_ts: float | None = None
        self.sink_errors: dict[str, int] = {}
        # what the broker poller asked and did not get: kept across restarts with the counters above
        self.broker_facts_errors: dict[str, int] = {}
        self.seen_batches = Dedupe(SEEN_BATCH_IDS)

    def record_batch(self, batch_id, events_read: dict[str, int] | None = None,
                     rejects: dict[str, int] | None = None, duration_s: float | None = None,
                     state_rows: int | None = None, watermark_ms: int | None = None,
                     output_counts: dict[str, int] | None = None, notes: dict[str, int] | None = None) -> None:
        """Account one micro-batch of the streaming job (a batch id seen before is not counted again)."""
        now = self.clock()
        with self._lock:
            self.last_batch_ts = now
            if state_rows is not None:
                self.state_rows = int(state_rows)
            if watermark_ms is not None and watermark_ms > 0:
                self.watermark_delay = max(0.0, now - watermark_ms / 1000.0)
            if not self.seen_batches.first_time(batch_id):
                return
            self.batches += 1
            for d, src in ((self.events_read, events_read), (self.rejects, rejects),
                           (self.output_records, output_counts), (self.notes, notes)):
                for k, v in (src or {}).items():
                    if v and v > 0:
                        d[str(k)] = d.get(str(k), 0) + int(v)
            if duration_s is not None and duration_s >= 0:
                self.batch_duration.observe(float(duration_s))

    def mark_alive(self) -> None:
        """The job is healthy but ran no batch (caught up, nothing to read): /ready stays green."""
        with self._lock:
            self.last_batch_ts = self.clock()

    def set_up(self, up: bool) -> None:
        with self._lock:
            self.up = 1 if up else 0

    def set_ready(self, ready: bool, reason: str | None = None) -> None:
        """`reason`: why the job is not ready, shown on /ready's body (None keeps the previous one)."""
        with self._lock:
            if ready and not self.ready:
                self.ready_since = self.clock()
            self.ready = bool(ready)
            if reason is not None or ready:
                self.not_ready_reason = None if ready else reason

    def note_sink_error(self, sink: str) -> None:
        with self._lock:
            self.sink_errors[sink] = self.sink_errors.get(sink, 0) + 1

    def note_broker_facts_error(self, reason: str) -> None:
        with self._lock:
            self.broker_facts_errors[reason] = self.broker_facts_errors.get(reason, 0) + 1

    def readiness(self) -> tuple[bool, str]:
        """(ready, why not) for /ready: the reason the job gave, or how old its last batch is."""
        with self._lock:
            if not self.ready:
                return False, self.not_ready_reason or "the streaming job has not started yet"
            last = max(x for x in (self.last_batch_ts, self.ready_since, 0.0) if x is not None)
            age = self.clock() - last
            if age > self.ready_max_age_s:
                return False, (f"the last micro-batch ended {age:.0f} s ago (exporter.ready_max_batch_age: "
                               f"{self.ready_max_age_s:.0f} s)")
            return True, "ready"

    # ---- exposition ----------------------------------------------------------------------------------------
    def counter_lines(self, dropped: dict[str, int]) -> dict[str, str]:
        """The self metrics kept across restarts: counters of what the job read and wrote, and the groups
        admission dropped (``dropped``, by reason). Held with the groups while a snapshot is written."""
        return {
            EVENTS_READ.name: _EVENTS_READ.by_label(self.events_read),
            REJECTS.name: _REJECTS.by_label(self.rejects),
            INPUT_NOTES.name: _INPUT_NOTES.by_label(self.notes),
            BATCHES.name: _BATCHES.plain(self.batches),
            BATCH_DURATION.name: "".join(self.batch_duration.lines(BATCH_DURATION.name, "")),
            GROUPS_DROPPED.name: _GROUPS_DROPPED.by_label(dropped),
            OUTPUT_RECORDS.name: _OUTPUT_RECORDS.by_label(self.output_records),
            BROKER_FACTS_ERRORS.name: _BROKER_FACTS_ERRORS.by_label(self.broker_facts_errors),
        }

    def text(self, counters: dict[str, str], groups_tracked: int) -> str:
        """Every self metric: ``counters`` (:meth:`counter_lines`, or the ones held) and the per-process ones."""
        f = dict(counters)
        f[UP.name] = _UP.plain(self.up)
        f[READY.name] = _READY.plain(1 if self.ready and self.readiness()[0] else 0)
        if self.state_rows is not None:
            f[STATE_ROWS.name] = _STATE_ROWS.plain(self.state_rows)
        if self.watermark_delay is not None:
            f[WATERMARK_DELAY.name] = _WATERMARK_DELAY.plain(self.watermark_delay)
        if self.last_batch_ts is not None:
            f[LAST_BATCH_TS.name] = _LAST_BATCH_TS.plain(self.last_batch_ts)
        f[GROUPS_TRACKED.name] = _GROUPS_TRACKED.plain(groups_tracked)
        f[SINK_ERRORS.name] = _SINK_ERRORS.by_label(self.sink_errors)
        return "".join([h + f.get(name, "") for name, h in _HEADERS])
