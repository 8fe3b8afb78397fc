"""KIP-932 share groups: the group coordinator's ``simple`` assignor (SimpleAssignor) of Kafka 4.4.

A share group's members consume partitions together, so a partition may be in several members' assignments. The
assignor is sticky: it starts from each member's current target assignment and

* homogeneous subscriptions (every member names the same topics): with N assignable partitions and M members, each
  partition wants ``desired_sharing = ceil(M / N)`` holders and member ``i`` (in the coordinator's order)
  ``ceil(q * (i + 1)) - ceil(q * i)`` partitions, ``q = desired_sharing * N / M`` (a double, as in Java). It drops
  the partitions of topics the group no longer subscribes to, trims members holding more than their count, then
  partitions held by more than ``desired_sharing`` members, and hands out the partitions with too few holders to the
  members with too few partitions, cycling over them (a partition no unfilled member can take stays short);
* heterogeneous: the same, topic by topic over that topic's subscribers (a member not subscribed to a topic wants
  none of it); a topic no member subscribes to any more is left as it was in the members' assignments.

Only the *assignable* partitions are handed out: the coordinator passes the partitions whose share-group state is
initialised (``assignable``: ``{topic: partitions}``; None: every partition). Racks play no part. Tie-breaks follow
the JVM's HashMap / HashSet iteration orders (``_java``), topics by their ids (``topic_ids``; a topic whose id is
not given: its name's hash stands in). Kafka fails (NoSuchElementException) when the last unfilled member is filled while a
partition still wants holders: :class:`KafkaAssignorFailure` here too.
"""
from __future__ import annotations

import math

from . import KafkaAssignorFailure
from ._java import JavaHashSet, Uuid, hashmap_order, int_hash, string_hash, table_size_for, _to_int32
from .java_collections import JavaHashMap
from .server import _int_set_order, coordinator_member_order


def _helper_capacity(n: int) -> int:
    """Table size of ``AssignorHelpers.newHashMap(n)`` / ``newHashSet(n)``: ``(int) ((n + 1) / 0.75f + 1)``."""
    return table_size_for(int((n + 1) / 0.75 + 1))


class _Ids:
    """Java hashes of topic ids (a topic whose id is not given: its name's hash stands in) and of
    ``TopicIdPartition`` (a record: 31 * topicId.hashCode() + partition)."""

    def __init__(self, topic_ids: dict | None):
        self.hashes = {t: Uuid(u).java_hash() for t, u in (topic_ids or {}).items()}

    def topic(self, t) -> int:
        h = self.hashes.get(t)
        return string_hash(t) if h is None else h

    def tp(self, tp) -> int:
        return _to_int32(31 * self.topic(tp[0]) + tp[1])


def _old_assignment(member, ids: _Ids):
    """A member's current target as the coordinator holds it: topics in its HashMap's order, each topic's partitions
    in the order of the HashSet copied from the record's list."""
    lists: dict = {}
    for t, p in member.owned_partitions:
        lists.setdefault(t, []).append(p)
    return {t: _int_set_order(lists[t], listed=len(lists[t])) for t in hashmap_order(list(lists), ids.topic)}


def _topic_set_order(names, ids: _Ids):
    """Iteration order of a ``HashSet<Uuid>`` filled with these topics in this order."""
    return hashmap_order(list(names), ids.topic)


def _desired_counts(sharing: int, n_partitions: int, n_members: int) -> list[int]:
    precise = sharing * n_partitions / n_members
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(n_members)]


class _Unfilled:
    """An iterator over a ``HashSet<Integer>`` of member indices smaller than its table (ascending order) that can
    remove the member it is on and start over."""

    def __init__(self, members):
        self.order = sorted(members)
        self.pos = 0

    def has_next(self) -> bool:
        return self.pos < len(self.order)

    def next(self) -> int:
        if not self.has_next():
            raise KafkaAssignorFailure("Kafka's simple assignor fails (NoSuchElementException): every member filled "
                                       "while a partition still wants members")
        self.pos += 1
        return self.order[self.pos - 1]

    def remove_current(self) -> None:
        self.pos -= 1
        del self.order[self.pos]

    def restart(self) -> None:
        self.pos = 0


def _assign_remaining(by_partition_order, want, unfilled: _Unfilled, take, count_of, desired):
    """The hand-out both builders share: partitions in their map's order, each short of `want` holders offered to the
    unfilled members in turn (its holders set is not updated as it goes, as in Kafka)."""
    assigned_this_round = False
    for key, holders in by_partition_order:
        if len(holders) < want:
            to_make = want - len(holders)
            while to_make > 0:
                if not unfilled.has_next():
                    if not assigned_this_round:
                        break
                    unfilled.restart()
                    assigned_this_round = False
                i = unfilled.next()
                if i not in holders:
                    take(i, key)
                    to_make -= 1
                    assigned_this_round = True
                    if count_of(i) >= desired[i]:
                        unfilled.remove_current()
        if not unfilled.order:
            break


def simple_assign(partitions_per_topic, members, topic_ids=None, member_order=None, assignable=None, **_):
    """``assignable``: ``{topic: iterable of partitions}`` the coordinator lets the assignor hand out (a topic not
    named: none of its partitions); None: all. ``member_order`` (callable) as for the uniform assignor."""
    out = {m.member_id: [] for m in members}
    if not members:
        return out
    ordered = member_order(members) if member_order else coordinator_member_order(members)
    ids = _Ids(topic_ids)
    allowed = None if assignable is None else {t: set(ps) for t, ps in assignable.items()}

    def targets(t):
        return [p for p in range(partitions_per_topic[t]) if allowed is None or p in allowed.get(t, ())]

    old = [_old_assignment(m, ids) for m in ordered]
    # the coordinator tells equal subscriptions by the topic names the members subscribe to, topics the cluster does
    # not have included (ModernGroup.subscriptionType)
    named = [set(m.topics if m.subscribed is None else m.subscribed) for m in ordered]
    if all(n == named[0] for n in named):
        result = _homogeneous(ordered, old, ids, targets)
    else:
        result = _heterogeneous(ordered, old, ids, targets)
    for i, m in enumerate(ordered):
        mine = result.get(i) if result is not None else {}
        out[m.member_id] = sorted((t, p) for t, ps in (mine or {}).items() for p in ps)
    return out


def _homogeneous(ordered, old, ids: _Ids, targets):
    subscribed = _topic_set_order(ordered[0].topics, ids)
    if not subscribed:
        return None
    sub_set = set(subscribed)
    target = [(t, p) for t in subscribed for p in targets(t)]
    n, m_count = len(target), len(ordered)
    sharing = 0 if n == 0 else (m_count + n - 1) // n
    desired = _desired_counts(sharing, n, m_count)
    # TopicIdPartition -> its holders (member indices), filled by computeIfAbsent as Kafka does
    by_partition = JavaHashMap(ids.tp, _helper_capacity(n))
    by_member = JavaHashMap(int_hash, _helper_capacity(m_count))
    new: dict = {}
    unfilled, overfilled = set(), set()
    for i, assignment in enumerate(old):
        count = 0
        for t, parts in assignment.items():
            if t not in sub_set:
                continue
            for p in parts:
                count += 1
                by_partition.compute_if_absent((t, p), lambda: JavaHashSet(int_hash)).add(i)
                by_member.compute_if_absent(i, lambda: JavaHashSet(ids.tp)).add((t, p))
        # the member's new assignment: its current one less the topics the group no longer subscribes to
        new[i] = {t: list(ps) for t, ps in assignment.items() if t in sub_set}
        if count < desired[i]:
            unfilled.add(i)
        elif count > desired[i]:
            overfilled.add(i)
    for i in sorted(overfilled):  # revoke from members holding too many
        mine = by_member[i]
        if len(mine) > desired[i]:
            for tp in list(mine):
                new[i][tp[0]].remove(tp[1])
                by_partition[tp].remove(i)
                mine.remove(tp)
                if len(mine) == desired[i]:
                    break
    for tp in by_partition.keys():  # revoke from partitions held by too many
        holders = by_partition[tp]
        count = len(holders)
        if count > sharing:
            for i in list(holders):
                parts = new[i].get(tp[0])
                if parts is not None and tp[1] in parts:
                    parts.remove(tp[1])
                    count -= 1
                    holders.remove(i)
                    by_member[i].remove(tp)
                    unfilled.add(i)
                if count <= sharing:
                    break
    for tp in target:
        by_partition.compute_if_absent(tp, lambda: JavaHashSet(int_hash))
    if unfilled:
        def take(i, tp):
            parts = new[i].setdefault(tp[0], [])
            if tp[1] not in parts:
                parts.append(tp[1])
            by_member.compute_if_absent(i, lambda: JavaHashSet(ids.tp)).add(tp)

        _assign_remaining(((tp, by_partition[tp]) for tp in by_partition.keys()), sharing, _Unfilled(unfilled),
                          take, lambda i: len(by_member[i]), desired)
    return new


def _heterogeneous(ordered, old, ids: _Ids, targets):
    added = [t for m in ordered for t in _topic_set_order(m.topics, ids)]
    group_topics = hashmap_order(added, ids.topic)  # a HashSet<Uuid> filled member by member
    if not group_topics:
        return None
    m_count = len(ordered)
    subscribers = {t: [i for i, m in enumerate(ordered) if t in set(m.topics)] for t in group_topics}
    new: dict = {}  # member index -> its new assignment, made when first changed

    def new_of(i):
        if i not in new:
            new[i] = {t: list(ps) for t, ps in old[i].items()}
        return new[i]

    for t in group_topics:
        subs = subscribers[t]
        target = targets(t)
        n, s = len(target), len(subs)
        sharing = 0 if n == 0 else (s + n - 1) // n
        desired = [0] * m_count
        for k, c in enumerate(_desired_counts(sharing, n, s)):
            desired[subs[k]] = c
        by_partition = JavaHashMap(int_hash, _helper_capacity(n))
        by_member = JavaHashMap(int_hash, _helper_capacity(s))
        for i, assignment in enumerate(old):
            for p in assignment.get(t, ()):
                by_partition.compute_if_absent(p, lambda: JavaHashSet(int_hash)).add(i)
                by_member.compute_if_absent(i, lambda: JavaHashSet(int_hash)).add(p)
        for i in by_member.keys():  # members holding too many
            mine = by_member[i]
            if len(mine) > desired[i]:
                for p in list(mine):
                    if len(mine) <= desired[i]:
                        break
                    by_partition[p].remove(i)
                    mine.remove(p)
                    new_of(i)[t].remove(p)
        for p in by_partition.keys():  # partitions held by too many
            holders = by_partition[p]
            count = len(holders)
            if count > sharing:
                for i in list(holders):
                    parts = new_of(i).get(t)
                    if parts is not None and p in parts:
                        parts.remove(p)
                        count -= 1
                        holders.remove(i)
                        by_member[i].remove(p)
                    if count <= sharing:
                        break
        for p in target:
            by_partition.compute_if_absent(p, lambda: JavaHashSet(int_hash))
        unfilled = [i for i in subs if len(by_member.get(i, ())) < desired[i]]

        def take(i, p, t=t):
            parts = new_of(i).setdefault(t, [])
            if p not in parts:
                parts.append(p)
            by_member.compute_if_absent(i, lambda: JavaHashSet(int_hash)).add(p)

        _assign_remaining(((p, by_partition[p]) for p in by_partition.keys()),
                          sharing, _Unfilled(unfilled), take, lambda i: len(by_member[i]), desired)
    return {i: new.get(i, old[i]) for i in range(m_count)}
