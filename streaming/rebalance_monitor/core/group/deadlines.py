"""The cached lower bound of a group's earliest member deadline (`g.timer_ms`), so that most events check one
number: `lower` when a member's deadline may have moved earlier, `recompute` when one may have gone or moved
later. Firing the deadlines is `timers.py`'s; this module imports nothing of the group's, so the rebalance and
event handlers can keep the bound without importing the timers that call them.
"""
from __future__ import annotations

from ..members import Member


def recompute(g) -> None:
    """The cached bound, from every member's deadlines (after one may have gone or moved later)."""
    best = None
    pct, warned = g.settings.early_warning_pct, g.warned_to
    for m in g.members.values():
        d = m.next_due(pct, warned)
        if d is not None and (best is None or d < best):
            best = d
    g.timer_ms = best


def lower(g, m: Member) -> None:
    """The cached bound, after member `m`'s deadline may have moved earlier."""
    d = m.next_due(g.settings.early_warning_pct, g.warned_to)
    if d is not None and (g.timer_ms is None or d < g.timer_ms):
        g.timer_ms = d
