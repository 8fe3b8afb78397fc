"""A generation record held for its members' late syncs, and what a generation's assignment makes the members own.

With the clients' events and the coordinator's log read together, the log may complete a generation before the
clients' syncs of it arrive (a client records its sync when the answer comes, after the log's `Assignment
received` and possibly after the next round's first line). `rebalance.complete` then holds the record
(`g.held`, kept in the group's snapshot) until those syncs come (`late_sync`) or its settle window ends (the
`held` timer of `timers.py`), so that it carries the clients' protocol and assignments with the log's reasons.
"""
from __future__ import annotations

from ..expected import judge_generation


def late_syncs(g, r, ids: list, coord: dict | None, gen: int) -> list | None:
    """The members of generation `gen` whose sync may still come, when the coordinator's log completed it
    before them (with the clients' events read too): a client records its sync when the answer arrives, after
    the log's `Assignment received` and possibly after the next round's first line. None when the record cannot
    gain from waiting: a member of it gone, or a KIP-848 group (its members' syncs are their own epochs')."""
    if not (g.client_feed and g.coordinator_feed) or any(m.kip848 for m in g.members.values()):
        return None
    waiting = []
    for mid in ids:
        m = g.members.get(mid)
        if m is None:
            return None
        known = r.synced.get(mid) is not None or (m.sync_generation == gen and m.assignment is not None) or (
            coord is not None and coord[mid].get("assignment") is not None)
        if not known:
            waiting.append(mid)
    return waiting or None


def hold(g, rec: dict, waiting: list, r, ids: list, coord: dict | None, why: str | None,
         completed_ms: int) -> None:
    """Keep generation record `rec` for the late syncs of `waiting` (see `late_syncs`) until the end of its
    settle window (`core.settle` from the first evidence that it formed), so that it carries the clients'
    protocol and assignments with the log's reasons: `late_sync` fills it in, `release` emits it."""
    known = {}
    for mid in ids:
        if mid in waiting:
            continue
        tps = r.synced.get(mid)
        if tps is None and coord is not None and coord[mid].get("assignment") is not None:
            tps = coord[mid]["assignment"]
        m = g.members[mid]
        if tps is None:
            tps = m.assignment
        known[mid] = [list(tp) for tp in tps]
    until = max(completed_ms, (r.formed_ms if r.formed_ms is not None else completed_ms) + g.settings.settle_ms)
    g.held = {"rec": rec, "known": known, "wait": waiting, "until": until, "why": why}


def late_sync(g, ev, out: list) -> None:
    """A member's sync of the generation the group is on, after its record was held for it: taken into the
    record (its assignment, the protocol), which goes out once every awaited member synced."""
    h = g.held
    if h is None or h["rec"]["generation"] != ev.generation or ev.member_id not in h["wait"]:
        return
    h["wait"].remove(ev.member_id)
    h["known"][ev.member_id] = [list(tp) for tp in ev.assignment]
    if ev.protocol and h["rec"]["protocol"] is None:
        h["rec"]["protocol"] = ev.protocol
    if not h["wait"]:
        release(g, out)


def release(g, out: list) -> None:
    """Emit the held generation record: with every member's assignment when all came (judged again against
    the assignor with them), else as it was completed."""
    h, g.held = g.held, None
    if h is None:
        return
    rec = h["rec"]
    if not h["wait"]:
        gen = rec["generation"]
        assignment = {mid: tuple(tuple(tp) for tp in tps) for mid, tps in h["known"].items()}
        rec["assignment"] = {mid: sorted([list(tp) for tp in tps]) for mid, tps in assignment.items()}
        rec.update(judge_generation(g, rec["members"], assignment, rec["protocol"], gen, h["why"]))
        if g.generation == gen:
            g.protocol = rec["protocol"] or g.protocol
            take_ownership(g, assignment, gen)
    out.append(rec)


def take_ownership(g, assignment: dict, gen: int) -> None:
    """The members own what generation `gen` assigned them (the owner of a static member: its instance id)."""
    for mid, tps in assignment.items():
        m = g.members.get(mid)
        key = m.owner_key if m is not None else mid
        for tp in tps:
            g.owners[tuple(tp)] = key
        if m is not None:
            m.assignment = tuple(tps)
            m.sync_generation = gen
            m.owned = tuple(tps)
            m.owned_generation = gen
    cap_owners(g)


def cap_owners(g) -> None:
    """Keep the latest `max_partitions_per_group` partition owners (counted when some go)."""
    if len(g.owners) > g.settings.max_partitions_per_group:
        g.count("partitions_capped")
        g.owners = dict(list(g.owners.items())[-g.settings.max_partitions_per_group:])
