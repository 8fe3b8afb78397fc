"""The JDK collections whose iteration order the streams and share assignors' tie-breaks follow, emulated:
``java.util.HashMap`` filled by ``put`` or ``computeIfAbsent`` (:func:`hashmap_iteration`, :class:`JavaHashMap`) and
``java.util.PriorityQueue`` (:class:`JavaPriorityQueue`). Hashes and table sizes are ``_java.py``'s; pure Python,
nothing copied from the JDK.
"""
from __future__ import annotations

from typing import Callable, Hashable, Sequence

from ._java import _MIN_TREEIFY_CAPACITY, _TREEIFY_THRESHOLD, spread, table_size_for


def hashmap_iteration(keys: Sequence[Hashable], hash_of: Callable[[Hashable], int],
                      constructor_capacity: int | None = None, compute_if_absent: bool = False) -> list:
    """Iteration order of a ``java.util.HashMap`` made with ``new HashMap<>()`` (``constructor_capacity`` None) or
    ``new HashMap<>(constructor_capacity)``, after ``put(key)`` of each of ``keys`` in this order, or, with
    ``compute_if_absent``, ``computeIfAbsent(key)`` of each (a repeated key included: each call may grow the table).
    ``put`` appends a new key to its bucket and grows the table after an insertion takes it past three quarters;
    ``computeIfAbsent`` grows it first, when an earlier insertion took it past, and puts a new key at the head of its
    bucket. Unlike :func:`hashmap_order` it follows the JDK's thresholds for tables of fewer than 16 slots too."""
    cap = 0
    first_cap = 16 if constructor_capacity is None else table_size_for(constructor_capacity)
    buckets: dict[int, list] = {}
    hashes: dict = {}
    size = 0

    def grow() -> None:
        nonlocal cap, buckets
        cap = cap * 2 if cap else first_cap
        mask = cap - 1
        grown: dict[int, list] = {}
        for b in sorted(buckets):
            for k in buckets[b]:
                grown.setdefault(hashes[k] & mask, []).append(k)
        buckets = grown

    for k in keys:
        if compute_if_absent and (cap == 0 or size > int(cap * 0.75)):
            grow()
        elif cap == 0:
            grow()
        if k in hashes:
            continue
        hashes[k] = spread(hash_of(k))
        chain = buckets.setdefault(hashes[k] & (cap - 1), [])
        before = len(chain)
        if compute_if_absent:
            chain.insert(0, k)
        else:
            chain.append(k)
        size += 1
        # treeifyBin on a small table resizes it instead: putVal calls it when the bucket held 8 keys already,
        # computeIfAbsent when it held 7
        if before >= _TREEIFY_THRESHOLD - compute_if_absent and cap < _MIN_TREEIFY_CAPACITY:
            grow()
        if not compute_if_absent and size > int(cap * 0.75):
            grow()
    return [k for b in sorted(buckets) for k in buckets[b]]


class JavaPriorityQueue:
    """A ``java.util.PriorityQueue`` with a comparator (``compare(a, b)`` -> negative, zero, positive): the same binary
    heap, so elements that compare equal come out in the order the JDK's heap gives them."""

    __slots__ = ("_cmp", "_heap")

    def __init__(self, compare: Callable[[object, object], int]):
        self._cmp = compare
        self._heap: list = []

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, x) -> None:
        es, cmp = self._heap, self._cmp
        es.append(x)
        k = len(es) - 1
        while k > 0:
            parent = (k - 1) >> 1
            e = es[parent]
            if cmp(x, e) >= 0:
                break
            es[k] = e
            k = parent
        es[k] = x

    def poll(self):
        es = self._heap
        if not es:
            return None
        result = es[0]
        x = es.pop()
        n = len(es)
        if n:
            cmp = self._cmp
            k, half = 0, n >> 1
            while k < half:
                child = 2 * k + 1
                c = es[child]
                right = child + 1
                if right < n and cmp(c, es[right]) > 0:
                    child = right
                    c = es[child]
                if cmp(x, c) <= 0:
                    break
                es[k] = c
                k = child
            es[k] = x
        return result


class JavaHashMap:
    """A ``java.util.HashMap`` whose iteration order matters, filled by ``put`` (a new key goes to the end of its
    bucket, the table grows after the insertion that takes it past three quarters) or by ``computeIfAbsent`` (a new
    key goes to the head of its bucket, and the table grows at the start of the next call, whatever its key, once
    it holds more than three quarters). `capacity`: the table the map starts with (a power of two)."""

    __slots__ = ("_hash_of", "_values", "_meta", "_seq", "_cap", "_threshold", "_counts")

    def __init__(self, hash_of: Callable[[Hashable], int], capacity: int = 16):
        self._hash_of = hash_of
        self._values: dict = {}
        self._meta: dict = {}  # key -> (spread hash, rank in its bucket's chain)
        self._seq = 0
        self._cap = capacity
        self._threshold = int(capacity * 0.75)
        self._counts: dict[int, int] = {}

    def __contains__(self, key) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, key):
        return self._values[key]

    def get(self, key, default=None):
        return self._values.get(key, default)

    def _grow(self) -> None:
        self._cap <<= 1
        self._threshold <<= 1
        mask = self._cap - 1
        counts: dict[int, int] = {}
        for h, _ in self._meta.values():
            counts[h & mask] = counts.get(h & mask, 0) + 1
        self._counts = counts

    def _insert(self, key, value, head: bool) -> int:
        h = spread(self._hash_of(key))
        b = h & (self._cap - 1)
        before = self._counts.get(b, 0)
        self._seq += 1
        self._meta[key] = (h, -self._seq if head else self._seq)
        self._values[key] = value
        self._counts[b] = before + 1
        return before

    def put(self, key, value) -> None:
        if key in self._values:
            self._values[key] = value
            return
        before = self._insert(key, value, head=False)
        if before >= _TREEIFY_THRESHOLD and self._cap < _MIN_TREEIFY_CAPACITY:
            self._grow()
        if len(self._values) > self._threshold:
            self._grow()

    def compute_if_absent(self, key, make: Callable[[], object]):
        if len(self._values) > self._threshold:
            self._grow()
        if key in self._values:
            return self._values[key]
        value = make()
        before = self._insert(key, value, head=True)
        if before >= _TREEIFY_THRESHOLD - 1 and self._cap < _MIN_TREEIFY_CAPACITY:
            self._grow()
        return value

    def keys(self) -> list:
        mask = self._cap - 1
        return [k for k, _ in sorted(self._meta.items(), key=lambda kv: (kv[1][0] & mask, kv[1][1]))]
