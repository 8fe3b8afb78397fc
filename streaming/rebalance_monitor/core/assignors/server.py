"""KIP-848 server-side assignors of Kafka's group coordinator: ``uniform`` and ``server-range``.

These run in the broker, over topic *ids*.  Several tie-breaks follow the JVM iteration order
of the coordinator's ``HashMap<memberId, …>`` and of ``HashSet<Uuid>``; when the caller gives
``topic_ids`` (topic name -> Kafka base64 Uuid) we reproduce those orders, otherwise topic-id
order is replaced by topic-name order (the per-member partition counts are the same; which
topic's partitions land where can differ from a real broker).  Neither assignor looks at racks
in current Kafka.

``uniform`` (UniformAssignor):
* homogeneous subscriptions: ``total % members`` members may hold ``total // members + 1``
  partitions, the others one fewer; each member keeps owned partitions up to that quota, the
  surplus and the never-assigned partitions are handed out in order.  Which members get the
  extra one: in Kafka 4.0.0 the first ones in coordinator order; from 4.0.1 on a member with room
  gives it up while enough members after it remain (``release``).
* heterogeneous: keep owned partitions of still-subscribed topics, deal the unassigned
  partitions topic by topic (most partitions per subscriber first) to the least loaded
  subscribers, then move partitions from the most to the least loaded subscribers per topic
  until balanced (at most 16 sweeps).
``server-range`` (the coordinator's RangeAssignor): per topic, contiguous ranges in member
order (static members first by instance id, then by member id); ``n % k`` first members get
one more.  Not sticky.
"""
from __future__ import annotations

from collections import Counter

from . import KafkaAssignorFailure
from ._java import (Uuid, capacity_for_copy, hashmap_order, int_hash, jkey,
                    string_hash, timeline_order)


class _Topics:
    """Topic ordering by id when ids are known, by name otherwise."""

    def __init__(self, topic_ids: dict | None, topics):
        self.ids = None
        if topic_ids and all(t in topic_ids for t in topics):
            # every id given, those of topics the cluster no longer has included (a target may still name them)
            self.ids = {t: Uuid(u) for t, u in topic_ids.items()}

    def hash_order(self, topics, initial_capacity=None):
        """Iteration order of a HashMap keyed by these topics' ids (a deleted topic without a known id stands in
        with hash 0: it is never iterated for itself, it only counts towards the table's size)."""
        topics = list(dict.fromkeys(topics))
        if self.ids is None:
            return sorted(topics, key=jkey)
        ids = self.ids
        return hashmap_order(topics, lambda t: ids[t].java_hash() if t in ids else 0, initial_capacity)

    def cmp_key(self, t):
        return self.ids[t].sort_key() if self.ids is not None else jkey(t)


def coordinator_fill_order(held: list, added: list, peak: int = 0) -> list:
    """The order the coordinator puts a group's members in its ``HashMap<memberId, ...>`` for the assignor (two
    ids in one bucket iterate in it): first the members its ``TimelineHashMap`` of the group already holds
    (``held``, in the order they joined), as that map iterates them (``peak``: the most members it has held at
    once, which sizes its table), then the member(s) whose heartbeat computes the assignment and that the map does
    not hold yet (``added``: a member joining)."""
    return timeline_order(list(held), string_hash, peak) + list(added)


def coordinator_member_order(members):
    """Iteration order of the coordinator's ``HashMap<memberId, MemberSubscriptionAndAssignment>``, filled in the
    order of ``members`` (``coordinator_fill_order``)."""
    by_id = {m.member_id: m for m in members}
    return [by_id[mid] for mid in hashmap_order([m.member_id for m in members], string_hash)]


def _owned_by_member(ppt, members):
    """Owned partitions per member: valid ones only, each partition kept by its first claimant
    (the coordinator's target assignment never has a partition twice)."""
    taken = set()
    out = {}
    for m in members:
        mine: dict = {}
        for t, p in m.owned_partitions:
            if t in ppt and 0 <= p < ppt[t] and (t, p) not in taken:
                taken.add((t, p))
                mine.setdefault(t, []).append(p)
        out[m.member_id] = mine
    return out


def _int_set_order(parts, given=False, listed=0):
    """Iteration order of ``new HashSet<>(partitions)`` (as the coordinator builds it from its
    records) for partitions listed in ascending order; ``given`` keeps the listed order (a
    LinkedHashSet, as some Kafka tests use). ``listed``: the length of the list the set is copied
    from when it repeats a partition (the copy's table is sized for the whole list)."""
    if given:
        return list(parts)
    parts = sorted(parts)
    mask = capacity_for_copy(max(len(parts), listed)) - 1
    buckets = [(v ^ (v >> 16)) & mask for v in parts]  # partitions are non-negative
    if max(Counter(buckets).values(), default=0) <= 8:  # no treeify-driven resize possible
        return [v for _, v in sorted(zip(buckets, parts), key=lambda bv: bv[0])]
    return hashmap_order(parts, int_hash, mask + 1)


def _homogeneous(members, subscription_type=None):
    if subscription_type is not None:
        return subscription_type == "homogeneous"
    first = set(members[0].topics)
    return all(set(m.topics) == first for m in members)


def uniform_assign(partitions_per_topic, members, topic_ids=None, member_order=None,
                   subscription_type=None, owned_order="hash", release=None, **_):
    """``member_order`` (callable), ``subscription_type`` and ``owned_order`` ("hash" or "given")
    let tests reproduce Kafka unit tests that use TreeMaps / LinkedHashMaps and force the
    subscription type; the defaults follow the broker. ``release``: "4.0.0" follows that release's rule for
    the extra partitions of an uneven split (homogeneous subscriptions); anything else the newer one."""
    ppt = partitions_per_topic
    out = {m.member_id: [] for m in members}
    if not members:
        return out
    ordered = member_order(members) if member_order else coordinator_member_order(members)
    owned = _owned_by_member(ppt, members)
    topics = _Topics(topic_ids, [t for m in members for t in m.topics] + list(ppt))
    if _homogeneous(ordered, subscription_type):
        result = _uniform_homogeneous(ppt, ordered, owned, topics, owned_order == "given",
                                      extras_first=release == "4.0.0")
    else:
        result = _UniformHeterogeneous(ppt, ordered, owned, topics).build()
    for mid, tps in result.items():
        out[mid] = tps
    return out


def _uniform_homogeneous(ppt, ordered, owned, topics, given_order=False, extras_first=False):
    first_topics = list(dict.fromkeys(ordered[0].topics))
    subscribed = topics.hash_order(first_topics, capacity_for_copy(len(first_topics)))
    result = {m.member_id: [] for m in ordered}
    if not subscribed:
        return result
    sub_set = set(subscribed)
    inverted = {(t, p) for mine in owned.values() for t, ps in mine.items() for p in ps}
    unassigned = [(t, p) for t in subscribed for p in range(ppt[t]) if (t, p) not in inverted]
    total = sum(ppt[t] for t in subscribed)
    n = len(ordered)
    min_quota, extra = divmod(total, n)
    unfilled = []
    for index, m in enumerate(ordered):
        quota = min_quota
        gets_extra = extra > 0
        if gets_extra:
            quota += 1
        mine = owned[m.member_id]
        keep = result[m.member_id]
        # the member's target as the coordinator holds it: every topic it names, unsubscribed and deleted ones
        # included, sizes the map whose order the kept partitions follow
        named = [t for t, _ in m.owned_partitions]
        listed = Counter(named)
        for t in (list(mine) if given_order else topics.hash_order(named)):
            if t not in sub_set or t not in mine:
                continue
            parts = _int_set_order(mine[t], given_order, listed.get(t, 0))
            if len(parts) <= quota:
                quota -= len(parts)
                keep.extend((t, p) for p in parts)
            else:
                for p in parts:
                    if quota > 0:
                        quota -= 1
                        keep.append((t, p))
                    else:
                        unassigned.append((t, p))
        # Kafka 4.0.1 and later: a member with room left gives its extra partition up while enough members after
        # it remain to take every extra one, so the extras go to members that already hold partitions (fewer
        # moves); Kafka 4.0.0 gave the extras to the first members in the coordinator's order (`extras_first`)
        if quota > 0 and gets_extra and n - index > extra and not extras_first:
            quota -= 1
            gets_extra = False
        if quota > 0:
            unfilled.append((m.member_id, quota))
        if gets_extra:
            extra -= 1
    i = 0
    for mid, quota in unfilled:
        take = unassigned[i:i + quota]
        i += len(take)
        result[mid].extend(take)
    if i < len(unassigned):
        raise KafkaAssignorFailure("Kafka's uniform assignor fails (PartitionAssignorException): Partitions were "
                                   "left unassigned")
    return result


_MAX_ITERATION_COUNT = 16


class _Balancer:
    """MemberAssignmentBalancer: a least-loaded range growing rightwards and a most-loaded
    range growing leftwards over the subscribers sorted by (assigned count, member index)."""

    def __init__(self, sizes):
        self.sizes = sizes
        self.sorted = []

    def initialize(self, members):
        if not members:
            raise ValueError("cannot balance an empty subscriber list")
        sizes = self.sizes
        self.sorted = sorted(members, key=lambda i: (sizes[i], i))
        s = self.sorted
        self.least_end = 0
        self.least_count = sizes[s[0]] - 1
        self.next_least = 0
        self.most_start = len(s)
        self.most_end = len(s)
        self.most_count = sizes[s[-1]] + 1
        self.next_most = len(s) - 1
        return sizes[s[-1]] - sizes[s[0]]

    def next_least_loaded(self):
        s, sizes = self.sorted, self.sizes
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(s) and sizes[s[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        m = s[self.next_least]
        self.next_least += 1
        return m

    def next_most_loaded(self):
        s, sizes = self.sorted, self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[s[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[s[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        m = s[self.next_most]
        self.next_most -= 1
        return m

    def exclude_most_loaded(self):
        s = self.sorted
        i = self.next_most + 1
        s[i], s[self.most_end - 1] = s[self.most_end - 1], s[i]
        self.most_end -= 1

    def is_balanced(self):
        return self.most_count - self.least_count <= 1


class _UniformHeterogeneous:
    def __init__(self, ppt, ordered, owned, topics):
        self.ppt = ppt
        self.ordered = ordered
        self.owned = owned
        self.topics = topics
        self.member_ids = [m.member_id for m in ordered]
        self.subscribers: dict = {}
        for i, m in enumerate(ordered):
            for t in dict.fromkeys(m.topics):
                self.subscribers.setdefault(t, []).append(i)
        self.sizes = [0] * len(ordered)
        self.owners = {t: [-1] * ppt[t] for t in self.subscribers}

    def _topic_key(self, t):
        n, k = self.ppt[t], len(self.subscribers[t])
        return (-(n / k), k, self.topics.cmp_key(t))

    def build(self):
        result = {mid: [] for mid in self.member_ids}
        if not self.subscribers:
            return result
        for i, m in enumerate(self.ordered):
            subs = set(m.topics)
            for t, ps in self.owned[m.member_id].items():
                if t in subs:
                    self.sizes[i] += len(ps)
                    for p in ps:
                        self.owners[t][p] = i
        unassigned = {}
        for t, own in self.owners.items():
            free = [p for p, o in enumerate(own) if o == -1]
            if free:
                unassigned[t] = free
        bal = _Balancer(self.sizes)
        for t in sorted(unassigned, key=self._topic_key):
            bal.initialize(self.subscribers[t])
            for p in unassigned[t]:
                self._assign(t, p, bal.next_least_loaded())
        movable = [t for t in self.subscribers if len(self.subscribers[t]) >= 2]
        if movable:
            self._balance_topics(sorted(movable, key=self._topic_key))
        for t, own in self.owners.items():
            for p, o in enumerate(own):
                if o >= 0:
                    result[self.member_ids[o]].append((t, p))
        return result

    def _assign(self, t, p, i):
        old = self.owners[t][p]
        if old != -1:
            self.sizes[old] -= 1
        self.owners[t][p] = i
        self.sizes[i] += 1

    def _balance_topics(self, topics):
        last = -1
        bal = _Balancer(self.sizes)
        for _ in range(_MAX_ITERATION_COUNT):
            for idx, t in enumerate(topics):
                if idx == last:
                    return
                moved = self._balance_topic(t, bal)
                if moved > 0 or last == -1:
                    last = idx

    def _balance_topic(self, t, bal):
        moved = 0
        owners = self.owners[t]
        if bal.initialize(self.subscribers[t]) <= 1:
            return 0
        parts = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict = {}
        end: dict = {}
        for i, p in enumerate(parts):
            o = owners[p]
            start.setdefault(o, i)
            end[o] = i + 1
        while not bal.is_balanced():
            most = -1
            while True:
                most = bal.next_most_loaded()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    bal.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            p = parts[end[most] - 1]
            end[most] -= 1
            least = bal.next_least_loaded()
            if bal.is_balanced():
                break
            self._assign(t, p, least)
            moved += 1
        return moved


def _sorted_member_ids(ordered):
    def key(m):
        if m.group_instance_id is not None:
            return (0, jkey(m.group_instance_id))
        return (1, jkey(m.member_id))
    return sorted(ordered, key=key)  # stable, like List.sort


def server_range_assign(partitions_per_topic, members, member_order=None,
                        subscription_type=None, **_):
    ppt = partitions_per_topic
    out = {m.member_id: [] for m in members}
    if not members:
        return out
    ordered = member_order(members) if member_order else coordinator_member_order(members)
    sorted_members = _sorted_member_ids(ordered)
    if _homogeneous(ordered, subscription_type):
        counts = {t: len(members) for t in dict.fromkeys(sorted_members[0].topics)}
    else:
        counts = {}
        for m in sorted_members:
            for t in dict.fromkeys(m.topics):
                counts[t] = counts.get(t, 0) + 1
    state = {t: [ppt[t], divmod(ppt[t], k), 0] for t, k in counts.items()}
    # state[t] = [numPartitions, (minQuota, extra), nextRange]; extra is decremented below
    extra = {t: s[1][1] for t, s in state.items()}
    for m in sorted_members:
        for t in dict.fromkeys(m.topics):
            n, (min_quota, _e), start = state[t]
            quota = min_quota
            if extra[t] > 0:
                quota += 1
                extra[t] -= 1
            end = min(start + quota, n)
            state[t][2] = end
            out[m.member_id].extend((t, p) for p in range(start, end))
    return out
