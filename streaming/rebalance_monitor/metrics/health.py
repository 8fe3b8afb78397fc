"""The monitor's own health and self metrics: up, ready (and why not), micro-batches, what the job read, rejected,
noted and wrote, sink errors, state rows, watermark delay, and whether the Kafka cluster answers and when it was
last read; like KMinion's ``collect_exporter_metrics.go``.

:class:`JobHealth` is fed by the streaming job (``record_batch`` once per micro-batch, ``set_ready``,
``note_sink_error``, ``set_kafka_up``, ``note_kafka_read``, ...) and writes the families of the catalogue that carry
no ``group`` label, except the topics' end offsets, in catalogue order, each under its cluster's label (a store is
one cluster's). Its counters (:meth:`JobHealth.counter_lines`) are in the persisted snapshot (``persistence.py``); up,
ready, the cluster's up and last read, the last batch time, state rows, watermark delay and sink errors are per
process.
"""
from __future__ import annotations

import threading

from .catalogue import (
    BATCH_DURATION, BATCH_DURATION_BUCKETS, BATCHES, BROKER_FACTS_ERRORS, CATALOGUE, DEFAULT_CLUSTER, END_OFFSET,
    EVENTS_READ, GROUPS_DROPPED, GROUPS_TRACKED, INPUT_NOTES, KAFKA_CLUSTER_LAST_READ_TS, KAFKA_CLUSTER_UP,
    LAST_BATCH_TS, OUTPUT_RECORDS, READY, REJECTS, SINK_ERRORS, STATE_ROWS, UP, WATERMARK_DELAY,
)
from .exposition import Family, Histogram, cluster_label, header
from .series import Dedupe

SEEN_BATCH_IDS = 1024

# the families written here, in catalogue order, and their headers
HEALTH_FAMILIES = tuple(spec for spec in CATALOGUE if not spec.group_scoped and spec is not END_OFFSET)
HEADERS = tuple(header(spec) for spec in HEALTH_FAMILIES)
_NAMES = tuple(spec.name for spec in HEALTH_FAMILIES)

_UP, _READY, _STATE_ROWS, _WATERMARK_DELAY = Family(UP), Family(READY), Family(STATE_ROWS), Family(WATERMARK_DELAY)
_LAST_BATCH_TS, _GROUPS_TRACKED, _BATCHES = Family(LAST_BATCH_TS), Family(GROUPS_TRACKED), Family(BATCHES)
_EVENTS_READ, _REJECTS, _INPUT_NOTES = Family(EVENTS_READ), Family(REJECTS), Family(INPUT_NOTES)
_GROUPS_DROPPED, _OUTPUT_RECORDS, _SINK_ERRORS = Family(GROUPS_DROPPED), Family(OUTPUT_RECORDS), Family(SINK_ERRORS)
_BROKER_FACTS_ERRORS = Family(BROKER_FACTS_ERRORS)
_KAFKA_UP, _KAFKA_LAST_READ = Family(KAFKA_CLUSTER_UP), Family(KAFKA_CLUSTER_LAST_READ_TS)


class JobHealth:
    """Thread-safe under ``lock`` (the store's). ``clock`` returns epoch seconds; ``cluster`` is the value of the
    store's ``kafka_cluster`` label."""

    def __init__(self, clock, ready_max_age_s: float, lock: threading.RLock, cluster: str = DEFAULT_CLUSTER) -> None:
        self.clock = clock
        self.ready_max_age_s = ready_max_age_s
        self._lock = lock
        self.cluster = cluster_label(cluster)   # the label text of every line written here
        self.up = 1
        self.kafka_up: int | None = None        # the cluster's Kafka answers and its query runs (None: not said yet)
        self.kafka_last_read: float | None = None
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

    def set_kafka_up(self, up: bool) -> None:
        """Whether the cluster's Kafka answers and the job's query of it runs."""
        with self._lock:
            self.kafka_up = 1 if up else 0

    def note_kafka_read(self, ts: float | None = None) -> None:
        """A successful read from the cluster at ``ts`` (epoch seconds; default now): a completed micro-batch, or
        an idle check that found nothing new to read. The time never goes back."""
        t = self.clock() if ts is None else float(ts)
        with self._lock:
            if self.kafka_last_read is None or t > self.kafka_last_read:
                self.kafka_last_read = t

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
        c = self.cluster
        return {
            EVENTS_READ.name: _EVENTS_READ.by_label(c, self.events_read),
            REJECTS.name: _REJECTS.by_label(c, self.rejects),
            INPUT_NOTES.name: _INPUT_NOTES.by_label(c, self.notes),
            BATCHES.name: _BATCHES.only_fixed(c, self.batches),
            BATCH_DURATION.name: "".join(self.batch_duration.lines(BATCH_DURATION.name, c)),
            GROUPS_DROPPED.name: _GROUPS_DROPPED.by_label(c, dropped),
            OUTPUT_RECORDS.name: _OUTPUT_RECORDS.by_label(c, self.output_records),
            BROKER_FACTS_ERRORS.name: _BROKER_FACTS_ERRORS.by_label(c, self.broker_facts_errors),
        }

    def parts(self, counters: dict[str, str], groups_tracked: int) -> list[str]:
        """Every self metric's lines, aligned with :data:`HEALTH_FAMILIES` (no header): ``counters``
        (:meth:`counter_lines`, or the ones held) and the per-process ones."""
        c = self.cluster
        f = dict(counters)
        f[UP.name] = _UP.only_fixed(c, self.up)
        f[READY.name] = _READY.only_fixed(c, 1 if self.ready and self.readiness()[0] else 0)
        if self.kafka_up is not None:
            f[KAFKA_CLUSTER_UP.name] = _KAFKA_UP.only_fixed(c, self.kafka_up)
        if self.kafka_last_read is not None:
            f[KAFKA_CLUSTER_LAST_READ_TS.name] = _KAFKA_LAST_READ.only_fixed(c, self.kafka_last_read)
        if self.state_rows is not None:
            f[STATE_ROWS.name] = _STATE_ROWS.only_fixed(c, self.state_rows)
        if self.watermark_delay is not None:
            f[WATERMARK_DELAY.name] = _WATERMARK_DELAY.only_fixed(c, self.watermark_delay)
        if self.last_batch_ts is not None:
            f[LAST_BATCH_TS.name] = _LAST_BATCH_TS.only_fixed(c, self.last_batch_ts)
        f[GROUPS_TRACKED.name] = _GROUPS_TRACKED.only_fixed(c, groups_tracked)
        f[SINK_ERRORS.name] = _SINK_ERRORS.by_label(c, self.sink_errors)
        return [f.get(name, "") for name in _NAMES]

    def text(self, counters: dict[str, str], groups_tracked: int) -> str:
        """Every self metric, with the families' headers (:meth:`parts`)."""
        return "".join([h + p for h, p in zip(HEADERS, self.parts(counters, groups_tracked))])
