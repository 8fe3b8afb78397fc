"""Judging a generation: the expected assignment (recomputed with the group's assignor) and the checks of
contract section 2 (mismatched, unassigned and moved partitions, imbalance, minimum moves)."""
from __future__ import annotations

from . import assignment_checks as checks
from .assignors import (ASSIGNOR_RELEASE, SERVER_ASSIGNORS, AssignmentInputError, MemberSubscription,
                        UnknownAssignor, assign, parse_release, server_rules_release)
from .assignors.server import coordinator_fill_order
from .streams_expected import judge_streams
from .vocabulary import SHARE_ASSIGNOR

STICKY_PROTOCOLS = ("sticky", "cooperative-sticky", "uniform")
EMPTY_REASON = "no members: the group went empty"
# a share group's assignor hands out only the partitions whose share-group state is initialised (its coordinator's
# state record: `share_partitions`); without it the partitions the epoch's members hold stand in for them, and
# without the members' assignment there is nothing to recompute
SHARE_UNKNOWN_REASON = ("share group: the members' assignment is not known (its partitions stand in for the ones the "
                        "assignor may hand out)")


def partition_counts(group, ids, assignment) -> tuple[dict[str, int], list[str]]:
    """Partition counts for the topics the members subscribe to: the explicit metadata where known,
    else inferred from the highest partition seen assigned (a lower bound). Returns (counts, inferred)."""
    topics: set[str] = set()
    for mid in ids:
        m = group.members.get(mid)
        if m is not None and m.topics:
            topics.update(m.topics)
    counts: dict[str, int] = {}
    inferred = []
    seen: dict[str, int] = {}
    for tps in (assignment or {}).values():
        for t, p in tps:
            if p + 1 > seen.get(t, 0):
                seen[t] = p + 1
    for (t, p) in group.owners:
        if p + 1 > seen.get(t, 0):
            seen[t] = p + 1
    for t in sorted(topics | set(seen)):
        if t in group.partitions:
            counts[t] = group.partitions[t]
        elif t in seen:
            counts[t] = seen[t]
            inferred.append(t)
    return counts, sorted(inferred)


def declared_server_assignor(group, ids) -> str | None:
    """The server assignor a KIP-848 group's members name (`group.remote.assignor`, in their member records of
    `__consumer_offsets`), when every KIP-848 member of `ids` names the same one: the generation's assignor when
    no input said which the coordinator used. None when any names none (the broker's configured default applies,
    which no input shows) or they differ."""
    named = set()
    for mid in ids:
        m = group.members.get(mid)
        if m is None or not m.kip848:
            continue
        if len(m.protocols or ()) != 1:
            return None
        named.add(m.protocols[0])
    return named.pop() if len(named) == 1 else None


def elect_protocol(group, ids: list[str]) -> tuple[str | None, str | None]:
    """The assignor a classic group's coordinator chose when no member's sync named it (confluent-kafka's
    instrumentation names it only when one strategy is configured): the coordinator takes the protocols every
    member supports and each member votes for the first of those in its own order of preference; the most
    votes win. Returns (protocol, None), or (None, why it cannot be known) when a member's protocols are
    unknown, they share none, or the votes tie (the coordinator's tie-break is not specified)."""
    lists = []
    for mid in ids:
        m = group.members.get(mid)
        if m is not None and m.kip848:
            return None, "protocol unknown: the broker's assignor is not reported (KIP-848 group)"
        if m is None or not m.protocols:
            return None, "protocol unknown: a member's assignors are not reported"
        lists.append(tuple(m.protocols))
    if not lists:
        return None, "protocol unknown: no members"
    common = set(lists[0]).intersection(*lists[1:])
    if not common:
        return None, "protocol unknown: the members share no assignor"
    votes: dict[str, int] = {}
    for protocols in lists:
        choice = next(p for p in protocols if p in common)
        votes[choice] = votes.get(choice, 0) + 1
    most = max(votes.values())
    winners = sorted(p for p, n in votes.items() if n == most)
    if len(winners) > 1:
        return None, "protocol unknown: the members' votes tie between " + " and ".join(winners)
    return winners[0], None


def coordinator_order(group, ids: list[str]) -> list[str]:
    """The order a KIP-848 group's coordinator hands the generation's members to its assignor in (for members whose
    ids share a bucket of its HashMap): the members its table already held, then the newest member when this epoch
    is its first (its join computed the assignment). The group's members dict keeps the order the monitor first saw
    them in, which is the order the coordinator added them. Keeps `group.members_peak`, the most members the
    coordinator has held at once (it sizes that table): called once for every generation."""
    wanted = set(ids)
    joined = [mid for mid in group.members if mid in wanted]
    joined += [mid for mid in ids if mid not in set(joined)]
    newest = group.members.get(joined[-1]) if joined else None
    added = joined[-1:] if newest is not None and newest.owned_generation is None else []
    held = joined[:len(joined) - len(added)]
    peak = max(group.members_peak, len(held))
    group.members_peak = max(peak, len(joined))
    return coordinator_fill_order(held, added, peak)


def streams_members(group, ids) -> dict:
    """The members of `ids` that are a streams group's (KIP-1071), with what the core keeps of each (its process,
    topology epoch, client tags and tasks: Member.streams); empty when the group is no streams group."""
    out = {}
    for mid in ids:
        m = group.members.get(mid)
        if m is not None and m.kip848 and m.streams is not None:
            out[mid] = m.streams
    return out


def judge_streams_generation(group, ids: list[str], members: dict, gen: int, out: dict) -> dict:
    """A streams group's generation: a consumer assignor never judges it (a task is a subtopology and a partition,
    with active, standby and warm-up kinds): `expected_assignment` and `partitions_moved` stay null. The sticky
    task assignor recomputes its tasks (`streams_expected.judge_streams`: `expected_tasks`, `mismatched_tasks`,
    `tasks_moved`...); `members` (streams_members) holds each member's process id and its tasks of its latest
    sync (`tasks_epoch`)."""
    return judge_streams(group, ids, members, gen, out)


def judge_generation(group, ids: list[str], assignment: dict | None, protocol: str | None, gen: int,
                     protocol_reason: str | None = None) -> dict:
    out = {"expected_assignment": None, "mismatched_partitions": None, "unassigned_partitions": None,
           "partitions_moved": None, "imbalance": None, "min_moves": None, "expected_reason": None,
           "expected_assignor_release": None}
    if not ids:  # the group went empty: nothing to assign, and nothing assigned is wrong
        out.update(expected_assignment={}, mismatched_partitions=0, expected_reason=EMPTY_REASON)
        return out
    streams = streams_members(group, ids)
    if streams:
        return judge_streams_generation(group, ids, streams, gen, out)
    fill_order = coordinator_order(group, ids)
    if assignment is not None:
        out["imbalance"] = checks.imbalance(assignment) if assignment else None
        previous: dict[str, list] = {}
        key_of = {}
        for mid in ids:
            m = group.members.get(mid)
            key_of[mid] = m.owner_key if m is not None else mid
        for tp, key in group.owners.items():
            previous.setdefault(key, []).append(tp)
        current = {}
        for mid, tps in assignment.items():
            current.setdefault(key_of.get(mid, mid), []).extend(tuple(tp) for tp in tps)
        # a share group's members share partitions: one more holder of a partition moves nothing
        out["partitions_moved"] = None if protocol == SHARE_ASSIGNOR else (
            checks.partitions_moved(previous, current) if previous else 0)
    counts, inferred = partition_counts(group, ids, assignment)
    subscribed = {}
    for mid in ids:
        m = group.members.get(mid)
        subscribed[mid] = tuple(m.topics) if m is not None and m.topics else None
    if assignment is not None and all(t is not None for t in subscribed.values()):
        topics = set()
        for t in subscribed.values():
            topics.update(t)
        if topics.issubset(counts):
            out["unassigned_partitions"] = checks.unassigned_partitions(assignment, counts, topics)
    if not group.settings.expected_assignment:
        out["expected_reason"] = "disabled"
        return out
    if protocol is None:
        out["expected_reason"] = protocol_reason or "protocol unknown"
        return out
    missing = [mid for mid, t in subscribed.items() if t is None]
    if missing:
        out["expected_reason"] = f"subscription unknown for {len(missing)} member(s)"
        return out
    unknown_topics = sorted({t for ts in subscribed.values() for t in ts} - set(counts))
    share = protocol == SHARE_ASSIGNOR
    if unknown_topics and share:
        # the share assignor hands out only partitions the epoch's members hold (share_inputs): a topic none of them
        # holds has none to hand out, whatever its count
        counts = {**counts, **{t: 0 for t in unknown_topics}}
    elif unknown_topics:
        out["expected_reason"] = "partition count unknown for " + ", ".join(unknown_topics[:5])
        return out
    work = len(ids) * max(1, sum(counts.values()))
    if work > group.settings.expected_assignment_max_work:
        out["expected_reason"] = f"group too large to recompute ({work} member-partitions)"
        return out
    assignor = protocol
    if protocol == "range" and any(getattr(group.members.get(mid), "kip848", False) for mid in ids):
        assignor = "server-range"  # a KIP-848 group's `range` is the group coordinator's RangeAssignor
    release = ASSIGNOR_RELEASE  # the client assignors run in the clients: the broker's release is not theirs
    broker = group.settings.broker_release or group.broker_release
    if assignor in SERVER_ASSIGNORS:
        # the configuration's release first, else the one the brokers' log said (broker_release events)
        release = server_rules_release(broker)
        if release is None:
            out["expected_reason"] = f"server assignor rules of Kafka {broker} not reproduced (4.0.0 and later are)"
            return out
    if share:
        why = share_rules_missing(broker, assignment)
        if why is not None:
            out["expected_reason"] = why
            return out
    if assignor in SERVER_ASSIGNORS or share:
        # the server assignors keep what members own: what they owned must be the previous epoch's assignment
        prev = group.generation if group.generation is not None and group.generation < gen else None
        owned = [m.owned_generation for m in (group.members.get(mid) for mid in ids)
                 if m is not None and m.owned_generation is not None]
        if prev is not None and owned and max(owned) < prev:
            out["expected_reason"] = f"the members' assignment of epoch {prev} is not known"
            return out
    order = fill_order if assignor in SERVER_ASSIGNORS or share else ids
    subs = []
    for mid in order:
        m = group.members[mid]
        subs.append(MemberSubscription(
            member_id=mid, topics=tuple(m.topics), group_instance_id=m.group_instance_id,
            owned_partitions=tuple(tuple(tp) for tp in (m.owned or ())), generation=m.owned_generation,
            rack=m.rack))
    try:
        extra = share_inputs(group, assignment) if share else {}
        for t, ps in (extra.get("assignable") or {}).items():  # (each initialised partition exists)
            if ps and counts.get(t, 0) <= max(ps):
                counts = {**counts, t: max(ps) + 1}
        expected = assign(assignor, counts, subs, release=release, **extra)
    except UnknownAssignor:
        out["expected_reason"] = f"unknown assignor: {protocol}"
        return out
    except AssignmentInputError as exc:
        out["expected_reason"] = f"cannot recompute: {exc}"
        return out
    except Exception as exc:  # noqa: BLE001 - an assignor's bug must not stop the group's reconstruction
        out["expected_reason"] = f"assignor failed: {type(exc).__name__}: {exc}"[:300]
        return out
    out["expected_assignment"] = {mid: sorted([list(tp) for tp in tps]) for mid, tps in expected.items()}
    # whose assignor this is: an operator on another Kafka release may see a different, equally correct answer
    out["expected_assignor_release"] = release
    if inferred and not share:  # (a share group's counts play no part: share_inputs)
        out["expected_reason"] = "partition counts inferred from assignments for " + ", ".join(inferred[:5])
    if assignment is not None:
        out["mismatched_partitions"] = checks.mismatched_partitions(assignment, expected)
        if protocol in STICKY_PROTOCOLS:
            previous_by_member = {}
            for mid in ids:
                m = group.members.get(mid)
                if m is not None and m.owned:
                    previous_by_member[mid] = list(m.owned)
            out["min_moves"] = checks.min_moves_for_balance(
                previous_by_member, {mid: subscribed[mid] for mid in ids}, counts)
    return out


def share_rules_missing(broker: str | None, assignment) -> str | None:
    """Why a share group's epoch cannot be recomputed with Kafka 4.4's SimpleAssignor, or None: a broker of an
    earlier release (4.0's simple assignor had other rules), or the members' assignment unknown (its partitions
    stand in for the ones whose share-group state is initialised, which the assignor alone hands out)."""
    if broker is not None:
        v = parse_release(broker)
        if v is None or v < (4, 4, 0):
            return f"share assignor rules of Kafka {broker} not reproduced (4.4.0's are)"
    if assignment is None:
        return SHARE_UNKNOWN_REASON
    return None


def share_inputs(group, assignment: dict) -> dict:
    """The simple assignor's inputs besides the members: the partitions it may hand out (the initialised ones, as
    the coordinator's state record lists them; without it, those the epoch's members hold stand for them) and the
    topics' ids the group's share members' syncs named."""
    if group.share_initialized is not None:
        return {"assignable": {t: list(ps) for t, ps in group.share_initialized.items()},
                "topic_ids": dict(group.topic_ids) or None}
    assignable: dict = {}
    for tps in assignment.values():
        for t, p in tps:
            assignable.setdefault(t, set()).add(int(p))
    return {"assignable": {t: sorted(ps) for t, ps in assignable.items()},
            "topic_ids": dict(group.topic_ids) or None}


def unchecked_reason(rec: dict) -> str | None:
    """Why a generation record's assignment was not checked (`mismatched_partitions` is null): the reason its
    expected assignment was not computed, or that the members' assignment is not known; None when checked."""
    if rec.get("mismatched_partitions") is not None:
        return None
    if rec.get("expected_assignment") is None:
        return rec.get("expected_reason") or "expected assignment not computed"
    return "the members' assignment is not known"


def unchecked_tasks_reason(rec: dict) -> str | None:
    """Why a streams group's generation record's tasks were not checked (`mismatched_tasks` null); None when
    checked."""
    if rec.get("mismatched_tasks") is not None:
        return None
    return rec.get("expected_reason") or "expected tasks not computed"


def mismatch_text(rec: dict) -> str:
    """`mismatched N`, or `mismatched unknown (why)`, as the demo's view and line mode say it (a streams group's:
    `mismatched N tasks`)."""
    if rec.get("tasks") is not None:
        why = unchecked_tasks_reason(rec)
        return f"mismatched {rec.get('mismatched_tasks')} tasks" if why is None else f"mismatched unknown ({why})"
    why = unchecked_reason(rec)
    return f"mismatched {rec.get('mismatched_partitions')}" if why is None else f"mismatched unknown ({why})"
