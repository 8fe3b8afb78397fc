"""Pure checks the core runs on every generation's assignment.

Assignments are ``{member_id: iterable of (topic, partition)}`` (lists ``[topic, partition]``
are accepted too).  Definitions:

* ``mismatched_partitions(actual, expected)``: partitions whose owner differs between the two;
  a partition present on only one side counts once.  A partition listed under two members on
  one side has both as owners and matches only if the other side lists the same owners.
* ``unassigned_partitions(actual, partitions_per_topic, subscribed_topics)``: partitions of the
  subscribed topics (known partition count) that no member holds.
* ``partitions_moved(previous, current)``: partitions held by someone in both assignments whose
  holder changed.  Partitions that appear only in ``current`` (new partitions, or partitions
  that were unassigned) are not moves; partitions only in ``previous`` (revoked, not yet
  reassigned - e.g. the first cooperative round) are not counted either.
* ``imbalance(actual)``: max minus min number of partitions per member; ``None`` for no members.
* ``min_moves_for_balance(previous, members_topics, partitions_per_topic)``: the fewest
  partitions that had a previous owner and must change owner to reach a *balanced* assignment
  of the current group (``members_topics``: ``{member_id: topics}``).  A partition whose previous
  owner left the group or no longer subscribes to its topic always counts.  "Balanced" means:
  every partition of a subscribed topic goes to one subscriber, and the per-member counts lie in
  the tightest band [lo, hi] any valid assignment can reach (first the smallest possible
  maximum, then the largest possible minimum).  With equal subscriptions this is the usual
  "counts differ by at most one" and is computed in closed form; otherwise a min-cost flow over
  (topic -> member) is solved.  Comparing this with ``partitions_moved`` shows needless movement.
"""
from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from typing import Iterable, Mapping

__all__ = ["imbalance", "min_moves_for_balance", "mismatched_partitions", "partitions_moved",
           "unassigned_partitions"]


def _owners(assignment: Mapping[str, Iterable]) -> dict:
    out: dict = defaultdict(set)
    for member, tps in (assignment or {}).items():
        for tp in tps:
            out[(tp[0], int(tp[1]))].add(member)
    return out


def mismatched_partitions(actual: Mapping[str, Iterable], expected: Mapping[str, Iterable]) -> int:
    a, e = _owners(actual), _owners(expected)
    return sum(1 for tp in set(a) | set(e) if a.get(tp) != e.get(tp))


def unassigned_partitions(actual: Mapping[str, Iterable], partitions_per_topic: Mapping[str, int],
                          subscribed_topics: Iterable[str]) -> int:
    held = _owners(actual)
    missing = 0
    for topic in set(subscribed_topics):
        n = partitions_per_topic.get(topic)
        if n is None:
            continue
        missing += sum(1 for p in range(n) if (topic, p) not in held)
    return missing


def partitions_moved(previous: Mapping[str, Iterable], current: Mapping[str, Iterable]) -> int:
    prev, cur = _owners(previous), _owners(current)
    return sum(1 for tp, owners in cur.items() if tp in prev and prev[tp] != owners)


def imbalance(actual: Mapping[str, Iterable]) -> int | None:
    if not actual:
        return None
    sizes = [len(set((tp[0], int(tp[1])) for tp in tps)) for tps in actual.values()]
    return max(sizes) - min(sizes)


# ------------------------------------------------------------------ min_moves_for_balance
def min_moves_for_balance(previous: Mapping[str, Iterable], members_topics: Mapping[str, Iterable[str]],
                          partitions_per_topic: Mapping[str, int]) -> int:
    members = {m: set(ts) for m, ts in members_topics.items()}
    if not members:
        return 0
    topics = {t for ts in members.values() for t in ts if t in partitions_per_topic}
    total = sum(partitions_per_topic[t] for t in topics)
    prev_owner: dict = {}
    for m, tps in (previous or {}).items():
        for tp in tps:
            t, p = tp[0], int(tp[1])
            if t in topics and 0 <= p < partitions_per_topic[t]:
                prev_owner.setdefault((t, p), m)  # first listed holder if listed twice
    had_owner = len(prev_owner)
    # keepable[m][t]: partitions of t that m held and may keep (still a member, still subscribed)
    keep: dict = defaultdict(Counter)
    for (t, _p), m in prev_owner.items():
        if m in members and t in members[m]:
            keep[m][t] += 1
    if total == 0:
        return 0
    first = next(iter(members.values()))
    if all(ts & topics == first & topics for ts in members.values()) and first & topics == topics:
        n = len(members)
        q, r = divmod(total, n)
        held = sorted((sum(keep[m].values()) for m in members), reverse=True)
        kept = sum(min(h, q + 1) for h in held[:r]) + sum(min(h, q) for h in held[r:])
        return had_owner - kept
    lo, hi = _tightest_band(members, topics, partitions_per_topic)
    kept = _max_kept(members, topics, partitions_per_topic, keep, lo, hi)
    return had_owner - kept


class _Flow:
    """Small min-cost flow (successive shortest paths, Dijkstra with potentials)."""

    def __init__(self, n):
        self.n = n
        self.g = [[] for _ in range(n)]

    def add(self, u, v, cap, cost):
        self.g[u].append([v, cap, cost, len(self.g[v])])
        self.g[v].append([u, 0, -cost, len(self.g[u]) - 1])

    def run(self, s, t, potentials):
        flow = cost = 0
        h = potentials
        n = self.n
        while True:
            dist = [None] * n
            dist[s] = 0
            prev = [None] * n
            pq = [(0, s)]
            while pq:
                d, u = heapq.heappop(pq)
                if d != dist[u]:
                    continue
                for i, (v, cap, c, _r) in enumerate(self.g[u]):
                    if cap > 0:
                        nd = d + c + h[u] - h[v]
                        if dist[v] is None or nd < dist[v]:
                            dist[v] = nd
                            prev[v] = (u, i)
                            heapq.heappush(pq, (nd, v))
            if dist[t] is None:
                return flow, cost
            for v in range(n):
                if dist[v] is not None:
                    h[v] += dist[v]
            push = None
            v = t
            while v != s:
                u, i = prev[v]
                cap = self.g[u][i][1]
                push = cap if push is None else min(push, cap)
                v = u
            v = t
            while v != s:
                u, i = prev[v]
                e = self.g[u][i]
                e[1] -= push
                self.g[v][e[3]][1] += push
                cost += push * e[2]
                v = u
            flow += push


def _solve(members, topics, ppt, keep, lo, hi, with_keep):
    """Flow source -> topic -> member -> sink; member edges: ``lo`` at cost -BIG (forced first),
    the rest up to ``hi`` at cost 0; topic->member costs 1 per moved/new partition, 0 for kept
    ones.  Returns (flow, number of lower-bound units filled, kept)."""
    tl = sorted(topics)
    ml = sorted(members)
    ti = {t: 1 + i for i, t in enumerate(tl)}
    mi = {m: 1 + len(tl) + i for i, m in enumerate(ml)}
    sink = 1 + len(tl) + len(ml)
    big = sum(ppt[t] for t in tl) + 1
    f = _Flow(sink + 1)
    for t in tl:
        f.add(0, ti[t], ppt[t], 0)
    for m in ml:
        for t in members[m]:
            if t not in ti:
                continue
            k = keep[m][t] if with_keep else 0
            if k:
                f.add(ti[t], mi[m], k, 0)
            f.add(ti[t], mi[m], ppt[t], 1 if with_keep else 0)
        if lo:
            f.add(mi[m], sink, lo, -big)
        if hi > lo:
            f.add(mi[m], sink, hi - lo, 0)
    # DAG: initial potentials = shortest distances in topological order (all >= -big)
    h = [0] * (sink + 1)
    h[sink] = -big if lo else 0
    flow, cost = f.run(0, sink, h)
    filled = 0
    for m in ml:
        for e in f.g[mi[m]]:
            if e[0] == sink and e[2] == -big:
                filled += lo - e[1]
    moved_cost = cost + big * filled
    kept = flow - moved_cost if with_keep else 0
    return flow, filled, kept


def _tightest_band(members, topics, ppt):
    total = sum(ppt[t] for t in topics)
    n = len(members)
    lo_hi, hi_hi = -(-total // n), total
    while lo_hi < hi_hi:  # smallest feasible maximum
        mid = (lo_hi + hi_hi) // 2
        flow, _f, _k = _solve(members, topics, ppt, None, 0, mid, False)
        if flow == total:
            hi_hi = mid
        else:
            lo_hi = mid + 1
    hi = lo_hi
    a, b = 0, min(hi, total // n)
    while a < b:  # largest feasible minimum under that maximum
        mid = (a + b + 1) // 2
        flow, filled, _k = _solve(members, topics, ppt, None, mid, hi, False)
        if flow == total and filled == mid * n:
            a = mid
        else:
            b = mid - 1
    return a, hi


def _max_kept(members, topics, ppt, keep, lo, hi):
    _flow, _filled, kept = _solve(members, topics, ppt, keep, lo, hi, True)
    return kept
