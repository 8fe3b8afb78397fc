"""Rebalance-storm detection on event time.

A group is in a storm while at least `min_rebalances` generations completed inside the trailing window
`(t - window, t]`. With completion times c1 <= ... <= cn, the storm starts at the completion that brings the
count to the minimum and ends at `c[n - min + 1] + window`, the moment the oldest completion the storm still
needs falls out of the window.

A storm record is emitted when the storm starts, again (same `started_ms`, `ended_ms` still null) whenever a
generation inside it changes its pattern (a storm that starts as "mixed" often shows what it is a few
generations later), and when it ends.

Its state is kept with its group's (core/group/codec.py).
"""
from __future__ import annotations

from collections import deque

from . import records
from .storm_pattern import classify


class StormTracker:
    __slots__ = ("window_ms", "min_rebalances", "completions", "started_ms", "count_in_storm", "storms",
                 "summaries", "in_storm_summaries", "pattern")

    def __init__(self, window_ms: int, min_rebalances: int):
        self.window_ms = window_ms
        self.min_rebalances = max(1, min_rebalances)
        self.completions: deque[int] = deque()
        self.started_ms: int | None = None
        self.count_in_storm = 0
        self.storms = 0
        # storm_pattern.summarise() of each completion in `completions`, and of every generation of the running storm
        self.summaries: deque[dict | None] = deque()
        self.in_storm_summaries: list = []
        self.pattern: str | None = None  # the pattern the running storm's last record named

    @property
    def in_storm(self) -> bool:
        return self.started_ms is not None

    def _record(self, ended_ms: int | None) -> dict:
        pattern, detail = classify([s for s in self.in_storm_summaries if s is not None])
        self.pattern = pattern
        return records.storm(
            started_ms=self.started_ms, ended_ms=ended_ms,
            rebalances=self.count_in_storm if ended_ms is not None else len(self.completions),
            window_ms=self.window_ms, pattern=pattern, pattern_detail=detail)

    def end_deadline(self) -> int | None:
        """When the running storm ends if no further generation completes."""
        if self.started_ms is None:
            return None
        return self.completions[-self.min_rebalances] + self.window_ms

    def advance(self, now_ms: int) -> list[dict]:
        """Close the storm if its end time has passed; prune completions that left the window."""
        out = []
        end = self.end_deadline()
        if end is not None and now_ms >= end:
            out.append(self._record(end))
            self.started_ms = None
            self.count_in_storm = 0
            self.in_storm_summaries = []
            self.pattern = None
        horizon = now_ms - self.window_ms
        keep = self.min_rebalances if self.started_ms is not None else 0
        while len(self.completions) > keep and self.completions[0] <= horizon:
            self.completions.popleft()
            if self.summaries:
                self.summaries.popleft()
        return out

    def on_generation(self, completed_ms: int, summary: dict | None = None) -> list[dict]:
        """`summary`: storm_pattern.summarise() of the generation record (what the pattern rules read)."""
        out = self.advance(completed_ms)
        self.completions.append(completed_ms)
        self.summaries.append(summary)
        if self.started_ms is not None:
            self.count_in_storm += 1
            self.in_storm_summaries.append(summary)
            if classify([s for s in self.in_storm_summaries if s is not None])[0] != self.pattern:
                out.append(self._record(None))
        elif len(self.completions) >= self.min_rebalances:
            self.started_ms = completed_ms
            self.count_in_storm = len(self.completions)
            self.storms += 1
            self.in_storm_summaries = list(self.summaries)
            out.append(self._record(None))
        return out
