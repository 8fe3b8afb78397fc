"""What Kafka's AbstractPartitionAssignor gives the client-side assignors (range, round robin, sticky): the leader's member
order and rack awareness."""
from __future__ import annotations

from typing import Sequence

from ._java import hashmap_order, jkey, string_hash

TP = tuple  # (topic, partition)


def member_hash_order(members: Sequence) -> list:
    """Members in the iteration order of the consumer leader's ``HashMap<memberId, Subscription>``
    (filled in the order the JoinGroup response lists them, i.e. the input order)."""
    by_id = {m.member_id: m for m in members}
    return [by_id[mid] for mid in hashmap_order([m.member_id for m in members], string_hash)]


def member_info_key(m) -> tuple:
    """``AbstractPartitionAssignor.MemberInfo`` order: static members first, by group instance
    id; then dynamic members by member id (Java string order)."""
    if m.group_instance_id is not None:
        return (0, jkey(m.group_instance_id))
    return (1, jkey(m.member_id))


def partition_rack_sets(partitions_per_topic: dict, partition_racks: dict | None) -> dict:
    """{topic: [frozenset(racks) per partition]}; partitions without rack data get an empty set
    (a replica whose broker has no rack, as Kafka's Node.rack() == null)."""
    out = {}
    for topic, n in partitions_per_topic.items():
        racks = (partition_racks or {}).get(topic)
        if racks is None:
            out[topic] = [frozenset()] * n
        else:
            out[topic] = [frozenset(r for r in racks[p] if r is not None) for p in range(n)]
    return out


def use_rack_aware(consumer_racks: set, all_partition_racks: set, racks_per_partition,
                   prefer: bool = False) -> bool:
    """AbstractPartitionAssignor.useRackAwareAssignment (``prefer`` is Kafka's test-only
    preferRackAwareLogic switch)."""
    if not consumer_racks or consumer_racks.isdisjoint(all_partition_racks):
        return False
    if prefer:
        return True
    return not all(r == all_partition_racks for r in racks_per_partition)


def members_in_info_order(members: Sequence) -> list:
    """Members sorted like Kafka's ``Collections.sort(List<MemberInfo>)`` of the leader's map:
    equal keys (only possible with duplicate group instance ids) keep the HashMap order."""
    ids = [m.group_instance_id for m in members if m.group_instance_id is not None]
    base = member_hash_order(members) if len(ids) != len(set(ids)) else list(members)
    return sorted(base, key=member_info_key)
