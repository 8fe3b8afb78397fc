"""A member's own clocks, as its client measures them: the `client_metrics` snapshots of Java consumers (pushed to
the broker under KIP-714 and forwarded by the broker plugin, or sent by the metrics reporter in the client).

A snapshot is no heartbeat and no poll: it says when the last ones were, at the snapshot's time. "Last heartbeat
N ms ago" at `ts` is a heartbeat at `ts - N`, and a gap of at least N ms open at `ts` (the heartbeat gap ratio
takes it; the gaps between two snapshots are not heartbeat gaps, since the heartbeats in between are not shown).
From the first snapshot that carries them, the member's session and poll deadlines run on this evidence, with the
timeouts the coordinator records for it (its max.poll.interval.ms is the rebalance timeout) or, where the source
knows the client's configuration, those it states. The evidence comes a period late at most, so a deadline is
concluded passed only `report_delay` after it (the `member_timeout` record still names the deadline itself).
Neither clock goes back before the member joined (a rejoined client's clocks still tell of its previous member id).

A snapshot that cannot name its member (`member_id` ""; a reporter cannot see it) belongs to the one live member
with the same client id (and host, when both are known); with none or several, it is counted and left. A snapshot
with neither a heartbeat nor a poll clock (librdkafka's pushes: KIP-714's standard metrics only, the member id in
them or not) is evidence of nothing about a member: its standard metrics are the client's own (`client_standard.py`).
"""
from __future__ import annotations

from ..events import ClientMetrics
from ..members import Member
from . import client_standard, deadlines, membership as M

DEFAULT_INTERVAL_MS = 10_000


def on_client_metrics(g, ev: ClientMetrics, out: list) -> None:
    client_standard.take(g, ev)
    if not client_standard.has_clocks(ev):
        return  # the client's standard metrics alone: nothing of a member's heartbeats or polls
    m = _member_of(g, ev)
    if m is None:
        return
    M.set_timeouts(m, ev.session_timeout_ms, ev.rebalance_timeout_ms, None)  # (a KIP-848 member's: the group's)
    m.report_delay_ms = report_delay(ev.interval_ms)
    ago = ev.last_heartbeat_ms_ago
    if ago is not None and 0 <= ago <= ev.ts:
        m.hb_tracked = True
        at = _not_before_join(m, ev.ts - ago)
        m.heartbeat_snapshot(at, ev.ts - at, ev.ts)
    ago = ev.last_poll_ms_ago
    if ago is not None and 0 <= ago <= ev.ts:
        m.poll_tracked = True
        m.polled(_not_before_join(m, ev.ts - ago))
        if ev.ts > m.last_seen_ms:
            m.last_seen_ms = ev.ts
    deadlines.recompute(g)  # a deadline may have moved earlier (first evidence, a stated timeout) or later


def _not_before_join(m: Member, at: int) -> int:
    """The clocks are the client's, not the member id's: a client that rejoins under a new member id (after a poll
    timeout, as a rule) reports the last heartbeat and poll of its previous id until it makes new ones. The
    member's join (it joined from poll(), and the coordinator heard from it then) is the earliest either can be."""
    if m.joined_ms is not None and at < m.joined_ms:
        return m.joined_ms
    return at


def report_delay(interval_ms: int | None) -> int:
    """How late the next snapshot may come: one and a half periods (a push is timed by the client), the longest
    period a subscription should ask for (10 s) when the source does not say."""
    period = interval_ms if interval_ms is not None and interval_ms > 0 else DEFAULT_INTERVAL_MS
    return period + period // 2


def _member_of(g, ev: ClientMetrics) -> Member | None:
    if ev.member_id:
        return M.live_member(g, ev)
    found = M.by_client(g, ev.client_id, ev.host)
    if found is None:
        g.count("unmatched_client_metrics")
        return None
    found.update_identity(ev)
    return found
