"""Every exported series behind one lock: records in (:meth:`MetricsStore.apply`), exposition out
(:meth:`MetricsStore.render`, :meth:`MetricsStore.render_bytes`).

The store composes the concepts of the other modules: admission (``admission.py``) decides which groups get a
:class:`~rebalance_monitor.metrics.series.GroupSeries`; each record goes to its apply-function (``apply.py``); the
log-end offsets are shared by every group (``lag.EndOffsetTable``); the job's health is ``health.py``'s.

Rendering is cached at three levels: each group's lines until a record marks them stale (``render.py``), each
topic's end-offset lines until an end offset of the topic moves, and the whole body (text, bytes, gzip) until
anything changes. With ``prerender`` (default) :meth:`apply` ends by rendering what it changed, so a scrape only
joins cached text; the cost lands on the caller of ``apply`` (the streaming job's batch thread). The self metrics
(``health.py``) are written at each scrape, after the body. While a snapshot is being persisted
(``persistence.py``) scrapes see the exposition held by :meth:`hold` until :meth:`release`.
"""
from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterable

from . import lag_levels
from .admission import Admission
from .apply import APPLY, END_OFFSETS, GROUP_DELETED, apply_end_offsets
from .catalogue import CATALOGUE, COMMITTED_OFFSET, END_OFFSET
from .exposition import header
from .health import JobHealth
from .lag import EndOffsetTable
from .render import LAG_FAMILIES, META_FAMILIES, GroupLines, committed_lines, end_offset_lines, lag_lines, meta_lines
from .series import GroupSeries

_META, _LAG, _COMMITTED, _END = range(4)
_SOURCES = {**{s.name: _META for s in META_FAMILIES}, **{s.name: _LAG for s in LAG_FAMILIES},
            COMMITTED_OFFSET.name: _COMMITTED, END_OFFSET.name: _END}
# the body: every family of the groups and the topics, in catalogue order, with its header and where its lines are
_BODY = tuple((header(spec), spec.name, _SOURCES[spec.name]) for spec in CATALOGUE
              if spec.group_scoped or spec is END_OFFSET)


class _Held:
    """The exposition scrapes see while a snapshot is persisted: the body and the persisted self counters."""

    __slots__ = ("body", "body_bytes", "body_gzip", "counters")

    def __init__(self, body: str, counters: dict[str, str]) -> None:
        self.body, self.counters = body, counters
        self.body_bytes: bytes | None = None
        self.body_gzip: bytes | None = None


class MetricsStore:
    """Holds every exported series; thread-safe (one lock; applying and scraping may run on different threads).

    ``clock`` returns epoch seconds (tests inject a fake one). ``now_ms`` arguments default to it.
    """

    def __init__(self, *, max_groups: int = 5000, group_allow: str | None = None, group_deny: str | None = None,
                 idle_group_ttl_s: float = 86400, ready_max_age_s: float = 300.0, time_lag_samples: int = 60,
                 clock=time.time, prerender: bool = True, lag_granularity: str = "partition") -> None:
        self.lag_granularity = lag_levels.check_granularity(lag_granularity)   # lag.granularity (lag_levels.py)
        self.prerender = prerender
        self.clock = clock
        self._lock = threading.RLock()
        self.admission = Admission(max_groups, group_allow, group_deny, idle_group_ttl_s)
        self.health = JobHealth(clock, ready_max_age_s, self._lock)
        self._groups: dict[str, GroupSeries] = {}
        self._ends = EndOffsetTable(time_lag_samples)
        self._topic_groups: dict[str, set[str]] = {}      # topic -> groups with commits on it
        self._touched: set[str] = set()                    # groups a record reached since the last snapshot
        self._last_now_ms = int(clock() * 1000)
        # render cache
        self._end_frags: dict[str, str] = {}               # topic -> rendered end-offset lines
        self._end_prefix: dict[tuple[str, int], str] = {}
        self._dirty_topics: set[str] = set()
        self._body: str | None = None                      # the exposition of the groups and topics
        self._body_bytes: bytes | None = None
        self._body_gzip: bytes | None = None
        self._held: _Held | None = None

    # ---- records -------------------------------------------------------------------------------------------
    def apply(self, records: Iterable[dict], now_ms: int | None = None) -> None:
        """Update the series from output records (dicts with ``kind`` and ``group``); unknown kinds are ignored."""
        if now_ms is None:
            now_ms = int(self.clock() * 1000)
        with self._lock:
            self._body = None
            self._last_now_ms = max(self._last_now_ms, now_ms)
            ends = self._ends
            for rec in records:
                kind = rec.get("kind")
                fn = APPLY.get(kind)
                if fn is None:
                    if kind == END_OFFSETS:
                        self._dirty_topics.update(apply_end_offsets(ends, rec, now_ms))
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
                self._render_body()

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
        s = self._groups[name] = GroupSeries(name, now_ms)
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
            self._body = None
        for key in self._ends.expire(ends_before_ms):
            self._dirty_topics.add(key[0])
            self._end_prefix.pop(key, None)
            self._body = None

    # ---- introspection -------------------------------------------------------------------------------------
    @property
    def groups(self) -> list[str]:
        with self._lock:
            return sorted(self._groups)

    def groups_without_commits(self) -> list[str]:
        """Tracked groups that sent no ``offsets_committed`` record: their offsets come from the brokers."""
        with self._lock:
            return sorted(n for n, g in self._groups.items() if not g.stream_commits)

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
        self._body = None

    # ---- exposition ----------------------------------------------------------------------------------------
    def render(self) -> str:
        """The whole text exposition (format 0.0.4)."""
        with self._lock:
            held = self._held
            body = held.body if held is not None else self._render_body()
            return body + self._render_self()

    def render_bytes(self, gzip_ok: bool = False) -> tuple[bytes, str | None]:
        """The exposition as bytes for HTTP, gzip-compressed when ``gzip_ok``: ``(body, content_encoding)``.

        The groups' part is cached (text, bytes and gzip) until something changes; the gzip answer is two
        gzip members (groups, then the self metrics), which gzip readers, Prometheus' included, concatenate.
        """
        with self._lock:
            held = self._held
            if held is not None:     # a micro-batch is being applied and persisted: the exposition before it
                if held.body_bytes is None:
                    held.body_bytes = held.body.encode("utf-8")
                body_bytes = held.body_bytes
            else:
                body = self._render_body()
                if self._body_bytes is None:
                    self._body_bytes = body.encode("utf-8")
                body_bytes = self._body_bytes
            tail = self._render_self().encode("utf-8")
            if not gzip_ok:
                return body_bytes + tail, None
            if held is not None:
                if held.body_gzip is None:
                    held.body_gzip = gzip.compress(body_bytes, compresslevel=1)
                body_gzip = held.body_gzip
            else:
                if self._body_gzip is None:
                    self._body_gzip = gzip.compress(body_bytes, compresslevel=1)
                body_gzip = self._body_gzip
            return body_gzip + gzip.compress(tail, compresslevel=1), "gzip"

    @property
    def holding(self) -> bool:
        return self._held is not None

    def hold(self) -> None:
        """Scrapes show the current groups and persisted counters until :meth:`release`."""
        self._held = _Held(self._render_body(), self.health.counter_lines(self.admission.dropped))

    def release(self) -> None:
        self._held = None

    def _render_self(self) -> str:
        held = self._held
        counters = held.counters if held is not None else self.health.counter_lines(self.admission.dropped)
        return self.health.text(counters, len(self._groups))

    def _render_body(self) -> str:
        now_ms = int(self.clock() * 1000)
        if self.admission.expiry_due(now_ms):
            self._expire(now_ms)
        if self._body is not None:
            return self._body
        groups = list(self._groups.values())
        self._render_groups(groups)
        self._render_end_offsets()
        out: list[str] = []
        for head, name, source in _BODY:
            out.append(head)
            if source == _META:
                out.extend(g.lines.meta.get(name, "") for g in groups)
            elif source == _LAG:
                out.extend(g.lines.lag.get(name, "") for g in groups)
            elif source == _COMMITTED:
                out.extend(g.lines.committed for g in groups)
            else:
                out.extend(self._end_frags[t] for t in sorted(self._end_frags))
        self._body = "".join(out)
        self._body_bytes = None
        self._body_gzip = None
        return self._body

    def _render_groups(self, groups: list[GroupSeries]) -> None:
        """Write again the lines each group's series marked stale, and every group's lag on a moved topic."""
        for t in self._dirty_topics:
            for name in self._topic_groups.get(t, ()):
                self._groups[name].stale_lag = True
            self._end_frags.pop(t, None)
        self._dirty_topics.clear()
        ends, now_ms, granularity = self._ends, self._last_now_ms, self.lag_granularity
        for g in groups:
            lines = g.lines
            if lines is None:
                lines = g.lines = GroupLines()
            if g.stale_offsets or g.stale_lag:
                lines.lag = lag_lines(g, lines, ends, now_ms, granularity)
                g.stale_lag = False
            if g.stale_offsets:
                lines.committed = committed_lines(g, lines, granularity)
                g.stale_offsets = False
            if g.stale_meta:
                lines.meta = meta_lines(g)
                g.stale_meta = False

    def _render_end_offsets(self) -> None:
        """Write again the end-offset lines of the topics whose end offsets moved."""
        by_topic: dict[str, list] = {}
        for key in self._ends.ends:
            if key[0] not in self._end_frags:
                by_topic.setdefault(key[0], []).append(key)
        for t, keys in by_topic.items():
            keys.sort()
            self._end_frags[t] = end_offset_lines(keys, self._ends.ends, self._end_prefix, self.lag_granularity)
