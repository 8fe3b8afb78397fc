"""Counters that survive restarts: micro-batches applied exactly once, exported only once durable, and the snapshot.

The streaming job (``spark/job.py``) feeds each micro-batch through ``MetricsUpdater.apply_batch``
(:meth:`Snapshot.apply_batch`), which applies a ``batch_id`` once (a batch re-run after a crash is skipped) and,
with a ``persist`` callback (``state_file.MetricsStateFile``), holds the exposition as it was before the batch
(``MetricsStore.hold``) until the snapshot is durable: see ``state_file.py`` for the crash windows. The snapshot is
:meth:`Snapshot.state_text` (JSON, format :data:`STATE_VERSION`), read back by :meth:`Snapshot.load_state`: the
job's counters, every group's counters and record-fed gauges (``GroupSeries.to_state``), and the names of the
groups left out. Nothing in it names the Kafka cluster: a snapshot is one store's, of one cluster, and loads into
the store of the cluster it belongs to whatever that cluster is called (a single-cluster snapshot written before
the ``kafka_cluster`` label included).
"""
from __future__ import annotations

import json
from collections.abc import Iterable

from .catalogue import BATCH_DURATION_BUCKETS
from .exposition import Histogram
from .series import GroupSeries
from .store import MetricsStore

STATE_VERSION = 1            # of state_text(); load_state() refuses another
_JSON_SEP = (",", ":")


class Snapshot:
    """The exactly-once bookkeeping of one store: ``applied_batch_id``, the highest micro-batch whose records are
    applied, and each group's serialized state, written again only for the groups a record reached since the
    previous snapshot (so a snapshot stays cheap with thousands of quiet groups)."""

    def __init__(self, store: MetricsStore) -> None:
        self.store = store
        self.applied_batch_id = -1
        self._frags: dict[str, str] = {}

    def apply_batch(self, batch_id: int, records: Iterable[dict], persist=None, left_out: Iterable[str] = (),
                    **figures) -> bool:
        """Apply one micro-batch exactly once (see ``MetricsUpdater.apply_batch``); ``persist(batch_id)``."""
        store = self.store
        with store.lock:
            fresh = batch_id > self.applied_batch_id
            if fresh:
                if persist is not None and not store.holding:
                    store.hold()
                store.apply(records)
                for name in left_out:
                    if not store.tracks(name):
                        store.admission.note_denied(name)
                store.health.record_batch(batch_id, **figures)
                self.applied_batch_id = batch_id
        if persist is not None:
            try:
                persist(batch_id)
            except Exception:
                store.health.note_sink_error("metrics_state")
                store.health.set_ready(False, "the exported-metrics snapshot could not be saved")
                raise
            with store.lock:
                store.release()
        return fresh

    def state_text(self, batch_id: int, **meta) -> str:
        """The snapshot as JSON (see ``MetricsUpdater.state_text``)."""
        store = self.store
        with store.lock:
            frags = self._frags
            for name in store.take_touched():
                g = store.series(name)
                if g is None:
                    frags.pop(name, None)
                else:
                    frags[name] = f"{json.dumps(name)}:{json.dumps(g.to_state(), separators=_JSON_SEP)}"
            h = store.health
            head = json.dumps({
                "version": STATE_VERSION, "batch_id": batch_id, **meta,
                "counters": {"events_read": h.events_read, "rejects": h.rejects, "notes": h.notes,
                             "batches": h.batches, "batch_duration": h.batch_duration.to_state(),
                             "output_records": h.output_records, "groups_dropped": store.admission.dropped,
                             "broker_facts_errors": h.broker_facts_errors},
            }, separators=_JSON_SEP)
            return "".join((head[:-1], ',"groups":{', ",".join([frags[n] for n in store.names()]),
                            '},"dropped_names":', store.admission.names_json(), "}"))

    def load_state(self, data: dict) -> int:
        """Restore a parsed :meth:`state_text` into a fresh store (see ``MetricsUpdater.load_state``)."""
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported metrics state version {data.get('version')!r}")
        batch_id = int(data["batch_id"])
        c = data.get("counters") or {}

        def counts(d) -> dict[str, int]:
            return {str(k): int(v) for k, v in (d or {}).items()}

        events_read, rejects = counts(c.get("events_read")), counts(c.get("rejects"))
        notes, facts_errors = counts(c.get("notes")), counts(c.get("broker_facts_errors"))
        output_records, dropped = counts(c.get("output_records")), counts(c.get("groups_dropped"))
        batches = int(c.get("batches", 0))
        duration = Histogram(BATCH_DURATION_BUCKETS)
        if c.get("batch_duration"):
            duration.load_state(c["batch_duration"])
        store = self.store
        adm = store.admission
        dropped_names = [(str(n), str(r)) for n, r in data.get("dropped_names") or ()]
        groups: dict[str, GroupSeries] = {}
        for name, d in (data.get("groups") or {}).items():
            if not adm.keeps(name):
                continue
            if not adm.has_room(len(groups)):
                break
            groups[name] = GroupSeries.from_state(name, d, store.cluster)
        with store.lock:
            h = store.health
            h.events_read, h.rejects, h.output_records, h.notes = events_read, rejects, output_records, notes
            h.batches, h.batch_duration = batches, duration
            # (the broker poller may have counted before a snapshot on S3 or HDFS was read: both count)
            for k, v in facts_errors.items():
                h.broker_facts_errors[k] = h.broker_facts_errors.get(k, 0) + v
            adm.restore(dropped, dropped_names)
            self._frags.clear()
            store.restore_groups(groups)
            self.applied_batch_id = batch_id
            return len(groups)
