"""What the group coordinator reports (its log lines, `__consumer_offsets`, or an adapter): a member added,
rebalance_started, member_removed, generation_completed with its member list, group_empty, group_deleted; and
what concerns the group from the cluster: coordinator_change, topic_partitions, end_offsets.

Each handler is a function of (group, event, out), like those of `client_events`. When both feeds exist for a
group, coordinator facts win: a generation completes on the coordinator's word, enriched with the clients'
assignments, client ids and hosts. The causes are decided by the rules of `core/causes.py`.
"""
from __future__ import annotations

from .. import causes as C, records
from ..events import (
    CoordinatorChange, EndOffsets, GenerationCompleted, GroupDeleted, GroupEmpty, Join, MemberRemoved,
    RebalanceStarted, TopicPartitions,
)
from ..members import Member
from ..vocabulary import BROKER_ASSIGNED, TimeoutKind
from . import deadlines, group_config as GC, membership as M, rebalance as R, streams_topology, timers
from .states import COMPLETING, DEAD, STABLE

SNAPSHOT_RESOLUTION_MS = 1000  # Java clients' snapshots count whole seconds (contract: client_metrics)


def is_coordinator_join(ev: Join) -> bool:
    """A join reported by the coordinator's log (no protocols, topics, owned partitions or timeouts: a client
    always sends its subscription)."""
    return not ev.protocols and not ev.topics and not ev.owned and ev.session_timeout_ms is None \
        and ev.rebalance_timeout_ms is None


def on_join(g, ev: Join, out: list) -> None:
    """A broker's log says the coordinator added member M to the group (it names no protocols, topics or
    timeouts). Idempotent: the coordinator may say so twice (the member's own line and the rebalance reason); a
    member already known only shows a sign of life. The log names members as they come and go, so the
    membership is not taken as complete."""
    g.coordinator_feed = True
    m = g.members.get(ev.member_id)
    if m is not None:
        m.update_identity(ev)
        m.session_alive(ev.ts)
        return
    twin = M.static_twin(g, ev)
    # its client's id-less join, read before: what it declared is this member's
    answered = M.match_coordinator_join(g, ev.member_id, ev.group_instance_id, ev.group_protocol in BROKER_ASSIGNED) \
        if g.client_feed and twin is None else None
    client_id, host = (ev.client_id or answered[0], ev.host or answered[1]) if answered else (ev.client_id, ev.host)
    who = {"member_id": ev.member_id}
    who.update({k: v for k, v in (("client_id", client_id), ("host", host)) if v is not None})
    found = C.cause_of_new_member(twin is not None, False)
    # first the trigger (it completes a generation that formed before this member came), then the member; the
    # log line gives its own reason
    R.trigger(g, found.cause, ev.ts, out, who=who, reason=ev.reason)
    if twin is not None:
        M.remove(g, twin.member_id, ev.ts)
    m = M.member(g, ev)
    if m is None:
        return
    if answered is not None:
        m.client_id = m.client_id or client_id
        m.host = m.host or host
        m.take_client_host(answered[1])
        M.adopt_anonymous_join(g, m, answered[2] if len(answered) > 2 and answered[2] else {})
    GC.take_streams(m, ev)
    if ev.group_protocol in BROKER_ASSIGNED:
        m.kip848 = True  # a KIP-848 log line: the member stays in every group epoch until it goes
        GC.apply_session(g, m)
    m.joined_ms = ev.ts
    m.session_alive(ev.ts)
    r = g.rebalance
    if r is not None:
        r.joined[m.member_id] = ev.ts


# Rebalance causes whose member is rejoining: it is in the group and stays in the generation being formed.
REJOIN_CAUSES = (C.LEADER_REJOIN, C.SUBSCRIPTION_CHANGE)


def on_rebalance_started(g, ev: RebalanceStarted, out: list) -> None:
    g.coordinator_feed = True
    streams_topology.before_epoch(g, ev.generation + 1)  # (a streams group's: what its members hold now)
    streams_cause = streams_topology.bump_cause(g, ev.metadata_hash, ev.topology_epoch) \
        if g.streams_state is not None else None
    if g.generation is None and ev.generation >= 0:
        g.generation = ev.generation
    r = g.rebalance
    newest = r.generation if r is not None and r.generation is not None else g.generation
    if 0 <= ev.generation and newest is not None and ev.generation < newest and not ev.member_id:
        # a round already known to have formed a later generation: a second input's word on it (the log and
        # `__consumer_offsets` both say `group epoch bumped to E`), not the next round
        g.count("known_rounds")
        return
    who = None
    if ev.member_id:
        m = g.members.get(ev.member_id)
        who = m.describe() if m is not None else {"member_id": ev.member_id}
    cause, reason = C.cause_of_coordinator_rebalance(ev.reason), ev.reason
    if streams_cause is not None and cause == C.UNKNOWN:  # (a line that says why keeps its own words)
        cause, reason = streams_cause
    R.trigger(g, cause, ev.ts, out, who=who, reason=reason)
    if ev.member_id and cause in REJOIN_CAUSES and not g.client_feed and ev.member_id not in g.members \
            and ev.member_id not in g.removed:
        # Broker log lines only, which started after this member joined (a Kafka Connect worker's `Updating
        # metadata for member M`, a Streams leader's `Leader M re-joining`): its rejoin makes it a member
        m = M.create(g, ev.member_id, ev.ts)
        if m is not None:
            m.session_alive(ev.ts)
            r = g.rebalance
            if r is not None:
                r.joined[m.member_id] = ev.ts


def on_member_removed(g, ev: MemberRemoved, out: list) -> None:
    g.coordinator_feed = True
    cause = C.cause_of_removal(ev.cause)
    if C.removal_is_silent_static_restart(cause, g.rebalance is not None, g.state == STABLE, g.client_feed):
        g.count("static_replacements")
        return
    m = g.members.get(ev.member_id)
    if m is None:
        if ev.member_id in g.removed:
            return
        m = Member(ev.member_id)  # not in the group: only to name it
    m.update_identity(ev)
    if cause == C.SESSION_TIMEOUT and m.member_id in g.members:
        deadline = m.session_deadline() or ev.ts
        timers.timeout(g, m, TimeoutKind.SESSION, min(deadline, ev.ts), ev.ts, out, trigger=False, reason=ev.reason)
    elif cause == C.POLL_TIMEOUT and m.member_id in g.members:
        deadline = m.poll_deadline() or ev.ts
        timers.timeout(g, m, TimeoutKind.POLL, min(deadline, ev.ts), ev.ts, out, trigger=False, reason=ev.reason)
    else:
        known = m.member_id in g.members
        M.remove(g, ev.member_id, ev.ts)
        if known:  # a KIP-848 member's record deleted in __consumer_offsets, for no reason it says
            cause, who, reason = _departure(g, m, cause, ev.reason, ev.ts, None, out)
            deadlines.recompute(g)
            R.trigger(g, cause, ev.ts, out, who=who, reason=reason)
            return
    deadlines.recompute(g)
    R.trigger(g, cause, ev.ts, out, who=m.describe(), reason=ev.reason)


def on_generation_completed(g, ev: GenerationCompleted, out: list) -> None:
    g.coordinator_feed = True
    gen = ev.generation
    if g.generation is not None and gen <= g.generation:
        if gen < g.generation:  # the same generation twice: two log lines proving one generation
            g.count("stale_generations")
        return
    r = g.rebalance
    if r is not None and r.generation is not None and gen > r.generation:
        R.complete(g, r.last_sync_ms or r.formed_ms, out)
        r = None
    if r is None:
        r = R.ensure(g, None)
    if not ev.members and R.emptied(g, r):
        # the epoch bumped for the last member's departure (a KIP-848 group's records in `__consumer_offsets`)
        R.complete_empty(g, gen, ev.ts, out)
        R.go_empty(g)
        return
    r.generation = gen
    r.protocol = ev.protocol or r.protocol
    r.leader = ev.leader or r.leader
    r.coordinator_confirmed = True
    if r.formed_ms is None or ev.ts < r.formed_ms:
        r.formed_ms = ev.ts
    if r.last_sync_ms is None or ev.ts > r.last_sync_ms:
        r.last_sync_ms = ev.ts
    if ev.members is not None:
        _take_member_list(g, r, ev, gen, out)
    g.state = COMPLETING
    R.maybe_complete(g, out)
    if g.rebalance is r and R.coordinator_completes(g, r):
        R.complete(g, ev.ts, out)


def _take_member_list(g, r: R.Rebalance, ev: GenerationCompleted, gen: int, out: list) -> None:
    """The coordinator listed the generation's members: the group is those; the ones it dropped or added
    unseen are causes of the round."""
    g.membership_known = True
    previous = set(g.members)
    r.coordinator_members = [M.apply_member_info(g, info, ev.ts, gen) for info in ev.members]
    listed = {i["member_id"] for i in r.coordinator_members}
    for cause in r.causes:  # causes named before the list (the log names members by id alone) get their identity
        m = g.members.get(cause.get("member_id")) if cause.get("member_id") in listed else None
        if m is not None:
            for k, v in m.describe().items():
                cause.setdefault(k, v)
    for mid, cause, reason in C.causes_of_member_list(previous, listed, r.joined, gen):
        if cause == C.MEMBER_JOINED:
            m = g.members.get(mid)
            if m is not None:
                # its client's id-less join of this round (KIP-394), read before: the same member, one cause
                answered = M.match_coordinator_join(g, mid, m.group_instance_id, m.kip848) \
                    if r.anonymous_joins else None
                if answered is not None:
                    m.take_client_host(answered[1])
                r.add_cause(cause, m.describe(), reason)
        elif mid in g.members:
            m = g.members[mid]
            # a member known by snapshots is concluded timed out a report delay late: the coordinator may drop it
            # first, and then its deadline, passed already, is why
            kind = C.timeout_of_absent_member(m.session_deadline(), m.poll_deadline(), ev.ts,
                                              SNAPSHOT_RESOLUTION_MS if m.report_delay_ms else 0)
            if kind is not None:
                deadline = m.session_deadline() if kind == TimeoutKind.SESSION else m.poll_deadline()
                timers.timeout(g, m, kind, min(deadline, ev.ts), ev.ts, out, trigger=False)
                found = C.cause_of_timeout(kind, m.session_timeout_ms if kind == TimeoutKind.SESSION
                                           else m.rebalance_timeout_ms)
                r.add_cause(found.cause, m.describe(), found.reason)
                continue
            gone = M.remove(g, mid, ev.ts)
            r.add_cause(*_departure(g, gone, cause, reason, ev.ts, gen, out))
    deadlines.recompute(g)


def _departure(g, gone: Member, cause: str, reason: str | None, ts: int, gen: int | None,
               out: list) -> tuple[str, dict, str | None]:
    """A member went, for `cause`. When the coordinator did not say why (`unknown`): a Java member's telemetry tells
    (its terminating push, causes.cause_of_closed_departure; without one, its silence, cause_of_silent_departure);
    a member no client reports on, the commits of its partitions in `__consumer_offsets`
    (causes.cause_of_departure). An inferred cause is marked `cause_source: inferred`, with its evidence as the
    reason; an inferred timeout is counted and reported as a `member_timeout` record marked alike. Returns
    (cause, who, reason) for the rebalance."""
    who = gone.describe()
    if gone.closed_ms is not None and cause in (C.UNKNOWN, C.MEMBER_LEFT):
        session = gone.session_timeout_ms or (GC.member_session(g, gone)[0] if gone.kip848 else None)
        found = C.cause_of_closed_departure(gone.closed_ms, ts, session)
        if found.cause == C.SESSION_TIMEOUT:
            rec = records.member_timeout(
                g.group, ts, member_id=gone.member_id, timeout=TimeoutKind.SESSION, last_seen_ms=gone.last_heartbeat_ms,
                deadline_ms=(gone.last_heartbeat_ms or gone.closed_ms) + session,
                identity=gone.identity(TimeoutKind.SESSION))
            out.append(rec)
            g.count("timeouts_session")
            who["timeout_source"] = gone.session_source()
        return found.cause, who, found.reason
    if cause != C.UNKNOWN:
        return cause, who, reason
    if gone.kip848:  # the group's, as its coordinator applies it (the broker's, else the settings' fallback)
        GC.apply_session(g, gone)
    session = gone.session_timeout_ms
    if gone.report_delay_ms is not None:
        # a Java member known by its telemetry snapshots, gone without its terminating push: its silence tells
        found = C.cause_of_silent_departure(gone.last_seen_ms, ts, session, gen)
        last_seen = gone.last_seen_ms
    elif g.client_feed and (gone.hb_tracked or gone.poll_tracked):
        return cause, who, reason  # (a KIP-848 member's records in __consumer_offsets read as its joins and syncs)
    else:
        found = C.cause_of_departure(gone.last_commit_ms, ts, session, gone.rebalance_timeout_ms, gen)
        last_seen = gone.last_commit_ms
    if found.cause != C.UNKNOWN:
        who["cause_source"] = C.INFERRED
    if found.cause == C.SESSION_TIMEOUT:
        who["timeout_source"] = gone.session_source()
    if found.cause in (C.SESSION_TIMEOUT, C.POLL_TIMEOUT):
        kind = TimeoutKind.SESSION if found.cause == C.SESSION_TIMEOUT else TimeoutKind.POLL
        limit = session if kind == TimeoutKind.SESSION else gone.rebalance_timeout_ms
        rec = records.member_timeout(
            g.group, ts, member_id=gone.member_id, timeout=kind, last_seen_ms=last_seen,
            deadline_ms=last_seen + limit,
            identity=gone.identity(kind))
        rec["cause_source"] = C.INFERRED
        out.append(rec)
        g.count(f"timeouts_{kind}")
        g.count("timeouts_inferred")
    return found.cause, who, found.reason


def on_group_empty(g, ev: GroupEmpty, out: list) -> None:
    g.coordinator_feed = True
    if any(m.kip848 for m in g.members.values()):
        # The KIP-848 log's `Bumped group epoch to E with metadata hash 0` reads as empty, but the hash is also 0
        # while members are there whose topics do not exist yet. That log names every member that comes and
        # goes (joins, leaves, fencing), so with one still in, the epoch is a rebalance.
        g.count("empty_epoch_with_members")
        on_rebalance_started(g, RebalanceStarted(
            "rebalance_started", ev.ts, ev.group, generation=max(ev.generation - 1, 0),
            reason=f"group epoch bumped to {ev.generation} (no subscribed topic metadata yet)"), out)
        return
    for mid in list(g.members):
        gone = M.remove(g, mid, ev.ts)
        if gone is not None:
            # its last member went: unexplained from the coordinator (`__consumer_offsets`: the group's list is
            # empty), the commits of its partitions may tell a timeout (counted, a `member_timeout` record)
            cause, who, why = (_departure(g, gone, C.UNKNOWN, None, ev.ts, None, out) if not g.client_feed
                               else (C.MEMBER_LEFT, gone.describe(), None))
            R.ensure(g, ev.ts).add_cause(cause, who, why)
    # the generation Kafka bumped for the group going empty: a record naming who left (when a round was open)
    if ev.generation >= 0 and not R.complete_empty(g, ev.generation, ev.ts, out):
        g.generation = max(ev.generation, g.generation or 0)
    R.go_empty(g)


def on_group_deleted(g, ev: GroupDeleted, out: list) -> None:
    for mid in list(g.members):
        M.remove(g, mid, ev.ts)
    g.rebalance = None
    g.state = DEAD
    g.timer_ms = None
    g.owners.clear()
    out.append(records.group_deleted(g.group, ev.ts))


def on_coordinator_change(g, ev: CoordinatorChange, out: list) -> None:
    if ev.action == "elected":
        g.coordinator_change_ms = ev.ts
    out.append(records.coordinator(g.group, ev.ts, partition=ev.partition, broker=ev.broker, action=ev.action))


def on_topic_partitions(g, ev: TopicPartitions, out: list) -> None:
    subscribed = set()
    for m in g.members.values():
        if m.topics:
            subscribed.update(m.topics)
    found = C.cause_of_partition_counts(g.partitions, ev.topics, subscribed, g.state == STABLE)
    g.partitions.update(ev.topics)
    if found is not None:
        R.trigger(g, found.cause, ev.ts, out, reason=found.reason)


def on_share_partitions(g, ev, out: list) -> None:
    """A share group's initialised partitions (the coordinator's state record): what its assignor may hand out."""
    init: dict = {}
    for t, p in ev.initialized:
        init.setdefault(t, []).append(int(p))
    g.share_initialized = {t: sorted(ps) for t, ps in init.items()}


def on_broker_release(g, ev, out: list) -> None:
    """The brokers' release, learned (its server assignors' rules follow it; core/expected.py)."""
    take_release(g, ev)


def take_release(g, ev) -> None:
    """A `broker_release` event: a log line's release (exact) always; an ApiVersions guess only while no log line
    has named one (g.broker_release_exact)."""
    exact = ev.source is None
    if exact or not g.broker_release_exact:
        g.broker_release = ev.release or None
        g.broker_release_exact = g.broker_release_exact or (exact and g.broker_release is not None)


def on_end_offsets(g, ev: EndOffsets, out: list) -> None:
    out.append(records.end_offsets(g.group, ev.ts, offsets=ev.offsets))
