"""Every exported series behind one lock: records in (:meth:`MetricsStore.apply`), exposition out
(:meth:`MetricsStore.render`, :meth:`MetricsStore.render_bytes`).

The store composes the concepts of the other modules: admission (``admission.py``) decides which groups get a
:class:`~rebalance_monitor.metrics.series.GroupSeries`; each record goes to its apply-function (``apply.py``); the
log-end offsets are shared by every group (``lag.EndOffsetTable``); the groups' and topics' exposition is cached
by ``body.py``; the job's health and the self metrics, written at each scrape after the body, are ``health.py``'s.
A store is one Kafka cluster's (``cluster``, the value of the ``kafka_cluster`` label of each of its lines); a run
watching several clusters has a store each, and ``fleet_exposition.py`` merges their expositions.

With ``prerender`` (default) :meth:`apply` ends by rendering what it changed, so a scrape only joins cached text;
the cost lands on the caller of ``apply`` (the streaming job's batch thread). While a snapshot is being persisted
(``persistence.py``) scrapes see the exposition held by :meth:`hold` until :meth:`release`.
"""
from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterable

from . import lag_levels
from .admission import DEFAULT_MAX_GROUPS, Admission
from .catalogue import DEFAULT_CLUSTER
from .apply import APPLY, END_OFFSETS, GROUP_DELETED, apply_end_offsets
from .body import BodyCache, BodyText
from .health import JobHealth
from .lag import EndOffsetTable
from .series import GroupSeries


class MetricsStore:
    """Holds every exported series; thread-safe (one lock; applying and scraping may run on different threads).

    ``clock`` returns epoch seconds (tests inject a fake one). ``now_ms`` arguments default to it. ``cluster``: the
    Kafka cluster's name, the ``kafka_cluster`` label's value, written exactly as given (escaped).
    """

    def __init__(self, *, max_groups: int = DEFAULT_MAX_GROUPS, group_allow: str | None = None,
                 group_deny: str | None = None,
                 idle_group_ttl_s: float = 86400, ready_max_age_s: float = 300.0, time_lag_samples: int = 60,
                 clock=time.time, prerender: bool = True, lag_granularity: str = "partition",
                 cluster: str = DEFAULT_CLUSTER) -> None:
        if not isinstance(cluster, str) or not cluster:
            raise ValueError(f"the Kafka cluster's name must be a non-empty string, not {cluster!r}")
        self.cluster = cluster
        self.lag_granularity = lag_levels.check_granularity(lag_granularity)   # lag.granularity (lag_levels.py)
        self.prerender = prerender
        self.clock = clock
        self._lock = threading.RLock()
        self.admission = Admission(max_groups, group_allow, group_deny, idle_group_ttl_s, clock)
        self.health = JobHealth(clock, ready_max_age_s, self._lock, cluster)
        self._groups: dict[str, GroupSeries] = {}
        self._ends = EndOffsetTable(time_lag_samples)
        self._topic_groups: dict[str, set[str]] = {}      # topic -> groups with commits on it
        self._touched: set[str] = set()                    # groups a record reached since the last snapshot
        self._last_now_ms = int(clock() * 1000)
        self._body = BodyCache(self.lag_granularity, cluster)
        self._held: tuple[BodyText, dict[str, str]] | None = None   # (body, persisted self counters)

    # ---- records -------------------------------------------------------------------------------------------
    def apply(self, records: Iterable[dict], now_ms: int | None = None) -> None:
        """Update the series from output records (dicts with ``kind`` and ``group``); unknown kinds are ignored."""
        if now_ms is None:
            now_ms = int(self.clock() * 1000)
        with self._lock:
            self._body.invalidate()
            self._last_now_ms = max(self._last_now_ms, now_ms)
            ends = self._ends
            for rec in records:
                kind = rec.get("kind")
                fn = APPLY.get(kind)
                if fn is None:
                    if kind == END_OFFSETS:
                        self._body.topics_moved(apply_end_offsets(ends, rec, now_ms))
                    elif kind == GROUP_DELETED and isinstance(rec.get("group"), str):
                        self._remove(rec["group"])
                    continue
                group = rec.get("group")
                if not isinstance(group, str):
                    continue
                s = self._series(group, now_ms)
                if s is None:
                    continue
                new_topics = fn(s, rec, ends)
                if new_topics:
                    for t in new_topics:
                        self._topic_groups.setdefault(t, set()).add(group)
            if self.admission.expiry_due(now_ms):
                self._expire(now_ms)
            if self.prerender:
                self._current_body()

    def _series(self, name: str, now_ms: int) -> GroupSeries | None:
        """The group's series; a new one if admission lets it in, else None (and the drop counted)."""
        s = self._groups.get(name)
        if s is not None:
            s.last_activity_ms = max(s.last_activity_ms, now_ms)
            self._touched.add(name)
            return s
        adm = self.admission
        if not adm.keeps(name):
            adm.note_denied(name)
            return None
        if not adm.has_room(len(self._groups)):
            self._expire(now_ms)
            if not adm.has_room(len(self._groups)):
                adm.note_over_cap(name)
                return None
        adm.admitted(name)
        s = self._groups[name] = GroupSeries(name, now_ms, self.cluster)
        self._touched.add(name)
        return s

    def _remove(self, name: str) -> None:
        s = self._groups.pop(name, None)
        if s is None:
            return
        self._touched.add(name)
        for (t, _p) in s.committed:
            gs = self._topic_groups.get(t)
            if gs is not None:
                gs.discard(name)
                if not gs:
                    del self._topic_groups[t]

    def _expire(self, now_ms: int) -> None:
        idle, ends_before_ms = self.admission.expired(self._groups, now_ms)
        for name in idle:
            self._remove(name)
            self._body.invalidate()
        for key in self._ends.expire(ends_before_ms):
            self._body.partition_gone(key)

    # ---- introspection -------------------------------------------------------------------------------------
    @property
    def groups(self) -> list[str]:
        with self._lock:
            return sorted(self._groups)

    def groups_without_commits(self) -> list[str]:
        """Tracked groups that sent no ``offsets_committed`` record: their offsets come from the brokers."""
        with self._lock:
            return sorted(n for n, g in self._groups.items() if not g.stream_commits and g.group_type != "share")

    def share_groups(self) -> list[str]:
        """Tracked share groups (their records say so): their progress is asked with DescribeShareGroupOffsets."""
        with self._lock:
            return sorted(n for n, g in self._groups.items() if g.group_type == "share")

    def committed_partitions(self) -> list[tuple[str, int]]:
        """Every partition some tracked group committed on (the broker poller reads their log ends)."""
        with self._lock:
            return sorted({k for g in self._groups.values() for k in g.committed})

    # ---- for the snapshot (persistence.py) -----------------------------------------------------------------
    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def tracks(self, name: str) -> bool:
        return name in self._groups

    def series(self, name: str) -> GroupSeries | None:
        return self._groups.get(name)

    def names(self) -> Iterable[str]:
        """The tracked groups, in the order they were admitted (the exposition's)."""
        return iter(self._groups)

    def take_touched(self) -> set[str]:
        """The groups a record reached (or that were dropped) since the previous call."""
        touched, self._touched = self._touched, set()
        return touched

    def restore_groups(self, groups: dict[str, GroupSeries]) -> None:
        """Replace every group's series (a snapshot loaded into a fresh store)."""
        self._groups = groups
        self._touched = set(groups)
        self._topic_groups.clear()
        self._body.invalidate()

    # ---- exposition ----------------------------------------------------------------------------------------
    def render(self) -> str:
        """The whole text exposition (format 0.0.4)."""
        with self._lock:
            body = self._held[0] if self._held is not None else self._current_body()
            return body.text + self._render_self()

    def render_bytes(self, gzip_ok: bool = False) -> tuple[bytes, str | None]:
        """The exposition as bytes for HTTP, gzip-compressed when ``gzip_ok``: ``(body, content_encoding)``.

        The groups' part is cached (text, bytes and gzip) until something changes; the gzip answer is two
        gzip members (groups, then the self metrics), which gzip readers, Prometheus' included, concatenate.
        """
        with self._lock:
            body = self._held[0] if self._held is not None else self._current_body()
            tail = self._render_self().encode("utf-8")
            if not gzip_ok:
                return body.as_bytes() + tail, None
            return body.as_gzip() + gzip.compress(tail, compresslevel=1), "gzip"

    def parts(self) -> tuple[BodyText, list[str]]:
        """The exposition as each family's lines, for merging with other clusters' (``fleet_exposition.py``): the
        body (:class:`~.body.BodyText`, its ``parts`` aligned with ``body.FAMILIES``) and the self metrics' lines
        (aligned with ``health.HEALTH_FAMILIES``), as :meth:`render` would write them."""
        with self._lock:
            body = self._held[0] if self._held is not None else self._current_body()
            return body, self.health.parts(self._self_counters(), len(self._groups))

    @property
    def holding(self) -> bool:
        return self._held is not None

    def hold(self) -> None:
        """Scrapes show the current groups and persisted counters until :meth:`release` (a micro-batch is being
        applied and persisted: the exposition before it)."""
        self._held = (self._current_body(), self.health.counter_lines(self.admission.dropped))

    def release(self) -> None:
        self._held = None

    def _self_counters(self) -> dict[str, str]:
        return self._held[1] if self._held is not None else self.health.counter_lines(self.admission.dropped)

    def _render_self(self) -> str:
        return self.health.text(self._self_counters(), len(self._groups))

    def _current_body(self) -> BodyText:
        now_ms = int(self.clock() * 1000)
        if self.admission.expiry_due(now_ms):
            self._expire(now_ms)
        return self._body.render(self._groups, self._topic_groups, self._ends, self._last_now_ms)
