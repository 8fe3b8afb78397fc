"""Replay's due times (`core/reconstruct.DueTimes`: a heap of distinct times, the groups at each) hand out their
(time, group) entries in exactly the order a heap of (time, group) tuples does, duplicates included: the order in
which replay runs its groups, and so the order of its records, rests on it."""
from __future__ import annotations

import heapq
import random

from rebalance_monitor.core.reconstruct import DueTimes


def _taken_as_heap(heap: list, upto: int) -> list:
    out = []
    while heap and heap[0][0] <= upto:
        out.append(heapq.heappop(heap))
    return out


def test_due_times_take_in_heap_order():
    for seed in range(200):
        rng = random.Random(seed)
        groups = [f"g{i}" for i in range(rng.randint(1, 12))] + ["g1-x", "G", "g10"]
        heap: list = []
        due = DueTimes()
        watermark = 0
        for _ in range(rng.randint(1, 400)):
            if rng.random() < 0.7:
                ts = watermark + rng.choice((0, 1, 1, 2, 5, 50, 10_000))
                name = rng.choice(groups)
                heapq.heappush(heap, (ts, name))
                due.add(ts, name)
            else:
                watermark += rng.choice((0, 1, 2, 7, 100))
                expected = _taken_as_heap(heap, watermark)
                got = []
                while True:
                    times_before = sorted(due.groups)
                    names = due.take(watermark)
                    if names is None:
                        break
                    got += [(times_before[0], n) for n in names]
                assert got == expected, seed
        assert sorted((t, n) for t, names in due.groups.items() for n in names) == sorted(heap)
        assert sorted(due.times) == sorted(due.groups)
