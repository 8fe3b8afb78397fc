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
"""
from __future__ import annotations

import bisect
from collections import defaultdict

from . import KafkaAssignorFailure
from ._common import member_hash_order, partition_rack_sets, use_rack_aware
from ._java import JavaHashSet, jkey, tp_hash

DEFAULT_GENERATION = -1


def _tp_key(tp):
    return (jkey(tp[0]), tp[1])


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


def _difference(all_sorted, assigned_sorted) -> list:
    """Kafka's getUnassignedPartitions: one pass over both sorted lists, stepping through the assigned ones on a
    match. A claim on a partition beyond its topic's count (or a partition kept twice) never matches, so every
    partition after it counts as unassigned, as in Kafka."""
    out = []
    it = iter(assigned_sorted)
    nxt = next(it, None)
    for tp in all_sorted:
        if nxt is None or tp != nxt:
            out.append(tp)
        else:
            nxt = next(it, None)
    return out


class _Constrained:
    def __init__(self, ppt, rack, owned, multi):
        self.ppt = ppt
        self.rack = rack
        self.current = owned  # member -> owned (leader HashMap order)
        self.multi = multi
        self.maybe_revoked: dict = {}
        self.transferring: dict = {}
        self.under: list = []
        self.exact: list = []
        total = sum(ppt.values())
        n = len(owned)
        self.min_quota = total // n
        self.max_quota = -(-total // n)
        self.expected_over = total % n
        self.current_over = 0
        self.assignment = {c: [] for c in owned}
        self.assigned: list = []

    def build(self):
        self._assign_owned()
        unassigned = self._unassigned()
        self.under.sort(key=jkey)
        self.exact.sort(key=jkey)
        unassigned = self.rack.sort_by_rack_consumers(unassigned)
        unassigned = self._rack_round_robin(unassigned)
        self._round_robin(unassigned)
        self._verify_unfilled()
        return self.assignment

    def _verify_unfilled(self):
        """Kafka's verifyUnfilledMembers (reached when claims beyond a topic's count took up room)."""
        if not self.under:
            return
        if self.current_over != self.expected_over:
            raise KafkaAssignorFailure("Kafka's sticky assignor fails (IllegalStateException): We haven't reached the "
                                       "expected number of members with more than the minQuota partitions, but no "
                                       "more partitions to be assigned")
        for c in self.under:
            if len(self.assignment[c]) != self.min_quota:
                raise KafkaAssignorFailure(f"Kafka's sticky assignor fails (IllegalStateException): Consumer: [{c}] "
                                           "doesn't reach minQuota partitions, and no more partitions to be assigned")

    def _assign_owned(self):
        minq, maxq = self.min_quota, self.max_quota
        for consumer, owned_list in self.current.items():
            kept = []
            for tp in owned_list:
                if self.rack.racks_mismatch(consumer, tp):
                    self.maybe_revoked[tp] = consumer
                else:
                    kept.append(tp)
            kept.sort(key=lambda tp: (tp[1], jkey(tp[0])))
            if self.multi:
                kept = [tp for tp in kept if tp not in self.multi]
            target = self.assignment[consumer]
            if len(kept) < minq:
                target.extend(kept)
                self.assigned.extend(kept)
                self.under.append(consumer)
            elif len(kept) >= maxq and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exact.clear()
                target.extend(kept[:maxq])
                self.assigned.extend(kept[:maxq])
                for tp in kept[maxq:]:
                    self.maybe_revoked[tp] = consumer
            else:
                target.extend(kept[:minq])
                self.assigned.extend(kept[:minq])
                for tp in kept[minq:]:
                    self.maybe_revoked[tp] = consumer
                if self.current_over < self.expected_over:
                    self.exact.append(consumer)

    def _unassigned(self):
        topics = sorted(self.ppt, key=jkey)
        return _difference(((t, p) for t in topics for p in range(self.ppt[t])), sorted(self.assigned, key=_tp_key))

    def _rack_round_robin(self, unassigned):
        rack = self.rack
        if not rack.consumer_racks:
            return unassigned
        minq, maxq = self.min_quota, self.max_quota
        left = []
        nxt = 0
        for tp in unassigned:
            consumer = None
            idx = rack.next_rack_consumer(tp, self.under, nxt)
            if idx >= 0:
                consumer = self.under[idx]
                count = len(self.assignment[consumer]) + 1
                if count >= minq:
                    self.under.remove(consumer)
                    if count < maxq and self.current_over < self.expected_over:
                        self.exact.append(consumer)
                else:
                    idx += 1
                nxt = 0 if not self.under else idx % len(self.under)
            elif self.exact:
                first = rack.next_rack_consumer(tp, self.exact, 0)
                if first >= 0:
                    consumer = self.exact[first]
                    if len(self.assignment[consumer]) + 1 == maxq:
                        del self.exact[first]
                        self.current_over += 1
                        if self.current_over == self.expected_over:
                            self.exact.clear()
            if consumer is not None:
                self._assign_new(tp, consumer)
            else:
                left.append(tp)
        return left

    def _round_robin(self, unassigned):
        minq, maxq = self.min_quota, self.max_quota
        under = self.under
        pos = 0  # iterator cursor into `under`
        for tp in unassigned:
            if pos < len(under):
                consumer = under[pos]
                pos += 1
            elif not under and not self.exact:
                raise KafkaAssignorFailure("Kafka's sticky assignor fails (IllegalStateException): "
                                           "No more unfilled consumers to be assigned")
            elif not under:
                consumer = self.exact.pop(0)
            else:
                pos = 0
                consumer = under[pos]
                pos += 1
            count = self._assign_new(tp, consumer)
            if count == minq:
                # Iterator.remove(): drops the element last returned by the cursor.
                del under[pos - 1]
                pos -= 1
                self.exact.append(consumer)
            elif count == maxq:
                self.current_over += 1

    def _assign_new(self, tp, consumer) -> int:
        lst = self.assignment[consumer]
        lst.append(tp)
        prev = self.maybe_revoked.get(tp)
        if (prev is not None and prev != consumer) or tp in self.multi:
            self.transferring[tp] = consumer
        return len(lst)


class _SortedMembers:
    """TreeSet<String> ordered by (assignment size, member id)."""

    def __init__(self, sizes):
        self._sizes = sizes
        self._keys: list = []
        self._key_of: dict = {}

    def add(self, c):
        if c in self._key_of:
            return
        k = (self._sizes(c), jkey(c), c)
        self._key_of[c] = k
        bisect.insort(self._keys, k)

    def discard(self, c):
        k = self._key_of.pop(c, None)
        if k is not None:
            i = bisect.bisect_left(self._keys, k)
            del self._keys[i]

    def __iter__(self):
        # callers that modify the set stop iterating right after the modification
        return (k[2] for k in self._keys)

    def first(self):
        return self._keys[0][2]

    def last(self):
        return self._keys[-1][2]

    def __contains__(self, c):
        return c in self._key_of


class _Movements:
    """PartitionMovements: remembers who moved what so a partition is not bounced back."""

    def __init__(self):
        self.by_topic: dict = {}  # topic -> {(src, dst): JavaHashSet}
        self.moves: dict = {}  # tp -> (src, dst)

    def _remove_record(self, tp):
        pair = self.moves.pop(tp)
        per = self.by_topic[tp[0]]
        per[pair].remove(tp)
        if not len(per[pair]):
            del per[pair]
        if not per:
            del self.by_topic[tp[0]]
        return pair

    def _add_record(self, tp, pair):
        self.moves[tp] = pair
        per = self.by_topic.setdefault(tp[0], {})
        s = per.get(pair)
        if s is None:
            s = per[pair] = JavaHashSet(lambda x: tp_hash(x[0], x[1]))
        s.add(tp)

    def move(self, tp, old, new):
        if tp in self.moves:
            src, _dst = self._remove_record(tp)
            if src != new:
                self._add_record(tp, (src, new))
        else:
            self._add_record(tp, (old, new))

    def actual_partition_to_move(self, tp, old, new):
        per = self.by_topic.get(tp[0])
        if per is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        s = per.get((new, old))
        if s is None:
            return tp
        return s.first()


class _General:
    def __init__(self, ppt, rack, owned, ordered):
        self.ppt = ppt
        self.rack = rack
        self.ordered = ordered
        self.total = sum(ppt.values())
        self.topic_consumers = {t: [] for t in ppt}
        self.consumer_topics = {}
        for m in ordered:
            mine = []
            self.consumer_topics[m.member_id] = mine
            for t in m.topics:
                if t in ppt:
                    mine.append(t)
                    self.topic_consumers[t].append(m.member_id)
        self.consumer_topic_sets = {c: set(ts) for c, ts in self.consumer_topics.items()}
        self.current = owned
        for m in ordered:
            self.current.setdefault(m.member_id, [])
        self.owner = {}
        for c, tps in self.current.items():
            for tp in tps:
                self.owner[tp] = c
        topics = sorted(self.topic_consumers, key=lambda t: (len(self.topic_consumers[t]), jkey(t)))
        self.sorted_all = [(t, p) for t in topics for p in range(ppt[t])]
        self.tree = _SortedMembers(lambda c: len(self.current[c]))
        self.revocation_required = False
        self.movements = _Movements()
        self.max_size = {c: self._max_assignment_size(ts) for c, ts in self.consumer_topics.items()}

    def _max_assignment_size(self, topics):
        if len(topics) == len(self.ppt):
            return self.total
        return sum(self.ppt[t] for t in topics)

    def build(self, max_generation):
        prev = self._prepopulate(max_generation)
        assigned = self._assign_owned()
        unassigned = self._unassigned(assigned)
        for c in self.current:
            self.tree.add(c)
        self._balance(prev, unassigned)
        return self.current

    def _prepopulate(self, max_generation):
        prev: dict = {}
        for m in self.ordered:
            if m.generation is not None and m.generation < max_generation:
                g = m.generation
            elif m.generation is None and max_generation > DEFAULT_GENERATION:
                g = DEFAULT_GENERATION
            else:
                continue
            for tp in m.owned_partitions:
                cur = prev.get(tp)
                if cur is None or g > cur[1]:
                    prev[tp] = (m.member_id, g)
        return prev

    def _assign_owned(self):
        assigned = []
        for c, tps in self.current.items():
            subs = self.consumer_topic_sets[c]
            kept = []
            for tp in tps:
                if tp[0] not in self.topic_consumers:
                    self.owner.pop(tp, None)
                elif tp[0] not in subs or self.rack.racks_mismatch(c, tp):
                    self.revocation_required = True
                else:
                    kept.append(tp)
                    assigned.append(tp)
            tps[:] = kept
        return assigned

    def _unassigned(self, assigned):
        if not assigned:
            return self.sorted_all
        rank = {t: (len(cs), jkey(t)) for t, cs in self.topic_consumers.items()}
        return _difference(self.sorted_all, sorted(assigned, key=lambda tp: (rank[tp[0]], tp[1])))

    # -- balance -------------------------------------------------------------------------
    def _size(self, c):
        return len(self.current[c])

    def _is_balanced(self):
        """isBalanced(): true if min and max sizes differ by at most one, or no member that can
        take more could take a partition of one of its topics from a member holding 2+ more.
        (Same answer as Kafka's scan; consumers are visited smallest first so the scan stops
        early.)"""
        tree = self.tree
        lo = self._size(tree.first())
        hi = self._size(tree.last())
        if lo >= hi - 1:
            return True
        size = self._size
        cache: dict = {}
        for c in tree:
            n = size(c)
            if n + 1 >= hi:
                break
            if n == self.max_size[c]:
                continue
            for t in self.consumer_topics[c]:
                info = cache.get(t)
                if info is None:
                    b1 = b2 = -1
                    o1 = None
                    for o in self.holders[t]:
                        k = size(o)
                        if k > b1:
                            b2, b1, o1 = b1, k, o
                        elif k > b2:
                            b2 = k
                    info = cache[t] = (b1, o1, b2)
                best = info[0] if info[1] != c else info[2]
                if n + 1 < best:
                    return False
        return True

    def _rebuild_holders(self):
        # who holds partitions of each topic (Kafka's isBalanced looks at the topic's real partitions only: a claim
        # beyond the count is never a holding)
        self.holders = defaultdict(lambda: defaultdict(int))
        for c, tps in self.current.items():
            for tp in tps:
                if tp[1] < self.ppt[tp[0]]:
                    self.holders[tp[0]][c] += 1

    def _maybe_assign_partition(self, tp, rack):
        for c in self.tree:
            if tp[0] in self.consumer_topic_sets[c] and (rack is None or not rack.racks_mismatch(c, tp)):
                self.tree.discard(c)
                self.current[c].append(tp)
                self.owner[tp] = c
                self.tree.add(c)
                return True
        return False

    def _maybe_assign(self, partitions, rack, remove_assigned):
        keep = []
        for tp in partitions:
            if not self.topic_consumers[tp[0]]:
                keep.append(tp)
                continue
            if self._maybe_assign_partition(tp, rack) and remove_assigned:
                continue
            keep.append(tp)
        return keep

    def _can_consumer_participate(self, c):
        n = self._size(c)
        if n < self.max_size[c]:
            return True
        return any(len(self.topic_consumers[tp[0]]) >= 2 for tp in self.current[c])

    @staticmethod
    def _balance_score(assignment):
        sizes = sorted(len(v) for v in assignment.values())
        k = len(sizes)
        return sum(s * (2 * i - k + 1) for i, s in enumerate(sizes))

    def _balance(self, prev, unassigned):
        initializing = self._size(self.tree.last()) == 0
        to_assign = unassigned
        if self.rack.consumer_racks:
            to_assign = self._maybe_assign(list(unassigned), self.rack, True)
        self._maybe_assign(to_assign, None, False)

        fixed_topics = {t for t, cs in self.topic_consumers.items() if len(cs) < 2}
        if fixed_topics:
            self.sorted_all = [tp for tp in self.sorted_all if tp[0] not in fixed_topics]
            unassigned = [tp for tp in unassigned if tp[0] not in fixed_topics]
        fixed = {}
        for c in list(self.consumer_topics):
            if not self._can_consumer_participate(c):
                self.tree.discard(c)
                fixed[c] = self.current.pop(c)

        self._rebuild_holders()
        pre = {c: list(v) for c, v in self.current.items()}
        pre_owner = dict(self.owner)
        if not self.revocation_required:
            self._perform(unassigned, prev)
        performed = self._perform(self.sorted_all, prev)
        if not initializing and performed and \
                self._balance_score(self.current) >= self._balance_score(pre):
            self.current.clear()
            self.current.update({c: list(v) for c, v in pre.items()})
            self.owner = pre_owner
        self.current.update(fixed)

    def _perform(self, partitions, prev):
        performed = False
        while True:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                consumer = self.owner.get(tp)
                if consumer is None or consumer not in self.current:
                    continue
                pv = prev.get(tp)
                if pv is not None and pv[0] not in self.current:
                    # the previous owner takes no part in the balancing (it has no topic left to share): Kafka
                    # looks its assignment up anyway and fails on the null
                    raise KafkaAssignorFailure(
                        f"Kafka's sticky assignor fails (NullPointerException): {tp[0]}-{tp[1]} was owned at an "
                        f"older generation by {pv[0]}, which takes no part in the balancing")
                if pv is not None and self._size(consumer) > self._size(pv[0]) + 1:
                    self._reassign_to(tp, pv[0])
                    performed = modified = True
                    continue
                size = self._size(consumer)
                found_rack = False
                c_rack = self.rack.consumer_racks.get(consumer)
                p_racks = self.rack.partition_racks.get(tp)
                if c_rack is not None and p_racks and c_rack in p_racks:
                    for other in self.topic_consumers[tp[0]]:
                        o_rack = self.rack.consumer_racks.get(other)
                        if o_rack is None or o_rack not in p_racks:
                            continue
                        if size > self._size(other) + 1:
                            self._reassign(tp)
                            performed = modified = found_rack = True
                            break
                if not found_rack:
                    for other in self.topic_consumers[tp[0]]:
                        if size > self._size(other) + 1:
                            self._reassign(tp)
                            performed = modified = True
                            break
            if not modified:
                return performed

    def _reassign(self, tp):
        for c in self.tree:
            if tp[0] in self.consumer_topic_sets[c]:
                self._reassign_to(tp, c)
                return
        raise KafkaAssignorFailure(f"Kafka's sticky assignor fails: no consumer for {tp[0]}-{tp[1]}")

    def _reassign_to(self, tp, new):
        old = self.owner[tp]
        actual = self.movements.actual_partition_to_move(tp, old, new)
        self._process_move(actual, new)

    def _process_move(self, tp, new):
        old = self.owner[tp]
        self.tree.discard(old)
        self.tree.discard(new)
        self.movements.move(tp, old, new)
        self.current[old].remove(tp)
        self.current[new].append(tp)
        self.owner[tp] = new
        held = self.holders[tp[0]]
        held[old] -= 1
        if not held[old]:
            del held[old]
        held[new] += 1
        self.tree.add(new)
        self.tree.add(old)


def _sticky_core(partitions_per_topic, members, partition_racks, prefer=False):
    """Returns (assignment, partitions transferring ownership or None for the general case)."""
    ppt = {t: n for t, n in partitions_per_topic.items() if n > 0}
    ordered = member_hash_order(members)
    rack = _RackInfo(ppt, ordered, partition_racks, prefer)
    equal, owned, multi = _resolve_ownership(set(ppt), ordered)
    if equal:
        b = _Constrained(ppt, rack, owned, multi)
        return b.build(), b.transferring
    max_gen = max([DEFAULT_GENERATION] + [m.generation for m in members if m.generation is not None])
    return _General(ppt, rack, owned, ordered).build(max_gen), None


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
