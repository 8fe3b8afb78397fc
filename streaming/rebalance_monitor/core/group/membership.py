"""Who is in the group: members entering and leaving, and a member's identity across member ids.

The monitor holds the data: `g.members` (member id -> `Member`, in the order they came) and `g.removed` (member
id -> when it was removed, the latest `settings.removed_members_kept`: a straggling event of a removed member is
not a new member). Every member enters through `create`, which applies the per-group cap
(`settings.max_members_per_group`), and leaves through `remove`.

Identity carries over in two ways:
- a static member (`group_instance_id`) whose instance the coordinator hands a new member id is the same
  member under the new id (`static_twin`, `rename_static`, `replace_static`);
- a join sent without a member id (the first JoinGroup of a client) is answered under a new member id: the first
  event under that id from the same client is matched to it (`match_anonymous`) and takes what it declared
  (`join_details`, `adopt_anonymous_join`).

No rebalance is started here: the handlers decide that (with `core/causes.py`).
"""
from __future__ import annotations

from .. import causes as C
from ..members import Member
from ..vocabulary import BROKER_ASSIGNED, TimeoutSource
from . import group_config as GC


def create(g, member_id: str, ts: int) -> Member | None:
    """A new member, seen first at `ts`; None (counted) when the group already holds its cap of members."""
    if len(g.members) >= g.settings.max_members_per_group:
        g.count("members_capped")
        return None
    m = Member(member_id)
    m.last_seen_ms = ts
    g.members[member_id] = m
    g.removed.pop(member_id, None)
    return m


def remove(g, member_id: str, at: int) -> Member | None:
    """Take a member out of the group at `at` (remembered as removed); the member, or None if not there."""
    m = g.members.pop(member_id, None)
    if m is not None:
        removed = g.removed
        removed[member_id] = at
        while len(removed) > g.settings.removed_members_kept:
            removed.popitem(last=False)
    return m


def member(g, ev) -> Member | None:
    """The member a client event is about, created if new (None past the cap); its identity updated."""
    m = g.members.get(ev.member_id)
    if m is None:
        m = create(g, ev.member_id, ev.ts)
    if m is not None:
        m.update_identity(ev)
    return m


def live_member(g, ev) -> Member | None:
    """The member a client event is about (created if new), or None for a straggling event of a member already
    removed (counted) or one past the member cap. The first event under a new member id of a static member that
    is rejoining (its instance sent a JoinGroup without an id) is the same member: the coordinator handed the
    instance a new id. The first event under a new member id that answers a join sent without one takes what
    that join declared."""
    if ev.member_id not in g.members:
        if ev.member_id in g.removed:
            g.count("stale_member_events")
            return None
        twin = static_twin(g, ev)
        if twin is not None and twin.joining_ms is not None:
            rename_static(g, twin, ev)
        elif g.rebalance is not None and g.rebalance.anonymous_joins:
            details = match_anonymous(g, ev)
            m = member(g, ev)
            if m is not None and details:
                adopt_anonymous_join(g, m, details)
                m.take_client_host(details.get("own_host"))
            return m
    return member(g, ev)


def by_client(g, client_id: str | None, host: str | None) -> Member | None:
    """The one live member with this client id (and host, when both are known); None when none or several."""
    found = None
    if client_id is None:
        return None
    for m in g.members.values():
        if m.client_id == client_id and (host is None or m.host is None or m.host == host):
            if found is not None:
                return None
            found = m
    return found


def set_timeouts(m: Member, session_timeout_ms: int | None, rebalance_timeout_ms: int | None,
                 heartbeat_interval_ms: int | None) -> None:
    """The member's session / rebalance / heartbeat intervals, those that are stated. A KIP-848 member's session
    timeout is its group's once the broker said it (group_config.apply_session): a client's word does not replace
    the broker's."""
    if m.kip848 and m.timeout_source in GC.BROKER_SOURCES:
        session_timeout_ms = heartbeat_interval_ms = None
    if session_timeout_ms is not None:
        m.session_timeout_ms = session_timeout_ms
        m.timeout_source = TimeoutSource.CLIENT
    if rebalance_timeout_ms is not None:
        m.rebalance_timeout_ms = rebalance_timeout_ms
    if heartbeat_interval_ms is not None:
        m.heartbeat_interval_ms = heartbeat_interval_ms


def take_timeouts(m: Member, ev) -> None:
    """The member's intervals, from a join that states them."""
    set_timeouts(m, ev.session_timeout_ms, ev.rebalance_timeout_ms, ev.heartbeat_interval_ms)


# --- static members --------------------------------------------------------------------------------
def static_twin(g, ev) -> Member | None:
    """The live member with the event's group instance id under another member id, if any."""
    if not ev.group_instance_id:
        return None
    for m in g.members.values():
        if m.group_instance_id == ev.group_instance_id and m.member_id != ev.member_id:
            return m
    return None


def rename_static(g, old: Member, ev) -> None:
    """The coordinator gave a static member's instance a new member id: the same member (its partitions, its
    deadlines, its place in the rebalance) goes on under the new id."""
    old_id = old.member_id
    remove(g, old_id, ev.ts)
    r = g.rebalance
    if r is not None:
        for seen in (r.joined, r.synced):
            if old_id in seen:
                seen[ev.member_id] = seen.pop(old_id)
    old.member_id = ev.member_id
    old.update_identity(ev)
    g.members[ev.member_id] = old
    g.count("static_replacements")


def replace_static(g, old: Member, ev) -> None:
    """A static member restarted within its session timeout: same partitions, no rebalance."""
    rename_static(g, old, ev)
    old.topics = ev.topics
    old.joined_ms = ev.ts
    old.join_sent(ev.ts)
    old.polled(ev.ts)
    take_timeouts(old, ev)


# --- joins without a member id ---------------------------------------------------------------------
def join_details(ev) -> dict:
    """What an id-less join declared, kept until the member shows up under its id (compact: it is state)."""
    d = {"ts": ev.ts, "topics": list(ev.topics), "protocols": list(ev.protocols)}
    for key, val in (("gi", ev.group_instance_id), ("st", ev.session_timeout_ms), ("rt", ev.rebalance_timeout_ms),
                     ("hi", ev.heartbeat_interval_ms), ("rack", ev.rack), ("reason", ev.reason),
                     ("gp", ev.group_protocol)):
        if val is not None:
            d[key] = val
    if ev.owned:
        d["owned"] = [list(tp) for tp in ev.owned]
        d["og"] = ev.generation
    return d


def match_anonymous(g, ev) -> dict | None:
    """The id-less join of this round that `ev` (the first event under a new member id) answers, taken off the
    list and its cause named after the member: its details ({} if unknown), or None when no such join is
    pending."""
    r = g.rebalance
    if r is None:
        return None
    found = None
    for i, entry in enumerate(r.anonymous_joins):
        cid, host = entry[0], entry[1]
        details = entry[2] if len(entry) > 2 and entry[2] else {}
        instance = details.get("gi")
        if (cid is None or ev.client_id is None or cid == ev.client_id) and \
                (host is None or ev.host is None or host == ev.host) and \
                (instance is None or ev.group_instance_id is None or instance == ev.group_instance_id):
            found = i
            break
    if found is None:
        # the broker's inputs name a member's host by the address they saw, its client by its own name: the one
        # pending join of the same client id (none when several clients share it) is this member's
        same = [i for i, e in enumerate(r.anonymous_joins) if e[0] is not None and e[0] == ev.client_id]
        found = same[0] if len(same) == 1 else None
    if found is None:
        return None
    entry = r.anonymous_joins.pop(found)
    details = dict(entry[2]) if len(entry) > 2 and entry[2] else {}
    who = {"member_id": ev.member_id, **({"client_id": ev.client_id} if ev.client_id else {})}
    own, seen = entry[1], ev.host
    if own is not None and seen is not None and own != seen:
        details["own_host"] = own
        who.update(host=own, client_host=seen)
    elif own or seen:
        who["host"] = seen or own
    r.add_cause(C.MEMBER_JOINED, who, getattr(ev, "reason", None) or details.get("reason"))
    return details


def match_coordinator_join(g, member_id: str, instance_id: str | None, kip848: bool = False) -> list | None:
    """The id-less join of this round that the coordinator's log answers by adding member `member_id`, taken off
    the list: its entry [client_id, host, details], or None. The log may name the member before its client's
    first event under the id: the member is the one that join declared (subscription, timeouts, client id, host).
    Kafka names a classic member `<group instance id or client id>-<uuid>`: a static member's join is the one of
    its instance; a dynamic member's, the first of its client id. A KIP-848 member's id is a bare uuid: its join
    is the one KIP-848 join pending (none when several are)."""
    r = g.rebalance
    if r is None or not r.anonymous_joins:
        return None
    if kip848:
        found = [i for i, e in enumerate(r.anonymous_joins) if len(e) > 2 and e[2] and e[2].get("gp") == "consumer"
                 and (not instance_id or e[2].get("gi") == instance_id)]
        if len(found) != 1:
            return None
        entry = r.anonymous_joins.pop(found[0])
        _drop_anonymous_cause(r, entry[0])
        return entry
    for i, entry in enumerate(r.anonymous_joins):
        details = entry[2] if len(entry) > 2 and entry[2] else {}
        if (details.get("gi") == instance_id) if instance_id else (
                not details.get("gi") and entry[0] and _names(member_id, entry[0])):
            del r.anonymous_joins[i]
            _drop_anonymous_cause(r, entry[0])
            return entry
    return None


def _drop_anonymous_cause(r, client_id: str | None) -> None:
    """The round's cause for an id-less join goes with it: the caller names the member's own."""
    r.causes = [c for c in r.causes if not (c["cause"] == C.MEMBER_JOINED and c.get("member_id") is None
                                            and c.get("client_id") == client_id)]


def _names(member_id: str, prefix: str) -> bool:
    """Kafka's member id `<prefix>-<uuid>`."""
    return member_id.startswith(prefix + "-") and len(member_id) == len(prefix) + 37


def adopt_anonymous_join(g, m: Member, details: dict) -> None:
    """A member first seen after its id-less join (the coordinator answered it with an id straight away, as for
    static members): it joined this round with what that join declared."""
    ts = details.get("ts")
    if "topics" in details:
        m.topics = tuple(details["topics"])
    if "protocols" in details:
        m.protocols = tuple(details["protocols"])
    if details.get("owned"):
        m.owned = tuple(tuple(tp) for tp in details["owned"])
        m.owned_generation = details.get("og")
    if details.get("rack") is not None:
        m.rack = details["rack"]
    if details.get("gp") in BROKER_ASSIGNED:
        m.kip848 = True
        GC.apply_session(g, m)
    set_timeouts(m, details.get("st"), details.get("rt"), details.get("hi"))
    if ts is not None:
        m.joined_ms = ts
        m.polled(ts)
        m.join_sent(ts)
        r = g.rebalance
        if r is not None and r.generation is None:
            r.joined.setdefault(m.member_id, ts)


def apply_member_info(g, info, ts: int, generation: int) -> dict:
    """A member as the coordinator lists it in generation `generation` (created if new, within the cap): what
    it says of the member is taken; returned as the rebalance keeps it ({member_id, assignment}), also past the
    cap (the generation's record still names every member)."""
    m = g.members.get(info.member_id)
    if m is None:
        m = create(g, info.member_id, ts)
        if m is not None:
            m.joined_ms = ts  # first seen in a completed generation: it had joined by then
    out = {"member_id": info.member_id}
    if info.assignment is not None:
        out["assignment"] = [list(tp) for tp in info.assignment]
    if m is None:
        return out
    for key in ("group_instance_id", "client_id", "rack"):
        val = getattr(info, key)
        if val is not None:
            setattr(m, key, val)
    if info.host is not None:  # the address the coordinator saw; a host name its client gave stays beside it
        m.client_host = info.host
        if m.host is None:
            m.host = info.host
    set_timeouts(m, info.session_timeout_ms, info.rebalance_timeout_ms, None)
    if info.topics is not None:
        m.topics = info.topics
    if info.owned is not None:
        m.owned = info.owned
        m.owned_generation = info.generation
    if info.assignment is not None:
        m.assignment = info.assignment
        m.sync_generation = generation
    return out
