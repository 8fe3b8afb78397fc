"""The state of every exported series, fed from the monitor's output records: :class:`MetricsUpdater`.

The updater is the face the job, the HTTP exporter and the broker poller use; the concepts live in their modules:

| module | concept |
| --- | --- |
| ``catalogue.py`` | every family: name, type, help, labels (nothing else spells a name or a label) |
| ``exposition.py`` | the text format: escaping, values, headers, a family's lines, the histogram |
| ``series.py`` | :class:`~.series.GroupSeries`: what is exported about one group, and its part of the snapshot |
| ``apply.py`` | one apply-function per record kind, over a group's series |
| ``render.py`` | one renderer per family group, and each group's cached lines |
| ``client_families.py`` | the clients' own standard metrics of a group (``kafka_consumergroup_client_*``) |
| ``risk_families.py`` | the members at risk of a group, each valued its deadline (``kafka_consumergroup_member_at_risk_*``) |
| ``task_families.py`` | a streams group's tasks per member, tasks moved and mismatched (``kafka_streamsgroup_*``) |
| ``body.py`` | the exposition of the groups and topics in catalogue order, cached (text, bytes, gzip) |
| ``admission.py`` | allow/deny, ``max_groups``, the idle TTL, and the groups left out |
| ``health.py`` | up, ready and the self metrics of the streaming job |
| ``store.py`` | :class:`~.store.MetricsStore`: one Kafka cluster's; the lock, ``apply(records)``, ``render()`` |
| ``persistence.py`` | micro-batches applied exactly once, exported once durable; the snapshot |
| ``fleet_exposition.py`` | :class:`~.fleet_exposition.FleetMetrics`: several clusters' updaters as one exposition |
| ``exporter.py`` | the HTTP endpoint |

Series of a group disappear with it: on a ``group_deleted`` record, and when the group has had no record for
``idle_group_ttl_s``. Cardinality is capped: groups not matching ``group_allow`` or matching ``group_deny``
(regular expressions, full match) and groups beyond ``max_groups`` are not exported, and each such group is
counted once in ``rebalance_monitor_groups_dropped_total{reason="denied"|"max_groups"}``.

Counters and restarts: every counter starts at 0 in a new updater and never goes backwards. The streaming
job (``spark/job.py``) feeds each micro-batch through :meth:`MetricsUpdater.apply_batch`, which applies a
``batch_id`` once (a batch re-run after a crash is skipped) and, with a ``persist`` callback
(``state_file.MetricsStateFile``), keeps the counters and the group gauges across restarts: see ``state_file.py``
for the crash windows. Within one process a replayed record does not count twice either: generations are
deduplicated on ``(group, generation, completed_ms)``, member timeouts on ``(group, member_id, timeout,
detected_ms)``, storms on ``(group, started_ms)`` and batches (``record_batch``) on ``batch_id``. A group dropped
by ``group_deleted`` or the idle TTL loses its counters: if it comes back its series start again from 0.
"""
from __future__ import annotations

import time
from collections.abc import Iterable

from .admission import DEFAULT_MAX_GROUPS
from .catalogue import DEFAULT_CLUSTER
from .persistence import STATE_VERSION, Snapshot
from .store import MetricsStore

__all__ = ["MetricsUpdater", "STATE_VERSION"]


class MetricsUpdater(MetricsStore):
    """Holds every exported series; thread-safe (one lock; applying and scraping may run on different threads).

    ``clock`` returns epoch seconds (tests inject a fake one). ``now_ms`` arguments default to it.
    With ``prerender`` (default) each ``apply`` ends by re-rendering the groups it changed, so a scrape only
    joins cached text; the rendering cost lands on the caller of ``apply`` (the streaming job's batch thread).
    """

    def __init__(self, *, max_groups: int = DEFAULT_MAX_GROUPS, group_allow: str | None = None,
                 group_deny: str | None = None,
                 idle_group_ttl_s: float = 86400, ready_max_age_s: float = 300.0, time_lag_samples: int = 60,
                 clock=time.time, prerender: bool = True, lag_granularity: str = "partition",
                 cluster: str = DEFAULT_CLUSTER) -> None:
        super().__init__(max_groups=max_groups, group_allow=group_allow, group_deny=group_deny,
                         idle_group_ttl_s=idle_group_ttl_s, ready_max_age_s=ready_max_age_s,
                         time_lag_samples=time_lag_samples, clock=clock, prerender=prerender,
                         lag_granularity=lag_granularity, cluster=cluster)
        self._snapshot = Snapshot(self)

    # ---- micro-batches of the streaming job: exactly once, durable before visible ------------------------
    def apply_batch(self, batch_id: int, records: Iterable[dict], persist=None, left_out: Iterable[str] = (),
                    **figures) -> bool:
        """Apply one micro-batch of the streaming job exactly once; returns True when its records were applied.

        * ``batch_id <= applied_batch_id``: the batch is already in this state (Spark runs a batch it did not
          commit again, with the same records; after a restart the restored state may hold it): skipped.
        * Otherwise the records are applied and the batch accounted (:meth:`record_batch` with ``figures``).
          ``left_out``: groups that groups.allow/deny left out before the exporter saw them (the Spark job
          drops their events in its decode stage); each is counted once, as a group denied here would be.
        * With ``persist`` (``persist(updater, batch_id)``, e.g. ``MetricsStateFile.save``), scrapes keep
          seeing the exposition as it was before the batch until ``persist`` has returned: a counter is never
          exported before it is durable, so a crash cannot make it go back (which Prometheus would take for a
          reset and count again). If ``persist`` raises, the exposition stays as it was, the error is counted
          (``rebalance_monitor_sink_errors_total{sink="metrics_state"}``), the job turns not ready and the
          exception propagates: the batch fails, Spark runs it again, and only ``persist`` is retried.
        """
        return self._snapshot.apply_batch(batch_id, records, None if persist is None else
                                          (lambda b: persist(self, b)), left_out, **figures)

    @property
    def applied_batch_id(self) -> int:
        """The highest micro-batch whose records are applied (-1: none)."""
        return self._snapshot.applied_batch_id

    def state_text(self, batch_id: int, **meta) -> str:
        """The state that outlives the process, as JSON: ``version``, ``batch_id``, ``meta``, the non-process
        counters, every group's counters and record-fed gauges, and the dropped group names.

        A group is serialized again only when a record touched it since the previous call; the rest of the
        cost is one string join, so a call stays cheap with thousands of quiet groups."""
        return self._snapshot.state_text(batch_id, **meta)

    def load_state(self, data: dict) -> int:
        """Restore what :meth:`state_text` wrote (parsed) into a fresh updater; returns the groups restored.

        ``applied_batch_id`` becomes the state's ``batch_id``. Groups the current ``group_allow``,
        ``group_deny`` or ``max_groups`` would not admit are left out. Raises (ValueError, TypeError, KeyError)
        and changes nothing when the data is not a state of this version."""
        return self._snapshot.load_state(data)

    # ---- the job's health (health.py) ----------------------------------------------------------------------
    def record_batch(self, batch_id, events_read: dict[str, int] | None = None,
                     rejects: dict[str, int] | None = None, duration_s: float | None = None,
                     state_rows: int | None = None, watermark_ms: int | None = None,
                     output_counts: dict[str, int] | None = None, notes: dict[str, int] | None = None) -> None:
        """Account one micro-batch of the streaming job (a batch id seen before is not counted again)."""
        self.health.record_batch(batch_id, events_read, rejects, duration_s, state_rows, watermark_ms,
                                 output_counts, notes)

    def mark_alive(self) -> None:
        """The job is healthy but ran no batch (caught up, nothing to read): /ready stays green."""
        self.health.mark_alive()

    def set_up(self, up: bool) -> None:
        self.health.set_up(up)

    def set_kafka_up(self, up: bool) -> None:
        """Whether the cluster's Kafka answers and the job's query of it runs
        (``rebalance_monitor_kafka_cluster_up``; absent until first said)."""
        self.health.set_kafka_up(up)

    def note_kafka_read(self, ts: float | None = None) -> None:
        """A successful read from the cluster (a completed micro-batch, or an idle check that found nothing new to
        read) at ``ts``, epoch seconds, default now from the clock
        (``rebalance_monitor_kafka_cluster_last_read_timestamp_seconds``)."""
        self.health.note_kafka_read(ts)

    def set_ready(self, ready: bool, reason: str | None = None) -> None:
        """`reason`: why the job is not ready, shown on /ready's body (None keeps the previous one)."""
        self.health.set_ready(ready, reason)

    def note_sink_error(self, sink: str) -> None:
        self.health.note_sink_error(sink)

    def note_broker_facts_error(self, reason: str) -> None:
        """What the broker poller asked and did not get (broker_facts/poller.py), by reason."""
        self.health.note_broker_facts_error(reason)

    def is_ready(self) -> bool:
        """Ready: the job said so, and its last batch (or the ready report) is at most ``ready_max_age_s`` old."""
        return self.health.readiness()[0]

    def readiness(self) -> tuple[bool, str]:
        """(ready, why not) for /ready: the reason the job gave, or how old its last batch is."""
        return self.health.readiness()
