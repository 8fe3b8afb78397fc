"""The exposition of the groups and the topics (the "body"; the self metrics of ``health.py`` follow it at each
scrape), in catalogue order, cached at three levels:

* each group's lines, until a record marks them stale (``series.py``, written by ``render.py``);
* each topic's end-offset lines, until an end offset of the topic moves (which also makes the lag of the groups
  that committed on the topic stale);
* the whole body, as each family's lines (:class:`BodyText`'s ``parts``, so that the bodies of several clusters'
  stores merge family by family: ``fleet_exposition.py``), text, bytes and gzip, until anything changes.
"""
from __future__ import annotations

import gzip
from collections.abc import Iterable

from .catalogue import CATALOGUE, COMMITTED_OFFSET, END_OFFSET
from .exposition import cluster_label, header
from .lag import EndOffsetTable
from .render import LAG_FAMILIES, META_FAMILIES, GroupLines, committed_lines, end_offset_lines, lag_lines, meta_lines
from .series import GroupSeries

_META, _LAG, _COMMITTED, _END = range(4)
_SOURCES = {**{s.name: _META for s in META_FAMILIES}, **{s.name: _LAG for s in LAG_FAMILIES},
            COMMITTED_OFFSET.name: _COMMITTED, END_OFFSET.name: _END}
# every family of the groups and the topics, in catalogue order (a family of a group that no renderer writes is a
# KeyError here, at import), and their headers
FAMILIES = tuple(spec for spec in CATALOGUE if spec.group_scoped or spec is END_OFFSET)
HEADERS = tuple(header(spec) for spec in FAMILIES)
_PLAN = tuple((spec.name, _SOURCES[spec.name]) for spec in FAMILIES)


class BodyText:
    """A rendered body: ``parts``, each family's lines (a list of text fragments, aligned with :data:`FAMILIES`,
    without the header), and its text, bytes and gzip member, each made once when first asked for."""

    __slots__ = ("parts", "_text", "_bytes", "_gzip")

    def __init__(self, parts: list[list[str]]) -> None:
        self.parts = parts
        self._text: str | None = None
        self._bytes: bytes | None = None
        self._gzip: bytes | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            out: list[str] = []
            for head, frags in zip(HEADERS, self.parts):
                out.append(head)
                out.extend(frags)
            self._text = "".join(out)
        return self._text

    def as_bytes(self) -> bytes:
        if self._bytes is None:
            self._bytes = self.text.encode("utf-8")
        return self._bytes

    def as_gzip(self) -> bytes:
        if self._gzip is None:
            self._gzip = gzip.compress(self.as_bytes(), compresslevel=1)
        return self._gzip


class BodyCache:
    """Renders the body, writing again only what changed since the previous :meth:`render`."""

    def __init__(self, granularity: str, cluster: str) -> None:
        self.granularity = granularity
        self.cluster = cluster_label(cluster)              # the cluster's label text
        self.current: BodyText | None = None
        self._end_frags: dict[str, str] = {}               # topic -> its end-offset lines
        self._end_prefix: dict[tuple[str, int], str] = {}
        self._dirty_topics: set[str] = set()               # topics whose end offsets moved

    def invalidate(self) -> None:
        self.current = None

    def topics_moved(self, topics: Iterable[str]) -> None:
        self._dirty_topics.update(topics)

    def partition_gone(self, key: tuple[str, int]) -> None:
        """The end offset of ``key`` expired."""
        self._dirty_topics.add(key[0])
        self._end_prefix.pop(key, None)
        self.current = None

    def render(self, groups: dict[str, GroupSeries], topic_groups: dict[str, set[str]], ends: EndOffsetTable,
               now_ms: int) -> BodyText:
        """The body of ``groups`` (in their order) and ``ends``; ``topic_groups``: topic -> the groups that
        committed on it; ``now_ms``: the time of the time lag."""
        if self.current is not None:
            return self.current
        for t in self._dirty_topics:
            for name in topic_groups.get(t, ()):
                groups[name].stale_lag = True
            self._end_frags.pop(t, None)
        self._dirty_topics.clear()
        series = list(groups.values())
        self._render_groups(series, ends, now_ms)
        self._render_end_offsets(ends)
        parts: list[list[str]] = []
        for name, source in _PLAN:
            if source == _META:
                parts.append([x for x in (g.lines.meta.get(name) for g in series) if x])
            elif source == _LAG:
                parts.append([x for x in (g.lines.lag.get(name) for g in series) if x])
            elif source == _COMMITTED:
                parts.append([g.lines.committed for g in series if g.lines.committed])
            else:
                parts.append([self._end_frags[t] for t in sorted(self._end_frags)])
        self.current = BodyText(parts)
        return self.current

    def _render_groups(self, series: list[GroupSeries], ends: EndOffsetTable, now_ms: int) -> None:
        """Write again the lines each group's series marked stale."""
        granularity = self.granularity
        for g in series:
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

    def _render_end_offsets(self, ends: EndOffsetTable) -> None:
        """Write again the end-offset lines of the topics whose end offsets moved."""
        by_topic: dict[str, list] = {}
        for key in ends.ends:
            if key[0] not in self._end_frags:
                by_topic.setdefault(key[0], []).append(key)
        for t, keys in by_topic.items():
            keys.sort()
            self._end_frags[t] = end_offset_lines(keys, ends.ends, self._end_prefix, self.granularity, self.cluster)
