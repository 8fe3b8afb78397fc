"""The constrained builder of Kafka's sticky assignors (every member subscribed to the same topics): members keep
owned partitions up to their quota, the rest are dealt round-robin (within racks first). See ``sticky``."""
from __future__ import annotations

from . import KafkaAssignorFailure
from ._java import jkey


def _tp_key(tp):
    return (jkey(tp[0]), tp[1])


def sorted_difference(all_sorted, assigned_sorted) -> list:
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


class Constrained:
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
        return sorted_difference(((t, p) for t in topics for p in range(self.ppt[t])), sorted(self.assigned, key=_tp_key))

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
