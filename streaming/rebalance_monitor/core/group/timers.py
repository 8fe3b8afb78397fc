"""The group's timers on event time: member deadlines, the settle timer of a formed generation, a storm's end.

A member's session and poll deadlines are `Member.session_deadline` / `poll_deadline`; the group's cached
lower bound of the earliest of them (`g.timer_ms`) is kept by `deadlines.py`. The bound may be stale (too
early): firing checks each member's real deadline (`expire_members`).

`fire(g, limit, ...)` runs every timer due before `limit` (or at it, `inclusive`) in time order: an expired
member is removed with a `member_timeout` record and triggers a rebalance (`timeout`); a generation that formed
but was never proven complete is completed `settle_ms` after it formed; a storm ends. The caller owns the clock
(see `GroupMonitor.process` and `advance_to`). A generation record held for its members' late syncs
(`held.py`) goes out at the end of its settle window with what is known.
"""
from __future__ import annotations

from .. import causes as C, records
from ..members import Member, warn_at
from ..vocabulary import TimeoutKind
from . import deadlines, held, membership, rebalance


def fire(g, limit: int, out: list, inclusive: bool) -> None:
    """Fire, earliest first, every timer due before `limit` (at or before it when `inclusive`)."""
    if g.rebalance is None and g.held is None and g.storm.started_ms is None:
        # the common case: only member deadlines can be due (`earliest_due`), and none is
        at = g.timer_ms
        if at is None or at > limit or (at == limit and not inclusive):
            return
    while True:
        due = earliest_due(g)
        if due is None:
            return
        at, what = due
        if at > limit or (at == limit and not inclusive):
            return
        if what == "member":
            expire_members(g, at, limit, out)
        elif what == "settle":
            rebalance.complete(g, g.rebalance.last_sync_ms or at, out, settled_at=at)
        elif what == "storm":
            for rec in g.storm.advance(at):
                out.append(rebalance.stamp(g, rec, at))
        elif what == "held":
            held.release(g, out)


def earliest_due(g) -> tuple[int, str] | None:
    """(time, "member" | "settle" | "storm" | "held") of the earliest timer, or None. (Only "member" without a
    rebalance, a held record or a storm: `fire` and `GroupMonitor.next_timer_ms` take that shortcut.)"""
    best = None
    if g.timer_ms is not None:
        best = (g.timer_ms, "member")
    if g.rebalance is not None:
        sd = g.rebalance.settle_deadline(g.settings.settle_ms)
        if sd is not None and (best is None or sd < best[0]):
            best = (sd, "settle")
    se = g.storm.end_deadline()
    if se is not None and (best is None or se < best[0]):
        best = (se, "storm")
    if g.held is not None and (best is None or g.held["until"] < best[0]):
        best = (g.held["until"], "held")
    return best


def expire_members(g, at: int, detected: int, out: list) -> None:
    """Fire the member deadlines that are really due at `at` (the cached bound may be stale), as noticed at
    `detected`; the early warnings due by then first."""
    if g.settings.early_warning_pct:
        warn_members(g, at, detected, out)
    expired = []
    for m in g.members.values():
        s = m.session_deadline()
        p = m.poll_deadline()
        delay = m.report_delay_ms or 0  # a member known by snapshots: its evidence may come that late
        if s is not None and s + delay <= at:
            expired.append((s, TimeoutKind.SESSION, m))
        elif p is not None and p + delay <= at:
            expired.append((p, TimeoutKind.POLL, m))
    expired.sort(key=lambda x: (x[0], x[2].member_id))
    for deadline, kind, m in expired:
        timeout(g, m, kind, deadline, detected, out)
    deadlines.recompute(g)


def warn_members(g, at: int, detected: int, out: list) -> None:
    """A `member_at_risk` record for each member whose early-warning point (`Member.warn_points`, plus its report
    delay) passed after the last one given (`g.warned_to`, which moves only when one is given: the fast path of
    `process_beat` then leaves the same state) and by `at`, its deadline not yet passed."""
    since, pct = g.warned_to, g.settings.early_warning_pct
    due = []
    for m in g.members.values():
        delay = m.report_delay_ms or 0
        for point in m.warn_points(pct):
            if point is None:
                continue
            kind, when, deadline, limit = point
            if since < when + delay <= at < deadline + delay:
                due.append((when, kind, m, deadline, limit))
    due.sort(key=lambda x: (x[0], x[2].member_id, x[1]))
    for when, kind, m, deadline, limit in due:
        out.append(records.member_at_risk(
            g.group, detected, member_id=m.member_id, risk=kind,
            last_seen_ms=m.last_heartbeat_ms if kind == TimeoutKind.SESSION else m.last_poll_ms,
            warn_ms=when, deadline_ms=deadline, limit_ms=limit,
            identity=m.identity(kind)))
        g.count(f"at_risk_{kind}")
        g.warned_to = max(g.warned_to, when + (m.report_delay_ms or 0))


def at_risk_now(g, now: int) -> list[list[str]]:
    """[member id, risk] of each member at risk at `now`: past its early-warning point (plus its report delay) and
    not past that deadline (the span in which `warn_members` gives its `member_at_risk` record), sorted. A member
    heard from again, or gone, is no longer in it: `group_status` carries it (metrics/risk_families.py)."""
    pct = g.settings.early_warning_pct
    if not pct:
        return []
    out = []
    for m in g.members.values():  # (Member.warn_points, written out: every group_status record runs it)
        delay = m.report_delay_ms or 0
        s = m.session_deadline()
        if s is not None and warn_at(s, m.session_timeout_ms, pct) + delay <= now < s + delay:
            out.append([m.member_id, "session"])
        p = m.poll_deadline()
        if p is not None and warn_at(p, m.rebalance_timeout_ms, pct) + delay <= now < p + delay:
            out.append([m.member_id, "poll"])
    out.sort()
    return out


def timeout(g, m: Member, kind: str, deadline: int, detected: int, out: list, trigger: bool = True,
            reason: str | None = None) -> None:
    """Member `m`'s `kind` ("session" or "poll") deadline passed at `deadline`, noticed at `detected`: a
    `member_timeout` record, the member removed, and (if `trigger`) a rebalance for it. `reason`: what the
    coordinator or client reported, when they did."""
    last_seen = m.last_heartbeat_ms if kind == TimeoutKind.SESSION else m.last_poll_ms
    out.append(records.member_timeout(
        g.group, detected, member_id=m.member_id, timeout=kind, last_seen_ms=last_seen, deadline_ms=deadline,
        identity=m.identity(kind)))
    g.count(f"timeouts_{kind}")
    found = C.cause_of_timeout(kind, m.session_timeout_ms if kind == TimeoutKind.SESSION else m.rebalance_timeout_ms, reason)
    membership.remove(g, m.member_id, deadline)
    if trigger:
        rebalance.trigger(g, found.cause, deadline, out, who=m.describe(), reason=found.reason)
