"""Small emulations of the Java behaviour that Kafka's assignors depend on.

Kafka's assignors are deterministic, but several tie-breaks depend on details of the JVM:

* ``String.compareTo`` compares UTF-16 code units, not code points (``jkey``).
* ``String.hashCode`` / ``TopicPartition.hashCode`` / ``Uuid.hashCode`` and the iteration
  order of ``java.util.HashMap`` / ``HashSet`` (bucket index of the spread hash, then
  insertion order inside a bucket).  The sticky assignors iterate the member map, the
  server-side uniform assignor iterates member ids and topic-id sets, and the general sticky
  algorithm takes ``iterator().next()`` of a ``HashSet<TopicPartition>``.

Everything here is pure Python; nothing is copied from the JDK.  Known approximation: a
HashMap bucket holding more than eight keys in a table of 64 or more slots is turned into a
red-black tree by the JDK, whose iteration order inside that bucket is not modelled (we keep
insertion order).  With String/TopicPartition keys this needs nine hash collisions in one
bucket and does not happen in practice.
"""
from __future__ import annotations

import bisect

import base64
from functools import lru_cache
from typing import Callable, Hashable, Iterable, Sequence

_MASK32 = 0xFFFFFFFF
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def _to_int32(v: int) -> int:
    v &= _MASK32
    return v - 0x100000000 if v & 0x80000000 else v


def _utf16_units(s: str) -> Iterable[int]:
    for ch in s:
        o = ord(ch)
        if o < 0x10000:
            yield o
        else:
            o -= 0x10000
            yield 0xD800 + (o >> 10)
            yield 0xDC00 + (o & 0x3FF)


@lru_cache(maxsize=65536)
def jkey(s: str) -> str:
    """Sort key that orders strings like Java's ``String.compareTo`` (UTF-16 code units)."""
    if all(ord(c) < 0x10000 for c in s):
        return s
    return "".join(chr(u) for u in _utf16_units(s))


@lru_cache(maxsize=65536)
def string_hash(s: str) -> int:
    """Java ``String.hashCode`` (signed 32-bit)."""
    h = 0
    if s.isascii():
        for c in s.encode("ascii"):
            h = (31 * h + c) & _MASK32
    else:
        for u in _utf16_units(s):
            h = (31 * h + u) & _MASK32
    return _to_int32(h)


def tp_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode``: 31 * (31 + partition) + topic.hashCode()."""
    return _to_int32(31 * (31 + partition) + string_hash(topic))


def int_hash(v: int) -> int:
    """``Integer.hashCode``."""
    return _to_int32(v)


def spread(h: int) -> int:
    """``HashMap.hash``: h ^ (h >>> 16) on the unsigned 32-bit value."""
    u = h & _MASK32
    return u ^ (u >> 16)


def table_size_for(c: int) -> int:
    n = 1
    while n < c:
        n <<= 1
    return max(n, 1)


def capacity_for_copy(n: int) -> int:
    """Initial table of ``new HashMap<>(Map)`` / ``new HashSet<>(Collection)``."""
    return table_size_for(max(int(n / 0.75) + 1, 16))


class Uuid:
    """Kafka ``org.apache.kafka.common.Uuid`` (base64url, 16 bytes)."""

    __slots__ = ("msb", "lsb", "text")

    def __init__(self, text: str):
        if not isinstance(text, str) or len(text) > 24:
            raise ValueError(f"not a Kafka topic id: {text!r}")
        pad = "=" * (-len(text) % 4)
        try:
            raw = base64.urlsafe_b64decode(text + pad)
        except Exception as exc:  # binascii.Error
            raise ValueError(f"not a base64 Kafka topic id: {text!r}") from exc
        if len(raw) != 16:
            raise ValueError(f"topic id {text!r} does not decode to 16 bytes")
        self.msb = int.from_bytes(raw[:8], "big", signed=True)
        self.lsb = int.from_bytes(raw[8:], "big", signed=True)
        self.text = text

    def java_hash(self) -> int:
        x = (self.msb ^ self.lsb) & 0xFFFFFFFFFFFFFFFF
        return _to_int32((x >> 32) ^ (x & _MASK32))

    def sort_key(self) -> tuple[int, int]:
        return (self.msb, self.lsb)


def hashmap_order(keys: Sequence[Hashable], hash_of: Callable[[Hashable], int],
                  initial_capacity: int | None = None) -> list:
    """Iteration order of a ``java.util.HashMap`` filled with ``keys`` in this order.

    ``initial_capacity`` None means ``new HashMap<>()``; otherwise the table size the map
    starts with (already a power of two, e.g. from ``capacity_for_copy``).  Duplicate keys
    keep their first insertion position, as a HashMap put of an existing key does.
    """
    seen: dict = {}
    for k in keys:
        if k not in seen:
            seen[k] = len(seen)
    uniq = list(seen)
    if not uniq:
        return []
    hashes = [spread(hash_of(k)) for k in uniq]
    cap = initial_capacity if initial_capacity else 16
    threshold = int(cap * 0.75)
    counts: dict[int, int] = {}
    for i, h in enumerate(hashes):
        b = h & (cap - 1)
        before = counts.get(b, 0)
        counts[b] = before + 1
        resized = False
        if before >= _TREEIFY_THRESHOLD and cap < _MIN_TREEIFY_CAPACITY:
            cap <<= 1
            threshold <<= 1
            resized = True
        if i + 1 > threshold:
            cap <<= 1
            threshold <<= 1
            resized = True
        if resized:
            counts = {}
            for hh in hashes[: i + 1]:
                bb = hh & (cap - 1)
                counts[bb] = counts.get(bb, 0) + 1
    mask = cap - 1
    order = sorted(range(len(uniq)), key=lambda i: (hashes[i] & mask, i))
    return [uniq[i] for i in order]


class JavaHashSet:
    """A ``java.util.HashSet`` (default constructor) for which only the iteration order of the
    current elements matters: bucket of the spread hash, then insertion order."""

    __slots__ = ("_hash_of", "_items", "_seq", "_cap", "_threshold", "_counts")

    def __init__(self, hash_of: Callable[[Hashable], int]):
        self._hash_of = hash_of
        self._items: dict = {}  # element -> (spread hash, insertion seq)
        self._seq = 0
        self._cap = 16
        self._threshold = 12
        self._counts: dict[int, int] = {}

    def __contains__(self, item) -> bool:
        return item in self._items

    def __len__(self) -> int:
        return len(self._items)

    def add(self, item) -> None:
        if item in self._items:
            return
        h = spread(self._hash_of(item))
        b = h & (self._cap - 1)
        before = self._counts.get(b, 0)
        self._items[item] = (h, self._seq)
        self._seq += 1
        self._counts[b] = before + 1
        resized = False
        if before >= _TREEIFY_THRESHOLD and self._cap < _MIN_TREEIFY_CAPACITY:
            self._grow()
            resized = True
        if len(self._items) > self._threshold:
            self._grow()
            resized = True
        if resized:
            self._recount()

    def _grow(self) -> None:
        self._cap <<= 1
        self._threshold <<= 1

    def _recount(self) -> None:
        mask = self._cap - 1
        counts: dict[int, int] = {}
        for h, _ in self._items.values():
            counts[h & mask] = counts.get(h & mask, 0) + 1
        self._counts = counts

    def remove(self, item) -> None:
        entry = self._items.pop(item, None)
        if entry is not None:
            b = entry[0] & (self._cap - 1)
            self._counts[b] -= 1

    def first(self):
        mask = self._cap - 1
        return min(self._items.items(), key=lambda kv: (kv[1][0] & mask, kv[1][1]))[0]

    def __iter__(self):
        mask = self._cap - 1
        return iter([k for k, _ in sorted(self._items.items(),
                                          key=lambda kv: (kv[1][0] & mask, kv[1][1]))])


class SortedMembers:
    """The sticky assignors' TreeSet<String> of members ordered by (assignment size, member id): `sizes(member)` gives
    the size; ids compare as Java compares strings."""

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


# Kafka's TimelineHashMap (org.apache.kafka.timeline, the group coordinator's map of a group's members): its own
# open table, sized in powers of two from 2, doubled before an add would take it past three quarters full and
# never shrunk; a key's slot is the top bits of its hash times a 64-bit Fibonacci constant; a slot keeps its keys
# in the order they came, and iteration walks the slots in order, each slot's keys newest first.
_FIBONACCI = -7046029254386353131
_MASK64 = (1 << 64) - 1


def timeline_capacity(peak: int) -> int:
    """The table size of a TimelineHashMap (made empty) that has held at most `peak` keys at once."""
    cap = 2
    for size in range(max(0, peak)):
        if (size + 1) * 0.75 > cap:
            cap *= 2
    return cap


def timeline_order(keys: Sequence[Hashable], hash_of: Callable[[Hashable], int], peak: int = 0) -> list:
    """Iteration order of a TimelineHashMap holding ``keys`` (added in this order, each once) that has held at most
    ``peak`` keys at once (at least as many as it holds)."""
    bits = timeline_capacity(max(peak, len(keys))).bit_length() - 1
    shift = 64 - bits
    slots = [((hash_of(k) * _FIBONACCI) & _MASK64) >> shift for k in keys]
    order = sorted(range(len(keys)), key=lambda i: (slots[i], -i))
    return [keys[i] for i in order]


