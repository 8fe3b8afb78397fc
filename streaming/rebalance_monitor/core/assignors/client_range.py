"""Client-side ``range`` (RangeAssignor) and ``roundrobin`` (RoundRobinAssignor).

Range works per topic: the topic's subscribers, static members first (by group instance id)
then dynamic ones (by member id), each get ``n // k`` partitions and the first ``n % k`` one
more.  KIP-881: when members report racks and partition replicas have racks and not every
partition is on every rack, a first pass hands out partitions only to members on a rack
holding a replica (within the same per-member limits); topics with the same subscribers and
the same partition count are co-partitioned (partition i of all of them go to one member).
The remaining partitions then go out by plain ranges.
"""
from __future__ import annotations

from collections import defaultdict

from .abstract_partition_assignor import members_in_info_order, partition_rack_sets, use_rack_aware


class _TopicState:
    __slots__ = ("topic", "consumers", "consumer_rack", "partition_racks", "unassigned",
                 "num_assigned", "per_consumer", "remaining_extra", "needs_rack_aware")

    def __init__(self, topic, n, members_sorted, rack_sets, prefer=False):
        self.topic = topic
        self.consumers = [m.member_id for m in members_sorted]
        self.consumer_rack = {m.member_id: (m.rack or None) for m in members_sorted}
        self.unassigned = dict.fromkeys(range(n))  # ordered set of partition numbers
        self.num_assigned = dict.fromkeys(self.consumers, 0)
        k = len(self.consumers)
        self.per_consumer = n // k if k else 0
        self.remaining_extra = n % k if k else 0
        consumer_racks = {r for r in self.consumer_rack.values() if r}
        if consumer_racks:
            self.partition_racks = rack_sets
            all_racks = set().union(*rack_sets) if rack_sets else set()
        else:
            self.partition_racks = None
            all_racks = set()
        self.needs_rack_aware = use_rack_aware(consumer_racks, all_racks,
                                               self.partition_racks or [], prefer)

    def racks_match(self, consumer, p) -> bool:
        rack = self.consumer_rack[consumer]
        if not rack:
            return True
        return self.partition_racks is not None and rack in self.partition_racks[p]

    def max_assignable(self, consumer) -> int:
        extra = 1 if self.remaining_extra > 0 else 0
        return max(0, self.per_consumer + extra - self.num_assigned[consumer])

    def on_assigned(self, consumer, parts) -> None:
        self.num_assigned[consumer] += len(parts)
        if self.num_assigned[consumer] > self.per_consumer:
            self.remaining_extra -= 1
        for p in parts:
            self.unassigned.pop(p, None)


def _assign(consumer, parts, state, out):
    out[consumer].extend((state.topic, p) for p in parts)
    state.on_assigned(consumer, parts)


def _assign_ranges(state, may_assign, out):
    for consumer in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        parts = []
        if limit > 0:
            for p in state.unassigned:
                if may_assign(consumer, p):
                    parts.append(p)
                    if len(parts) >= limit:
                        break
        if parts:
            _assign(consumer, parts, state, out)


def _assign_co_partitioned(consumers, num_partitions, states, out):
    remaining = list(consumers)
    for p in range(num_partitions):
        chosen = None
        for c in remaining:
            if all(t.racks_match(c, p) and t.max_assignable(c) > 0 for t in states):
                chosen = c
                break
        if chosen is None:
            continue
        for t in states:
            _assign(chosen, [p], t, out)
        if not any(t.max_assignable(chosen) > 0 for t in states):
            remaining.remove(chosen)
            if not remaining:
                break


def range_assign(partitions_per_topic, members, partition_racks=None, prefer_rack_aware=False, **_):
    # Subscribers of each topic in MemberInfo order (filtering one stable sort of all members
    # gives the same order as Kafka's per-topic stable sort).
    per_topic = defaultdict(list)
    for m in members_in_info_order(members):
        for t in m.topics:
            per_topic[t].append(m)
    out = {m.member_id: [] for m in members}
    if not any(m.rack for m in members):
        # No member rack: plain ranges (the rack-aware pass can never apply).
        for topic, n in partitions_per_topic.items():
            subs = per_topic.get(topic, [])
            if n <= 0 or not subs:
                continue
            q, extra = divmod(n, len(subs))
            start = 0
            for i, m in enumerate(subs):
                end = start + q + (1 if i < extra else 0)
                out[m.member_id].extend((topic, p) for p in range(start, end))
                start = end
        return out
    rack_sets = partition_rack_sets(partitions_per_topic, partition_racks)
    states = []
    for topic, n in partitions_per_topic.items():
        if n <= 0:
            continue
        subs = per_topic.get(topic, [])
        states.append(_TopicState(topic, n, subs, rack_sets[topic], prefer_rack_aware))
    if any(s.needs_rack_aware for s in states):
        groups: dict = {}
        for s in states:
            key = tuple((c, s.consumer_rack[c]) for c in s.consumers)
            nkey = len(s.partition_racks) if s.partition_racks is not None else 0
            groups.setdefault(key, {}).setdefault(nkey, []).append(s)
        for key, by_count in groups.items():
            for num, co in by_count.items():
                if len(co) > 1:
                    _assign_co_partitioned([c for c, _ in key], num, co, out)
                elif co[0].needs_rack_aware:
                    _assign_ranges(co[0], co[0].racks_match, out)
    for s in states:
        _assign_ranges(s, lambda c, p: True, out)
    return out


def roundrobin_assign(partitions_per_topic, members, **_):
    ordered = members_in_info_order(members)
    out = {m.member_id: [] for m in members}
    if not ordered:
        return out
    topics = sorted({t for m in members for t in m.topics}, key=_jk)
    subs = {m.member_id: set(m.topics) for m in ordered}
    idx = 0
    k = len(ordered)
    for topic in topics:
        n = partitions_per_topic.get(topic)
        if n is None:
            continue
        for p in range(n):
            while topic not in subs[ordered[idx].member_id]:
                idx = (idx + 1) % k
            out[ordered[idx].member_id].append((topic, p))
            idx = (idx + 1) % k
    return out


def _jk(s):
    from ._java import jkey
    return jkey(s)
