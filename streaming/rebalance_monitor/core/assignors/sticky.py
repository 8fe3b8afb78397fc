"""``sticky`` (StickyAssignor) and ``cooperative-sticky`` (CooperativeStickyAssignor).

A re-implementation of Kafka's AbstractStickyAssignor:

* Ownership claims: each member reports the partitions it owned and its generation (the
  StickyAssignor reads both from its subscription user data, the cooperative one from the
  subscription's owned partitions / generation).  When several members claim a partition the
  highest generation wins; two claims with the same generation invalidate the partition
  (nobody keeps it, and the cooperative assignor withholds it for one round).
* Equal subscriptions -> the "constrained" builder: members keep up to their quota of owned
  partitions (min quota, or max quota while fewer than ``total % members`` members hold
  max quota - decided in the leader's HashMap order), then the unassigned partitions (topics
  sorted, partitions ascending) are dealt round-robin to the sorted unfilled members.
* Otherwise the "general" builder: keep valid owned partitions, give each unassigned partition
  to the least loaded eligible member, then move partitions until balanced, preferring the
  previous owner of a lower generation and avoiding back-and-forth moves; a reassignment that
  does not improve the balance score is reverted.
* Rack awareness (KIP-881) when member and replica racks are known and not all partitions are
  on all racks.
* cooperative-sticky: a partition that changes owner is left out of the new owner's
  assignment this round (revoke first, assign in the follow-up rebalance).

This module resolves the claims and racks and picks the builder: ``sticky_constrained`` and
``sticky_general`` hold the two builders.  Where Kafka's own assignor throws on an input, these raise
:class:`KafkaAssignorFailure`.
"""
from __future__ import annotations

from collections import defaultdict

from .abstract_partition_assignor import member_hash_order, partition_rack_sets, use_rack_aware
from .sticky_constrained import Constrained
from .sticky_general import DEFAULT_GENERATION, General


class _RackInfo:
    def __init__(self, partitions_per_topic, ordered_members, partition_racks, prefer=False):
        by_rack = defaultdict(list)
        for m in ordered_members:
            if m.rack:
                by_rack[m.rack].append(m.member_id)
        self.consumer_racks: dict = {}
        self.partition_racks: dict = {}
        self.num_consumers_by_partition: dict = {}
        if not by_rack:
            return
        sets = partition_rack_sets(partitions_per_topic, partition_racks)
        local = {}
        all_racks = set()
        for topic, per in sets.items():
            for p, racks in enumerate(per):
                local[(topic, p)] = racks
                all_racks |= racks
        if use_rack_aware(set(by_rack), all_racks, local.values(), prefer):
            for rack, ms in by_rack.items():
                for mid in ms:
                    self.consumer_racks[mid] = rack
            self.partition_racks = local
        self.num_consumers_by_partition = {
            tp: sum(len(by_rack.get(r, ())) for r in racks) for tp, racks in local.items()}

    def racks_mismatch(self, consumer, tp) -> bool:
        rack = self.consumer_racks.get(consumer)
        if rack is None:
            return False
        racks = self.partition_racks.get(tp)
        return racks is None or rack not in racks

    def sort_by_rack_consumers(self, partitions):
        if not self.num_consumers_by_partition:
            return partitions
        ncp = self.num_consumers_by_partition
        return sorted(partitions, key=lambda tp: ncp.get(tp, 0))

    def next_rack_consumer(self, tp, consumers, first_index) -> int:
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        n = len(consumers)
        for i in range(n):
            idx = (first_index + i) % n
            rack = self.consumer_racks.get(consumers[idx])
            if rack is not None and rack in racks:
                return idx
        return -1


def _resolve_ownership(all_topics, ordered):
    """allSubscriptionsEqual(): returns (equal, owned map in leader order, doubly claimed set)."""
    equal = True
    first_topics: set = set()
    owned: dict = {}
    multi = set()
    owner_of: dict = {}
    gen = {m.member_id: (m.generation if m.generation is not None else DEFAULT_GENERATION)
           for m in ordered}
    for m in ordered:
        # Kafka quirk kept on purpose: the reference set is the first non-empty subscription.
        sent = m.subscribed if m.subscribed is not None else m.topics  # as the member sent it
        if not first_topics:
            first_topics = set(sent)
        elif equal and not (len(sent) == len(first_topics) and first_topics.issuperset(sent)):
            equal = False
        mine = []
        owned[m.member_id] = mine
        my_gen = gen[m.member_id]
        # as Kafka: only the topic is checked (a claim beyond the topic's partition count stays), and a claim
        # listed twice by one member conflicts with itself like two members' claims in one generation
        for tp in m.owned_partitions:
            if tp[0] not in all_topics:
                continue
            other = owner_of.get(tp)
            if other is None:
                mine.append(tp)
                owner_of[tp] = m.member_id
            else:
                other_gen = gen[other]
                if my_gen == other_gen:
                    multi.add(tp)
                    if tp in owned[other]:
                        owned[other].remove(tp)
                    owner_of[tp] = m.member_id
                elif my_gen > other_gen:
                    mine.append(tp)
                    if tp in owned[other]:
                        owned[other].remove(tp)
                    owner_of[tp] = m.member_id
    return equal, owned, multi


def _sticky_core(partitions_per_topic, members, partition_racks, prefer=False):
    """Returns (assignment, partitions transferring ownership or None for the general case)."""
    ppt = {t: n for t, n in partitions_per_topic.items() if n > 0}
    ordered = member_hash_order(members)
    rack = _RackInfo(ppt, ordered, partition_racks, prefer)
    equal, owned, multi = _resolve_ownership(set(ppt), ordered)
    if equal:
        b = Constrained(ppt, rack, owned, multi)
        return b.build(), b.transferring
    max_gen = max([DEFAULT_GENERATION] + [m.generation for m in members if m.generation is not None])
    return General(ppt, rack, owned, ordered).build(max_gen), None


def sticky_assign(partitions_per_topic, members, partition_racks=None, prefer_rack_aware=False, **_):
    assignment, _t = _sticky_core(partitions_per_topic, members, partition_racks, prefer_rack_aware)
    return {m.member_id: list(assignment.get(m.member_id, [])) for m in members}


def cooperative_sticky_assign(partitions_per_topic, members, partition_racks=None,
                              prefer_rack_aware=False, **_):
    assignment, transferring = _sticky_core(partitions_per_topic, members, partition_racks,
                                            prefer_rack_aware)
    if transferring is None:
        added = {}
        revoked = set()
        for m in member_hash_order(members):  # Kafka's HashMap of the assignment: the last one adding wins
            got = assignment.get(m.member_id, [])
            owned = set(m.owned_partitions)
            for tp in got:
                if tp not in owned:
                    added[tp] = m.member_id
            got_set = set(got)
            for tp in m.owned_partitions:
                if tp not in got_set:
                    revoked.add(tp)
        transferring = {tp: c for tp, c in added.items() if tp in revoked}
    out = {m.member_id: list(assignment.get(m.member_id, [])) for m in members}
    for tp, c in transferring.items():
        if tp in out[c]:
            out[c].remove(tp)  # List.remove: the first occurrence
    return out
