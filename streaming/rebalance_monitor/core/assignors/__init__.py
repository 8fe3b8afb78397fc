"""Kafka's partition assignors, re-implemented in pure Python to compute the assignment a group
*should* have got (``expected_assignment``).

Assignor names are the protocol names clients put in JoinGroup (and, for KIP-848 groups, the
server assignor names), with one rename: the group coordinator's ``range`` is called
``server-range`` here so it cannot be confused with the consumer's ``range``.

==================  ==========================================================================
``range``           clients' RangeAssignor (KIP-881 rack-aware when racks are known)
``roundrobin``      clients' RoundRobinAssignor
``sticky``          clients' StickyAssignor (eager)
``cooperative-sticky`` clients' CooperativeStickyAssignor (revoke-first adjustment)
``uniform``         group coordinator's UniformAssignor (KIP-848)
``server-range``    group coordinator's RangeAssignor (KIP-848)
``simple``          group coordinator's SimpleAssignor (KIP-932 share groups: members share partitions)
==================  ==========================================================================

A Kafka Streams group's tasks (KIP-1071) are assigned by the coordinator's StickyTaskAssignor, reproduced apart from
this registry (its inputs are subtopologies and processes, not topics): ``sticky_task.sticky_task_assign``, its JSON
case form ``sticky_task_case``, assignments compared in ``task_moves`` (docs/assignors.md, "Streams groups").

``consumer-range`` and other aliases are deliberately *not* accepted: no client sends them,
and guessing would hide a data problem.  Anything else raises :class:`UnknownAssignor`.

Reference: Apache Kafka trunk of October 2024 (the 4.0 line): clients' AbstractStickyAssignor /
RangeAssignor / RoundRobinAssignor / CooperativeStickyAssignor and group-coordinator
UniformAssignor (homogeneous + heterogeneous builders) / RangeAssignor.  Tie-breaks that Kafka
leaves to Java ``HashMap`` iteration are emulated (see ``_java.py``).
Held against Kafka 4.4.0's classes; the server assignors also by Kafka 4.0.0's rules (``release="4.0.0"``),
held against 4.0.0's classes: a group follows its brokers' release (docs/assignors.md).

Input conventions (see also the module docs of each assignor):

* ``members`` order matters only as the order the group leader / coordinator received them
  (it breaks ties inside Java ``HashMap`` buckets, which is how Kafka's own tie-breaks fall).
* ``owned_partitions`` / ``generation``: for ``sticky`` these are the previous assignment and
  generation from the StickyAssignor user data (eager members send an empty owned list in the
  protocol); for ``cooperative-sticky`` the subscription's owned partitions and generation; for
  ``uniform`` the member's current target assignment.  ``range``, ``roundrobin`` and
  ``server-range`` ignore them (as Kafka does).  Owned partitions of unknown topics are ignored;
  the sticky assignors keep, as Kafka does, a claim beyond its topic's partition count (Kafka's own
  bookkeeping then goes astray, and so does ours) and treat a claim listed twice as a conflict; the
  uniform one counts a repeated claim when it sizes the set of the member's partitions.
* ``partition_racks``: ``{topic: [[rack, ...] for each partition]}`` - the racks of each
  partition's replicas.  Only the client assignors use racks (as Kafka does).
* ``topic_ids`` (extension): ``{topic: base64 Kafka Uuid}``; the server-side assignors order
  topics by id like the broker does.  Without it topic-name order stands in.
* A topic missing from ``partitions_per_topic`` (deleted, or not created yet) is ignored in a member's
  subscription, as Kafka does; the sticky assignors still count it when they decide whether all
  subscriptions are equal (Kafka compares the subscriptions as sent). A count of 0 is a topic without
  partitions.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

__all__ = [
    "ASSIGNOR_NAMES", "ASSIGNOR_RELEASE", "SERVER_ASSIGNOR_RELEASES", "SERVER_ASSIGNORS", "SHARE_ASSIGNORS",
    "AssignmentInputError", "KafkaAssignorFailure", "MemberSubscription",
    "UnknownAssignor",
    "assign", "parse_release", "run_assign_case", "server_rules_release",
]


# The Apache Kafka release whose assignors these reproduce, case for case: held against that release's own classes
# by tests/assignors/test_assignors_vs_kafka.py (docs/assignors.md says what changed between releases).
ASSIGNOR_RELEASE = "4.4.0"
# The releases whose server (KIP-848) assignor rules are reproduced, each held against that release's own classes:
# 4.0.0's uniform assignor hands the extra partitions of an uneven split to the first members in the coordinator's
# order; 4.0.1 and every later release (4.1, 4.2, 4.3 and 4.4 alike) let a member with room give its extra one up
# (docs/assignors.md, "Another Kafka release").
SERVER_ASSIGNOR_RELEASES = ("4.0.0", ASSIGNOR_RELEASE)
SERVER_ASSIGNORS = frozenset({"uniform", "server-range"})


def parse_release(text) -> tuple[int, int, int] | None:
    """(major, minor, patch) of an Apache Kafka release as its brokers name it ("4.0.0", "4.1.0-rc2",
    "3.9.2-SNAPSHOT"), None when the text is not one."""
    import re
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\.(\d+)(?:[-.+][0-9A-Za-z.+-]*)?\s*", text) if isinstance(text, str) else None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def server_rules_release(broker_release: str | None) -> str | None:
    """The release of :data:`SERVER_ASSIGNOR_RELEASES` whose server assignor rules a broker of `broker_release`
    follows; None (the broker's release unknown) -> the newest; None back for a broker older than 4.0.0 (the
    KIP-848 preview assignors of 3.x are not reproduced) or a text that names no release."""
    if broker_release is None:
        return ASSIGNOR_RELEASE
    v = parse_release(broker_release)
    if v is None or v < (4, 0, 0):
        return None
    return "4.0.0" if v == (4, 0, 0) else ASSIGNOR_RELEASE


class AssignmentInputError(ValueError):
    """The assignment input is malformed (bad types, unknown topic, unknown assignor...)."""


class KafkaAssignorFailure(AssignmentInputError):
    """Kafka's own assignor fails on this input (it throws): the group's leader or coordinator could not compute an
    assignment either, so there is none to expect."""


class UnknownAssignor(AssignmentInputError):
    """The assignor name is not one of :data:`ASSIGNOR_NAMES`."""


@dataclass(frozen=True)
class MemberSubscription:
    member_id: str
    topics: tuple[str, ...]
    group_instance_id: str | None = None
    owned_partitions: tuple[tuple[str, int], ...] = ()
    generation: int | None = None
    rack: str | None = None
    # the subscription as the member sent it, topics the cluster lacks included (None: same as `topics`); the
    # sticky assignors compare these to decide whether all subscriptions are equal, as Kafka does
    subscribed: tuple[str, ...] | None = None


def _registry():
    from .client_range import range_assign, roundrobin_assign
    from .server import server_range_assign, uniform_assign
    from .share_simple import simple_assign
    from .sticky import cooperative_sticky_assign, sticky_assign
    return {
        "range": range_assign,
        "roundrobin": roundrobin_assign,
        "sticky": sticky_assign,
        "cooperative-sticky": cooperative_sticky_assign,
        "uniform": uniform_assign,
        "server-range": server_range_assign,
        "simple": simple_assign,
    }


ASSIGNOR_NAMES: tuple[str, ...] = (
    "range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range", "simple")
# KIP-932 share groups' assignors (Kafka 4.4's rules only): a partition may go to several members
SHARE_ASSIGNORS = frozenset({"simple"})
CLIENT_ASSIGNORS = frozenset({"range", "roundrobin", "sticky", "cooperative-sticky"})


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_USES_OWNED = frozenset({"sticky", "cooperative-sticky", "uniform", "simple"})
_KEEPS_REPEATS = frozenset({"sticky", "cooperative-sticky", "uniform"})


def _normalize_member(m: MemberSubscription, uses_owned: bool = True, keep_repeats: bool = False) -> MemberSubscription:
    if not isinstance(m, MemberSubscription):
        raise AssignmentInputError(f"members must be MemberSubscription objects, got {type(m).__name__}")
    if not isinstance(m.member_id, str):
        raise AssignmentInputError(f"member_id must be a string, got {m.member_id!r}")
    if isinstance(m.topics, str) or not all(isinstance(t, str) for t in m.topics):
        raise AssignmentInputError(f"member {m.member_id!r}: topics must be a list of strings")
    if m.group_instance_id is not None and not isinstance(m.group_instance_id, str):
        raise AssignmentInputError(f"member {m.member_id!r}: group_instance_id must be a string or null")
    if m.generation is not None and not _is_int(m.generation):
        raise AssignmentInputError(f"member {m.member_id!r}: generation must be an integer or null")
    if m.rack is not None and not isinstance(m.rack, str):
        raise AssignmentInputError(f"member {m.member_id!r}: rack must be a string or null")
    owned = m.owned_partitions if uses_owned else ()
    if not all(type(tp) is tuple and len(tp) == 2 and type(tp[0]) is str and type(tp[1]) is int
               for tp in owned):
        fixed = []
        for tp in owned:
            if (not isinstance(tp, (tuple, list)) or len(tp) != 2 or not isinstance(tp[0], str)
                    or not _is_int(tp[1])):
                raise AssignmentInputError(
                    f"member {m.member_id!r}: owned partition {tp!r} is not [topic, partition]")
            fixed.append((tp[0], int(tp[1])))
        owned = fixed
    if not keep_repeats:
        owned = tuple(dict.fromkeys(owned))
    topics = tuple(dict.fromkeys(m.topics))
    rack = m.rack or None
    if owned == m.owned_partitions and topics == m.topics and rack == m.rack or \
            not uses_owned and topics == m.topics and rack == m.rack:
        return m
    return MemberSubscription(m.member_id, topics, m.group_instance_id, owned, m.generation, rack)


def assign(assignor: str, partitions_per_topic: Mapping[str, int],
           members: Sequence[MemberSubscription],
           partition_racks: Mapping[str, Sequence[Sequence[str]]] | None = None,
           topic_ids: Mapping[str, str] | None = None, *, release: str = ASSIGNOR_RELEASE,
           assignable: Mapping[str, Sequence[int]] | None = None,
           _prefer_rack_aware: bool = False) -> dict[str, list[tuple[str, int]]]:
    """Compute the assignment Kafka's ``assignor`` produces; every member is present and every
    list is sorted by (topic, partition).  ``release``: the Kafka release whose rules to follow, one of
    :data:`SERVER_ASSIGNOR_RELEASES` for the server assignors (the client assignors follow
    :data:`ASSIGNOR_RELEASE` only).  ``assignable`` (``simple`` only): ``{topic: [partition, ...]}``, the
    partitions the coordinator lets the share assignor hand out (those whose share-group state is initialised; a
    topic not named: none), None for all.  ``_prefer_rack_aware`` mirrors Kafka's test-only
    ``preferRackAwareLogic`` switch (used by the ported Kafka tests only)."""
    registry = _registry()
    if assignor not in registry:
        raise UnknownAssignor(
            f"unknown assignor {assignor!r}; known: {', '.join(ASSIGNOR_NAMES)}")
    known = SERVER_ASSIGNOR_RELEASES if assignor in SERVER_ASSIGNORS else (ASSIGNOR_RELEASE,)
    if release not in known:
        raise AssignmentInputError(f"release {release!r}: the {assignor} assignor follows Kafka "
                                   f"{' or '.join(known)}")
    if not isinstance(partitions_per_topic, Mapping):
        raise AssignmentInputError("partitions_per_topic must be an object {topic: count}")
    for t, n in partitions_per_topic.items():
        if not isinstance(t, str) or not _is_int(n) or n < 0:
            raise AssignmentInputError(
                f"partitions_per_topic[{t!r}] must be a non-negative integer, got {n!r}")
    # range / roundrobin / server-range never look at owned partitions: not even validated
    # a claim listed twice: the sticky assignors treat it as conflicting with itself, and the uniform one sizes the
    # set it copies a member's target partitions into for the whole list
    norm = [_normalize_member(m, assignor in _USES_OWNED, assignor in _KEEPS_REPEATS) for m in members]
    ids = [m.member_id for m in norm]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise AssignmentInputError(f"duplicate member_id(s): {dup}")
    # A topic the cluster does not have (deleted, or not created yet) is ignored, as Kafka does: its client
    # assignors see no metadata for it, the coordinator resolves no id for it.
    norm = [m if all(t in partitions_per_topic for t in m.topics) else
            replace(m, topics=tuple(t for t in m.topics if t in partitions_per_topic), subscribed=m.topics)
            for m in norm]
    racks = None
    if partition_racks is not None:
        if not isinstance(partition_racks, Mapping):
            raise AssignmentInputError("partition_racks must be an object {topic: [[rack, ...], ...]}")
        racks = {}
        for t, per in partition_racks.items():
            if t not in partitions_per_topic:
                continue  # racks of a topic nobody can be assigned are irrelevant
            if isinstance(per, (str, bytes)) or not isinstance(per, Sequence) or \
                    len(per) != partitions_per_topic[t]:
                raise AssignmentInputError(
                    f"partition_racks[{t!r}] must list the replica racks of each of its "
                    f"{partitions_per_topic[t]} partitions")
            rows = []
            for p, rs in enumerate(per):
                if isinstance(rs, (str, bytes)) or not isinstance(rs, Sequence) or \
                        not all(isinstance(r, str) for r in rs):
                    raise AssignmentInputError(
                        f"partition_racks[{t!r}][{p}] must be a list of rack names")
                rows.append(list(rs))
            racks[t] = rows
    if assignable is not None:
        if not isinstance(assignable, Mapping) or not all(
                isinstance(t, str) and not isinstance(ps, (str, bytes)) and isinstance(ps, Sequence)
                and all(_is_int(p) for p in ps) for t, ps in assignable.items()):
            raise AssignmentInputError("assignable_partitions must be an object {topic: [partition, ...]}")
        if assignor not in SHARE_ASSIGNORS:
            raise AssignmentInputError(f"assignable_partitions: only the share assignors take them, not {assignor}")
    if topic_ids is not None:
        from ._java import Uuid
        if not isinstance(topic_ids, Mapping):
            raise AssignmentInputError("topic_ids must be an object {topic: base64 uuid}")
        for t, u in topic_ids.items():
            try:
                Uuid(u)
            except ValueError as exc:
                raise AssignmentInputError(f"topic_ids[{t!r}]: {exc}") from None
    if not norm:
        return {}  # no member, nothing to assign (every assignor of Kafka's answers an empty assignment)
    subscribed = {t for m in norm for t in m.topics}
    ppt = {t: n for t, n in partitions_per_topic.items() if t in subscribed}
    if assignor in CLIENT_ASSIGNORS:
        # AbstractPartitionAssignor: topics without partitions are left out of the metadata.
        ppt = {t: n for t, n in ppt.items() if n > 0}
    extra = {"assignable": assignable} if assignor in SHARE_ASSIGNORS else {}
    result = registry[assignor](ppt, norm, partition_racks=racks, **extra,
                                topic_ids=dict(topic_ids) if topic_ids else None,
                                prefer_rack_aware=_prefer_rack_aware, release=release)
    return {m.member_id: sorted(result.get(m.member_id, ())) for m in norm}




def _case_members(raw) -> list[MemberSubscription]:
    if not isinstance(raw, list):
        raise AssignmentInputError("'members' must be a list of objects")
    out = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict):
            raise AssignmentInputError(f"members[{i}] must be an object")
        if "member_id" not in m or not isinstance(m["member_id"], str):
            raise AssignmentInputError(f"members[{i}].member_id must be a string")
        where = f"member {m['member_id']!r}"
        topics = m.get("topics")
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise AssignmentInputError(f"{where}: 'topics' must be a list of strings")
        gid = m.get("group_instance_id")
        if gid is not None and not isinstance(gid, str):
            raise AssignmentInputError(f"{where}: 'group_instance_id' must be a string or null")
        owned = m.get("owned_partitions") or []
        if not isinstance(owned, list):
            raise AssignmentInputError(f"{where}: 'owned_partitions' must be a list of [topic, partition]")
        tps = []
        for tp in owned:
            if not (isinstance(tp, list) and len(tp) == 2 and isinstance(tp[0], str) and _is_int(tp[1])):
                raise AssignmentInputError(
                    f"{where}: owned partition {tp!r} must be [topic (string), partition (integer)]")
            tps.append((tp[0], tp[1]))
        gen = m.get("generation")
        if gen is not None and not _is_int(gen):
            raise AssignmentInputError(f"{where}: 'generation' must be an integer or null")
        rack = m.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise AssignmentInputError(f"{where}: 'rack' must be a string or null")
        out.append(MemberSubscription(m["member_id"], tuple(topics), gid, tuple(tps), gen, rack))
    return out


def run_assign_case(case: Any) -> dict[str, list[list]]:
    """Contract section 3 ``assign``: CASE object in, ``{member_id: [[topic, partition], ...]}``
    out (sorted).  Raises :class:`AssignmentInputError` (or its subclass
    :class:`UnknownAssignor`) with a readable message on bad input.  Extension: an optional
    ``topic_ids`` object ``{topic: base64 uuid}`` for the server-side assignors, an optional ``release``
    (one of :data:`SERVER_ASSIGNOR_RELEASES` for them, default :data:`ASSIGNOR_RELEASE`), and for ``simple`` an
    optional ``assignable_partitions`` object ``{topic: [partition, ...]}``."""
    if not isinstance(case, dict):
        raise AssignmentInputError("the case must be a JSON object")
    name = case.get("assignor")
    if not isinstance(name, str):
        raise AssignmentInputError("'assignor' must be a string, one of: " + ", ".join(ASSIGNOR_NAMES))
    if name not in ASSIGNOR_NAMES:
        raise UnknownAssignor(f"unknown assignor {name!r}; known: {', '.join(ASSIGNOR_NAMES)}")
    ppt = case.get("partitions_per_topic")
    if not isinstance(ppt, dict):
        raise AssignmentInputError("'partitions_per_topic' must be an object {topic: count}")
    for t, n in ppt.items():
        if not _is_int(n) or n < 0:
            raise AssignmentInputError(
                f"partitions_per_topic[{t!r}] must be a non-negative integer, got {n!r}")
    members = _case_members(case.get("members"))
    racks = case.get("partition_racks")
    if racks is not None and not isinstance(racks, dict):
        raise AssignmentInputError("'partition_racks' must be an object {topic: [[rack, ...], ...]}")
    topic_ids = case.get("topic_ids")
    if topic_ids is not None and not isinstance(topic_ids, dict):
        raise AssignmentInputError("'topic_ids' must be an object {topic: base64 uuid}")
    release = case.get("release", ASSIGNOR_RELEASE)
    if not isinstance(release, str):
        raise AssignmentInputError("'release' must be a string, one of: " + ", ".join(SERVER_ASSIGNOR_RELEASES))
    result = assign(name, ppt, members, racks, topic_ids, release=release,
                    assignable=case.get("assignable_partitions"))
    return {mid: [[t, p] for t, p in tps] for mid, tps in result.items()}
