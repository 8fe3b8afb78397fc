"""What the group's clients report (instrumented consumers): join, sync, heartbeat, poll, leave, commit, and
the rebalance listener's revoked / lost.

Each handler is a function of (group, event, out): it updates the group and appends the records the event
produced to `out`. The causes are decided by the rules of `core/causes.py`. A join that only a broker's log
could have written (no protocols, topics or timeouts) is the coordinator's: see `coordinator_events.on_join`.
"""
from __future__ import annotations

from dataclasses import replace

from .. import causes as C, records
from ..events import Commit, Heartbeat, Join, Leave, Poll, Sync
from ..members import Member
from ..vocabulary import BROKER_ASSIGNED, TimeoutKind
from . import (coordinator_events, deadlines, group_config as GC, held, membership as M, rebalance as R,
               streams_topology, timers)
from .states import COMPLETING, STABLE


def on_join(g, ev: Join, out: list) -> None:
    if ev.member_id and coordinator_events.is_coordinator_join(ev):
        coordinator_events.on_join(g, ev, out)
        return
    g.client_feed = True  # the clients report: they know the membership
    g.membership_known = True
    if not ev.member_id:
        _on_join_without_id(g, ev, out)
        return
    ts = ev.ts
    existing = g.members.get(ev.member_id)
    cause = None
    reason = ev.reason
    own_host = None  # what its client calls its host, where the event names the address the broker saw
    if existing is None:
        twin = M.static_twin(g, ev)
        if twin is not None and C.static_restart_is_silent(g.rebalance is not None, g.state == STABLE,
                                                           twin.topics, ev.topics):
            M.replace_static(g, twin, ev)
            return
        matched = M.match_anonymous(g, ev) if twin is None else None
        answered = matched is not None
        own_host = matched.get("own_host") if matched else None
        found = C.cause_of_new_member(twin is not None, answered, ev.group_instance_id)
        if twin is not None:
            M.remove(g, twin.member_id, ts)
        if found is not None:
            cause = found.cause
            reason = reason or found.reason
    elif ev.group_protocol in BROKER_ASSIGNED and (existing.topics is None or set(existing.topics) == set(ev.topics)):
        # a KIP-848 member already in, told again (its record in `__consumer_offsets` after the log's line or
        # its client's event): the same join; KIP-848 members do not rejoin (a changed subscription is a cause)
        pass
    else:
        r = g.rebalance
        if C.rejoin_is_deferred(r is not None and r.generation is not None and ev.member_id in r.synced,
                                ev.reason, existing.topics, ev.topics, existing.protocols, ev.protocols):
            _defer_rejoin(g, existing, ev)
            return
        changed = existing.topics is not None and set(existing.topics) != set(ev.topics)
        cause = C.cause_of_rejoin(changed, ev.reason, ev.member_id == g.leader,
                                  joins_open_round=r is not None and r.generation is None)
    m = M.member(g, ev)
    if m is None:
        return
    if existing is None and own_host is not None:
        m.take_client_host(own_host)
    m.protocols = ev.protocols  # (before the session: a share member's is its family's)
    GC.take_streams(m, ev)  # (likewise a streams member's)
    if ev.group_protocol in BROKER_ASSIGNED:
        m.kip848 = True
        GC.apply_session(g, m)
    m.topics = ev.topics
    if ev.owned or m.owned == ():
        m.owned = ev.owned
    if ev.generation is not None:
        m.owned_generation = ev.generation
    elif ev.owned:
        m.owned_generation = m.sync_generation
    if ev.rack is not None:
        m.rack = ev.rack
    M.take_timeouts(m, ev)
    m.joined_ms = ts
    m.session_alive(ts)
    m.polled(ts)
    if cause is not None:
        R.trigger(g, cause, ts, out, who=m.describe(), reason=reason)
    r = g.rebalance
    if r is None:
        r = R.ensure(g, ts)
        r.trigger(ts)
    r.joined[m.member_id] = ts
    m.join_sent(ts)  # after the trigger: completing the previous round ends only earlier joins
    deadlines.lower(g, m)


def _on_join_without_id(g, ev: Join, out: list) -> None:
    """A client's first JoinGroup (no member id yet): a member joined; who it is shows under the id the
    coordinator gives it (see `membership.match_anonymous`). A static member's new instance is that member."""
    twin = M.static_twin(g, ev)
    if twin is not None:
        _static_rejoin(g, twin, ev, out)
        return
    who = {k: v for k, v in (("client_id", ev.client_id), ("host", ev.host)) if v is not None}
    r = g.rebalance
    if r is None or r.generation is not None:
        R.trigger(g, C.MEMBER_JOINED, ev.ts, out, who=who or None, reason=ev.reason)
        r = g.rebalance
    else:
        r.trigger(ev.ts)
        r.add_cause(C.MEMBER_JOINED, who or None, ev.reason)
    if r is not None:
        r.anonymous_joins.append([ev.client_id, ev.host, M.join_details(ev)])


def _defer_rejoin(g, m: Member, ev: Join) -> None:
    """A member that already synced the generation being completed sends a JoinGroup again, unprompted (see
    `causes.rejoin_is_deferred`): the coordinator answers it with that generation (no new round), so it neither
    ends the generation nor starts a rebalance here; the member waits on it until its next sync. Should a new
    generation answer it instead, the rejoin is that round's cause (see `on_sync`)."""
    if ev.owned:
        m.owned = ev.owned
    if ev.generation is not None:
        m.owned_generation = ev.generation
    M.take_timeouts(m, ev)
    m.joined_ms = ev.ts
    m.polled(ev.ts)
    m.join_sent(ev.ts, rejoin_cause=C.cause_of_deferred_rejoin(ev.member_id, _leader_of_round(g)))
    g.count("deferred_rejoins")


def _leader_of_round(g) -> str | None:
    r = g.rebalance
    return (r.leader if r is not None and r.leader else None) or g.leader


def _static_rejoin(g, twin: Member, ev: Join, out: list) -> None:
    """A static member's instance sent a JoinGroup without a member id (a restarted process) while the group
    still holds the instance. The coordinator keeps the instance's membership while it rejoins, and one that
    honours static membership hands it its assignment back without a rebalance (KIP-345): this is no trigger by
    itself. The member waits on its join until it syncs (under a new member id on Apache Kafka: see
    `membership.live_member`)."""
    found = C.cause_of_static_rejoin(twin.topics, ev.topics, ev.group_instance_id, ev.reason)
    twin.update_identity(ev)
    twin.protocols = ev.protocols
    twin.topics = ev.topics
    M.take_timeouts(twin, ev)
    twin.joined_ms = ev.ts
    twin.session_alive(ev.ts)
    twin.polled(ev.ts)
    g.count("static_rejoins")
    if found is not None:
        R.trigger(g, found.cause, ev.ts, out, who=twin.describe(), reason=found.reason)
    r = g.rebalance
    if r is not None and r.generation is None:
        r.joined[twin.member_id] = ev.ts  # a rebalance is under way: the instance joins it
        twin.join_sent(ev.ts)
    else:
        twin.join_sent(ev.ts, rejoin_cause=C.STATIC_MEMBER_REPLACED)


def on_sync(g, ev: Sync, out: list) -> None:
    g.client_feed = True
    g.membership_known = True
    m = M.live_member(g, ev)
    if m is None:
        return
    rejoined = (m.joining_ms, m.rejoin_cause) if m.rejoin_cause is not None else None
    m.session_alive(ev.ts)
    m.polled(ev.ts)
    m.join_done(ev.ts)
    deadlines.lower(g, m)
    if m.streams is not None and ev.active_tasks is not None:  # a streams member's tasks, as it holds them now
        m.streams = {**m.streams, "tasks_epoch": ev.generation, "tasks_state": ev.member_state, "tasks": {
            kind: [list(t) for t in (getattr(ev, f"{kind}_tasks") or ())] for kind in ("active", "standby", "warmup")}}
        streams_topology.note_tasks(g, m.member_id, m.streams.get("process_id"), m.streams["tasks"])
        streams_topology.own_task_partitions(g, m.owner_key, m.streams["tasks"]["active"])
    if ev.topic_ids:  # a share member's topics' ids (the simple assignor's tie-breaks follow them)
        g.topic_ids.update(ev.topic_ids)
    if ev.member_state not in (None, "stable"):
        # a KIP-848 member on its way to its epoch's target (revoking, or waiting for partitions others
        # still hold): alive, but its place in the epoch is proven by its next, stable, record
        return
    gen = ev.generation
    if g.generation is not None and gen <= g.generation:
        if gen == g.generation:  # a late sync or a replaced static member syncing the current generation
            m.sync_generation = gen
            m.assignment = ev.assignment
            held.late_sync(g, ev, out)
        return
    r = g.rebalance
    if rejoined is not None and r is not None and r.generation == gen and ev.member_id in r.synced:
        # its rejoin was answered with the generation it had synced already: nothing new for the round
        r.synced[ev.member_id] = ev.assignment
        m.sync_generation = gen
        m.assignment = ev.assignment
        return
    if r is not None and r.generation is not None and gen > r.generation:
        r = R.complete_before_next(g, r, r.last_sync_ms or r.formed_ms, out)
    if r is None:
        r = R.ensure(g, None)
    if rejoined is not None:
        at, cause = rejoined
        found = C.cause_of_answered_rejoin(cause, r.causes, m.group_instance_id)
        if found is not None:
            r.trigger(at)
            r.add_cause(found.cause, m.describe(), found.reason)
    if r.generation is None:
        r.generation = gen
    r.protocol = ev.protocol or r.protocol
    r.leader = ev.leader or r.leader
    r.synced[ev.member_id] = ev.assignment
    if r.formed_ms is None:
        r.formed_ms = ev.ts
    if r.last_sync_ms is None or ev.ts > r.last_sync_ms:
        r.last_sync_ms = ev.ts
    m.sync_generation = gen
    m.assignment = ev.assignment
    g.state = COMPLETING
    R.maybe_complete(g, out)


def on_heartbeat(g, ev: Heartbeat, out: list) -> None:
    g.client_feed = True
    g.membership_known = True
    m = M.live_member(g, ev)
    if m is None:
        return
    first = not m.hb_tracked
    m.hb_tracked = True
    m.session_alive(ev.ts)
    if first:
        deadlines.lower(g, m)
    err = ev.error
    if err is None:
        r = g.rebalance
        if r is not None and r.generation is not None and ev.generation == r.generation \
                and ev.member_id not in r.synced:
            r.synced[ev.member_id] = None  # a heartbeat on the new generation proves the member synced it
            R.maybe_complete(g, out)
        elif m.sync_generation is None and ev.generation >= 0:
            m.sync_generation = ev.generation
    elif err == "REBALANCE_IN_PROGRESS":
        found = C.cause_of_heartbeat_error(err, rebalancing=g.rebalance is not None)
        if found is not None:
            R.trigger(g, found.cause, ev.ts, out, reason=found.reason)
    elif err == "UNKNOWN_MEMBER_ID":
        M.remove(g, ev.member_id, ev.ts)
        found = C.cause_of_heartbeat_error(err, rebalancing=g.rebalance is not None)
        R.trigger(g, found.cause, ev.ts, out, who=m.describe(), reason=found.reason)
    elif err == "FENCED_INSTANCE_ID":
        M.remove(g, ev.member_id, ev.ts)
        g.count("fenced_members")
    elif C.error_means_coordinator_moved(err):
        g.coordinator_change_ms = ev.ts


def on_poll(g, ev: Poll, out: list) -> None:
    m = M.live_member(g, ev)
    if m is None:
        return
    first = not m.poll_tracked
    m.poll_tracked = True
    m.polled(ev.ts)
    if first:
        deadlines.lower(g, m)


def on_leave(g, ev: Leave, out: list) -> None:
    g.client_feed = True
    g.membership_known = True
    cause = C.cause_of_leave(ev.reason)
    if not ev.member_id:  # a source that cannot name the member (a Java client's metrics reporter)
        m = M.by_client(g, ev.client_id, ev.host)
        if m is None:
            g.count("unmatched_leaves")
            return
        ev = replace(ev, member_id=m.member_id)
    m = g.members.get(ev.member_id)
    if m is None:
        if ev.member_id in g.removed:
            return  # already removed (e.g. our poll timer fired before its leave arrived)
        who = {"member_id": ev.member_id}
        if ev.client_id:
            who["client_id"] = ev.client_id
        if ev.host:
            who["host"] = ev.host
        R.trigger(g, cause, ev.ts, out, who=who, reason=ev.reason)
        return
    m.update_identity(ev)
    if ev.source is not None and g.coordinator_feed and cause != C.POLL_TIMEOUT:
        # A Java client's telemetry says it closed. Whether it also left the group (a LeaveGroup) or closed without
        # leaving (Kafka Streams' default, a static member), the coordinator's view tells: the member stays until
        # the coordinator drops it (causes.cause_of_closed_departure) or its own session deadline passes.
        m.closed_ms = ev.ts
        return
    if cause == C.POLL_TIMEOUT:  # the client's heartbeat thread left for it: its poll interval expired
        deadline = m.poll_deadline() or ev.ts
        timers.timeout(g, m, TimeoutKind.POLL, min(deadline, ev.ts), ev.ts, out, reason=ev.reason)
        deadlines.recompute(g)
        return
    M.remove(g, ev.member_id, ev.ts)
    deadlines.recompute(g)
    R.trigger(g, cause, ev.ts, out, who=m.describe(), reason=ev.reason)


def on_commit(g, ev: Commit, out: list) -> None:
    committed(g, ev.ts, ev.member_id, ev.offsets, out)


def committed(g, ts: int, member_id: str, offsets, out: list) -> None:
    """`on_commit` from the commit's fields (`GroupMonitor.process_commit` has no event object)."""
    out.append(records.offsets_committed(g.group, ts, member_id=member_id or None, offsets=offsets))
    if not member_id and g.owners:
        # `__consumer_offsets` names no committer: the commit is a sign of life of the partitions' owner
        owners = {g.owners.get((tp[0], tp[1])) for tp in offsets}
        for m in g.members.values():
            if m.owner_key in owners and (m.last_commit_ms is None or ts > m.last_commit_ms):
                m.last_commit_ms = ts


def on_revoked(g, ev, out: list) -> None:
    """The rebalance listener ran (partitions revoked or lost): the member is polling."""
    m = g.members.get(ev.member_id)
    if m is not None:
        m.polled(ev.ts)
