"""The general builder of Kafka's sticky assignors (unequal subscriptions): keep valid owned partitions, give each
unassigned one to the least loaded eligible member, then move partitions until balanced, preferring the previous
owner of an older generation and never bouncing a partition back. See ``sticky``."""
from __future__ import annotations

from collections import defaultdict

from . import KafkaAssignorFailure
from ._java import JavaHashSet, SortedMembers, jkey, tp_hash
from .sticky_constrained import sorted_difference

DEFAULT_GENERATION = -1


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


class General:
    def __init__(self, ppt, rack, owned, ordered):
        self.ppt = ppt
        self.rack = rack
        self.ordered = ordered
        self.ordered_ids = [m.member_id for m in ordered]
        self.literal = False
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
        self.tree = SortedMembers(lambda c: len(self.current[c]))
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
        # a kept claim beyond its topic's count derails Kafka's sorted difference (partitions end up held twice):
        # from then on only Kafka's own balance check, read literally, gives Kafka's answer
        self.literal = any(tp[1] >= self.ppt[tp[0]] for tp in assigned)
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
        return sorted_difference(self.sorted_all, sorted(assigned, key=lambda tp: (rank[tp[0]], tp[1])))

    # -- balance -------------------------------------------------------------------------
    def _size(self, c):
        return len(self.current[c])

    def _is_balanced(self):
        return self._is_balanced_literally() if self.literal else self._is_balanced_fast()

    def _is_balanced_literally(self):
        """Kafka's isBalanced as written: who holds each partition is read from the lists in the order of Kafka's
        HashMap of members (the last list holding a partition wins), and a partition nobody holds fails."""
        tree = self.tree
        lo = self._size(tree.first())
        hi = self._size(tree.last())
        if lo >= hi - 1:
            return True
        holder = {}
        for c in self.ordered_ids:
            for tp in self.current.get(c, ()):
                holder[tp] = c
        for c in tree:
            mine = self.current[c]
            n = len(mine)
            if n == self.max_size[c]:
                continue
            held = set(mine)
            for t in self.consumer_topics[c]:
                for p in range(self.ppt[t]):
                    if (t, p) in held:
                        continue
                    other = holder.get((t, p))
                    if other is None or other not in self.current:
                        raise KafkaAssignorFailure("Kafka's sticky assignor fails (NullPointerException): "
                                                   f"{t}-{p} has no owner while it balances")
                    if n + 1 < len(self.current[other]):
                        return False
        return True

    def _is_balanced_fast(self):
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
                    # Kafka only logs that it expected an owner, then looks the owner's assignment up and fails
                    raise KafkaAssignorFailure("Kafka's sticky assignor fails (NullPointerException): "
                                               f"{tp[0]}-{tp[1]} has no owner taking part in the balancing")
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
                        if size > self._other_size(other, tp) + 1:
                            self._reassign(tp)
                            performed = modified = found_rack = True
                            break
                if not found_rack:
                    for other in self.topic_consumers[tp[0]]:
                        if size > self._other_size(other, tp) + 1:
                            self._reassign(tp)
                            performed = modified = True
                            break
            if not modified:
                return performed

    def _other_size(self, other, tp):  # a subscriber set aside from the balancing is where Kafka fails
        if other not in self.current:
            raise KafkaAssignorFailure(f"Kafka's sticky assignor fails (NullPointerException): {other}, a subscriber "
                                       f"of {tp[0]}, takes no part in the balancing")
        return len(self.current[other])

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
