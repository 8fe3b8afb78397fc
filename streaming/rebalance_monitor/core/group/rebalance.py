"""A rebalance, from its first trigger to the generation record it completes with.

`Rebalance` is one rebalance in progress: its triggers and causes, who joined, who synced which generation. The
functions over the group move it through its life: `trigger` starts one (or joins a trigger into the one under
way, or completes a formed generation first when the trigger belongs to the next round), `maybe_complete`
checks whether the generation is proven, and `complete` emits the `generation` record and makes the group
Stable on it. Causes are added here but decided in `core/causes.py`.
"""
from __future__ import annotations

from typing import Collection

from .. import causes as C, records
from ..expected import declared_server_assignor, elect_protocol, judge_generation, streams_members
from ..storm_pattern import summarise
from . import deadlines, group_config, group_type, held, membership, streams_topology
from .states import EMPTY, PREPARING, STABLE


class Rebalance:
    """One rebalance in progress (times are event-time milliseconds)."""

    __slots__ = (
        "started_ms", "from_generation", "causes", "joined", "anonymous_joins", "synced", "generation",
        "protocol", "leader", "formed_ms", "last_sync_ms", "coordinator_members", "coordinator_confirmed",
        "announced",
    )

    def __init__(self, started_ms: int | None, from_generation: int | None):
        self.started_ms = started_ms  # the earliest trigger
        self.from_generation = from_generation  # the generation the group was on
        self.causes: list[dict] = []  # see causes.add_cause
        self.joined: dict[str, int] = {}  # member id -> join time, for members that (re)joined this round
        self.anonymous_joins: list[list] = []  # [client_id, host, details] of joins sent before a member id was assigned
        self.synced: dict[str, tuple | None] = {}  # member id -> assignment (None: synced, assignment unknown)
        self.generation: int | None = None  # the generation this rebalance formed, once known
        self.protocol: str | None = None
        self.leader: str | None = None
        self.formed_ms: int | None = None  # first evidence that the generation formed
        self.last_sync_ms: int | None = None
        self.coordinator_members: list | None = None  # [{member_id, assignment?}] as the coordinator listed them
        self.coordinator_confirmed = False  # the coordinator said the generation formed
        self.announced = False  # rebalance_started record emitted

    def trigger(self, at_ms: int | None) -> None:
        if at_ms is not None and (self.started_ms is None or at_ms < self.started_ms):
            self.started_ms = at_ms

    def add_cause(self, cause: str, who: dict | None = None, reason: str | None = None) -> None:
        C.add_cause(self.causes, cause, who, reason)

    def final_causes(self) -> list[dict]:
        return C.final_causes(self.causes)

    def expected_ids(self) -> set[str] | None:
        if self.coordinator_members is not None:
            return {m["member_id"] for m in self.coordinator_members}
        return None

    def settle_deadline(self, settle_ms: int) -> int | None:
        if self.formed_ms is None:
            return None
        return self.formed_ms + settle_ms


def proven_whole(r: Rebalance) -> bool:
    """The coordinator's word on a generation is complete: it named the leader, the members or the assignor.
    A broker log's `Stabilized` line alone proves only that the generation formed: its `Assignment received`
    line normally follows within milliseconds, else the settle timer completes it. That line names the leader
    from 3.0; before (2.2-2.8) it names none, and proves the generation Stable as the second line on it, logged
    later than the first (a line shipped twice carries the same time, and proves nothing more)."""
    return r.leader is not None or r.coordinator_members is not None or r.protocol is not None or (
        r.formed_ms is not None and r.last_sync_ms is not None and r.last_sync_ms > r.formed_ms)


def awaits_member_list(g, r: Rebalance) -> bool:
    """The coordinator's log proved a generation whose members `__consumer_offsets` also describes
    (settings.member_list_input) and that has not come yet: the generation waits for it (or the settle timer), so
    that its record does not keep the log's gaps (protocol, assignments, client ids, hosts). A classic group's is
    the generation's member list; a KIP-848 group's, each member's assignment record of the epoch (its current
    assignment, reconciled). Only a group's first generation, or a group that has shown such lists: one the log
    alone describes does not wait."""
    if not g.settings.member_list_input:
        return False
    kip848 = [mid for mid, m in g.members.items() if m.kip848]
    if kip848:  # (the log's first KIP-848 line names the epoch before the first: its first is the first completed)
        return (g.membership_known or not g.history) and not all(mid in r.synced for mid in kip848)
    return (g.membership_known or not g.generation) and r.coordinator_members is None and not g.client_feed


def trigger(g, cause: str, at: int | None, out: list, who: dict | None = None, reason: str | None = None) -> None:
    """Something that starts (or joins in) a rebalance happened at `at`, for `cause`."""
    r = g.rebalance
    if r is not None and r.generation is not None and not g.client_feed and not proven_whole(r):
        # Broker log lines only: the generation formed (Stabilized) but its leader never sent the
        # assignment before this join or leave sent the group back to PreparingRebalance (it was in
        # CompletingRebalance): it never became Stable, and the rebalance goes on to the next one.
        r.generation = None
        r.formed_ms = None
        r.coordinator_confirmed = False
    elif r is not None and r.generation is not None:
        # The current generation already formed: this trigger belongs to the next rebalance. Members whose
        # JoinGroup came while it was completing and that never synced it were not in it (the coordinator
        # sent the group back to PreparingRebalance for them): they carry over to the next round.
        # A member this trigger says joins (the log's `Adding new member M`) is the next round's.
        joining = who.get("member_id") if who and cause == C.MEMBER_JOINED else None
        r = complete_before_next(g, r, r.last_sync_ms or r.formed_ms or at, out, joining)
    if not g.members and g.membership_known and cause not in (C.MEMBER_JOINED,):
        # The last member went away (also in the middle of a rebalance): the group becomes Empty and
        # nothing is reassigned; Kafka bumps its generation, a record naming who left (from the coordinator's
        # own word on the empty group where it is read, `on_group_empty`). Only when we know the membership:
        # broker log lines alone name members only as they come and go.
        ensure(g, at).add_cause(cause, who, reason)
        if not g.coordinator_feed:
            complete_empty(g, (g.generation or 0) + 1, at, out)
            go_empty(g)
        return
    if r is None:
        r = g.rebalance = Rebalance(at, g.generation)
        g.state = PREPARING
        if C.coordinator_moved_recently(g.coordinator_change_ms, at):
            r.add_cause(C.COORDINATOR_CHANGE, reason="coordinator moved shortly before")
            g.coordinator_change_ms = None
    r.trigger(at)
    r.add_cause(cause, who, reason)
    if not r.announced and r.started_ms is not None:
        r.announced = True
        out.append(records.rebalance_started(g.group, r.started_ms, generation=g.generation,
                                             started_ms=r.started_ms, causes=[dict(c) for c in r.causes]))


def complete_before_next(g, r: Rebalance, completed_ms: int | None, out: list,
                         joining: str | None = None) -> Rebalance | None:
    """Complete the generation `r` formed, as the next round begins. Members whose JoinGroup came while it was
    completing and that never synced it (or came after the coordinator's log said it formed, or are `joining`, the
    member the next round's trigger names as added) were not in it (the coordinator sent the group back to
    PreparingRebalance for them): they, and the causes naming them, carry over to the next round, which is
    returned (None when nobody carries over)."""
    # With the coordinator's log, also before any sync: a join after the generation formed (its `Stabilized`) is
    # the next round's, and a join still without an id is in no generation.
    # A KIP-848 member in the group when the coordinator computed the epoch's target assignment is in that epoch
    # whether or not it reached it (a member waiting for partitions or tasks others still hold syncs it unsettled).
    formed = r.formed_ms if r.coordinator_confirmed else None
    late = {mid: t for mid, t in r.joined.items() if mid not in r.synced
            and (mid == joining or (formed is not None and t > formed) or (r.synced and not (
                formed is not None and mid in g.members and g.members[mid].kip848)))}
    anonymous = list(r.anonymous_joins) if r.synced or formed is not None else []  # joined without an id
    moved = [c for c in r.causes if c.get("member_id") in late]
    for mid in late:
        del r.joined[mid]
    if moved:
        r.causes = [c for c in r.causes if c.get("member_id") not in late]
    r.anonymous_joins = [] if anonymous else r.anonymous_joins
    complete(g, completed_ms, out, later=set(late) | ({joining} if joining else set()))
    if not late and not anonymous:
        return None
    nxt = g.rebalance = Rebalance(min(late.values()) if late else completed_ms, g.generation)
    g.state = PREPARING
    nxt.joined.update(late)
    nxt.anonymous_joins = anonymous
    for mid, m in g.members.items():  # members whose rejoin waited on the completed generation
        if m.joining_ms is not None and m.rejoin_cause is not None and mid not in nxt.joined:
            nxt.joined[mid] = m.joining_ms
    nxt.causes.extend(moved)
    return nxt


def go_empty(g) -> None:
    """The group has no members left: no rebalance, no leader."""
    g.rebalance = None
    g.state = EMPTY
    g.leader = None
    deadlines.recompute(g)


def complete_empty(g, gen: int, at: int, out: list) -> bool:
    """The last member went: Kafka bumps the generation (a classic group's coordinator completes the round with no
    members; a KIP-848 group's epoch bumps) and the group is Empty. That generation is a record of its own, with no
    members and the rebalance's causes naming who left. False (nothing emitted) when no round is open, a member is
    still there, or the group is already on `gen`."""
    r = g.rebalance
    if r is None or g.members or (g.generation is not None and gen <= g.generation):
        return False
    r.generation = gen
    r.coordinator_members = []
    r.coordinator_confirmed = True
    complete(g, at, out)
    g.leader = None
    return True


def emptied(g, r: Rebalance) -> bool:
    """The round under way is the group going empty: it had a generation, it has no member left, and its causes
    name who went."""
    return not g.members and g.generation is not None and any(c["cause"] != C.MEMBER_JOINED for c in r.causes)


def ensure(g, at: int | None) -> Rebalance:
    """The rebalance under way, or a new one from `at` (its trigger not seen)."""
    if g.rebalance is None:
        g.rebalance = Rebalance(at, g.generation)
        g.state = PREPARING
    return g.rebalance


def maybe_complete(g, out: list) -> None:
    """Complete the formed generation if every member it expects has synced it (or the coordinator proved it)."""
    r = g.rebalance
    if r is None or r.generation is None:
        return
    if g.coordinator_feed and g.client_feed and not r.coordinator_confirmed:
        return  # coordinator facts win: wait for its word (or the settle timer)
    expected = r.expected_ids()
    if expected is None:
        if r.joined:
            # KIP-848 members never rejoin: each live one reaches the new epoch by a sync of its own (a
            # member revoking partitions syncs its old epoch first)
            expected = ({mid for mid in r.joined if mid in g.members} | set(r.synced)
                        | {mid for mid, m in g.members.items() if m.kip848})
        else:
            # No join seen for this round (it was triggered where we cannot see): every live member is
            # expected to sync; one that does not is dropped when the settle timer fires.
            expected = set(g.members) | set(r.synced)
        if r.anonymous_joins:
            return  # someone joined before getting a member id and has not shown up with one yet
    if expected and expected.issubset(r.synced):
        complete(g, r.last_sync_ms or r.formed_ms, out)
    elif r.coordinator_confirmed and not g.client_feed and proven_whole(r) and not awaits_member_list(g, r):
        # the latest proof: a log's `Assignment received` after its `Stabilized` (the group is Stable then)
        complete(g, r.last_sync_ms or r.formed_ms, out)


def complete(g, completed_ms: int | None, out: list, settled_at: int | None = None, later: Collection = ()) -> None:
    """The generation the rebalance formed is complete (at `completed_ms`; `settled_at` when the settle timer
    decided): emit its `generation` record (and any storm record) and make the group Stable on it. `later`: members
    that joined after it formed, the next round's."""
    r = g.rebalance
    if r is None:
        return
    if g.held is not None:  # the generation before it goes out first, with what came of its late syncs
        held.release(g, out)
    if r.generation is None:
        # Settled without ever learning the generation: nothing formed that we can report.
        g.rebalance = None
        g.state = STABLE if g.members else EMPTY
        return
    gen = r.generation
    coord = {m["member_id"]: m for m in r.coordinator_members} if r.coordinator_members is not None else None
    if coord is not None:
        ids = sorted(coord)
    elif not g.client_feed:
        # broker log lines only: every member the coordinator added and has not removed (its log names
        # members as they come and go; a member that did not rejoin is removed by a line of its own)
        ids = sorted(set(g.members) - set(later))
    else:
        # KIP-848 members never rejoin: every live one is in the group's new epoch (its own sync for that
        # epoch may follow, or not at all when its assignment did not change)
        ids = sorted((set(r.synced) | {mid for mid in r.joined if mid in g.members}
                      | {mid for mid, m in g.members.items() if m.kip848}) - set(later))
    # Members of the previous generation that never rejoined were dropped by the coordinator.
    if g.client_feed and coord is None and r.joined:
        for mid, m in list(g.members.items()):
            found = C.cause_of_missing_rejoin(m.sync_generation, gen, m.kip848) if mid not in ids else None
            if found is not None:
                r.add_cause(found.cause, m.describe(), found.reason)
                membership.remove(g, mid, completed_ms or gen)
    assignment = _assignment(g, r, ids, coord, gen)
    if g.coordinator_feed:  # causes the log named by member id alone take what another input said of the member
        for cause in r.causes:
            m = g.members.get(cause.get("member_id"))
            if m is not None:
                for k, v in m.describe().items():
                    cause.setdefault(k, v)
    started = r.started_ms
    if completed_ms is None:
        completed_ms = settled_at if settled_at is not None else g.clock_ms
    for mid in ids:  # the join phase is over: the session timers of its members run again
        m = g.members.get(mid)
        if m is not None and m.joining_ms is not None and m.rejoin_cause is None:
            m.join_done(completed_ms)
            deadlines.lower(g, m)
    duration = completed_ms - started if started is not None and completed_ms >= started else None
    protocol, why = r.protocol or declared_server_assignor(g, ids), None
    from_broker = protocol is None and (protocol := group_config.broker_assignor(g, ids)) is not None
    if protocol is None:  # no sync named it: the coordinator's choice from the members' own preferences
        protocol, why = elect_protocol(g, ids)
    judged = judge_generation(g, ids, assignment, protocol, gen, why)
    rec = records.generation(
        g.group, completed_ms, generation=gen, protocol=protocol, leader=r.leader, started_ms=started,
        completed_ms=completed_ms, duration_ms=duration, causes=r.final_causes(), members=ids,
        assignment=({mid: sorted([list(tp) for tp in tps]) for mid, tps in assignment.items()}
                    if assignment is not None else None), group_type=group_type.current(g))
    rec.update(judged)
    streams = streams_members(g, ids)
    if streams:  # a streams group's generation: each member's process and tasks (latest sync)
        rec["tasks"] = {mid: {"process_id": s.get("process_id"), "client_id": g.members[mid].client_id,
                              "epoch": s.get("tasks_epoch"),
                              **(s.get("tasks") or {"active": None, "standby": None, "warmup": None})}
                        for mid, s in sorted(streams.items())}
        streams_topology.remember_tasks(g, rec["tasks"])
    elif not ids and g.streams_state is not None:
        streams_topology.remember_tasks(g, {})  # a streams group gone empty: nobody holds a task now
    if from_broker:
        rec["protocol_source"] = "broker"  # the brokers' default assignor (group.consumer.assignors)
    waiting = held.late_syncs(g, r, ids, coord, gen) if assignment is None and settled_at is None else None
    if waiting:
        held.hold(g, rec, waiting, r, ids, coord, why, completed_ms)
    else:
        out.append(rec)
    g.count("generations")
    # The group is now Stable on `gen`.
    g.generation = gen
    g.protocol = protocol or g.protocol
    g.leader = r.leader
    g.rebalance = None
    g.state = STABLE if ids else EMPTY
    if assignment is not None:
        held.take_ownership(g, assignment, gen)
    g.history.append([gen, completed_ms, duration, [c["cause"] for c in rec["causes"]]])
    if not ids:
        return  # the group went empty: nothing was reassigned, no ingredient of a storm (its pattern included)
    for srec in g.storm.on_generation(completed_ms, summarise(rec)):
        out.append(stamp(g, srec, completed_ms))


def _assignment(g, r: Rebalance, ids: list, coord: dict | None, gen: int) -> dict | None:
    """Each member's partitions in generation `gen` (its sync, the coordinator's list, or what it last synced
    of `gen`); None when any member's is unknown."""
    assignment: dict = {}
    for mid in ids:
        tps = r.synced.get(mid)
        if tps is None and coord is not None and coord[mid].get("assignment") is not None:
            tps = tuple(tuple(x) for x in coord[mid]["assignment"])
        m = g.members.get(mid)
        if tps is None and m is not None and m.sync_generation == gen and m.assignment is not None:
            tps = m.assignment
        if tps is None:
            return None
        assignment[mid] = tps
    return assignment


def stamp(g, rec: dict, ts: int) -> dict:
    """A record of the group's storm tracker, as the group's record at `ts`."""
    rec["group"] = g.group
    rec["ts"] = ts
    return rec


def coordinator_completes(g, r: Rebalance) -> bool:
    """The coordinator's word alone completes the generation: broker log lines that proved it whole, or a member
    list with every member's assignment."""
    return r.coordinator_confirmed and (
        (not g.client_feed and proven_whole(r) and not awaits_member_list(g, r))
        or (r.coordinator_members is not None and all(
            i.get("assignment") is not None for i in r.coordinator_members)))
