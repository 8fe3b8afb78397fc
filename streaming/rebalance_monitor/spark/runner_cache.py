"""Group runners kept in a Python worker between micro-batches, valid only while Spark's state says so.

The stateful processor (spark/processor.py) writes every group it runs to Spark's state store, as it must: that
is the durable copy, in the checkpoint. Reading each group back at the next batch costs a round trip to the JVM's
state server and a JSON parse per group (about half of a busy shard's state time). A Python worker is reused from
one batch to the next, so it may still hold the runners it wrote; this cache lets it use them, but only when the
state store proves they are what it holds.

The proof is the shard's token: a random number written with the shard's own state at the end of every run of
the shard, after its groups. The cache keeps a shard's runners under the token of the run that wrote them. At the
next run the processor reads the shard's state anyway; when the token there is the cached one, the state store is
exactly what that run wrote (same batch lineage, committed), so each cached runner equals its stored snapshot. In
any other case (another worker ran the shard since, the batch was retried or rolled back, the job restarted, a
task failed half-way) the token differs or the entry is gone, and the runners are read from the state store.

An entry is taken out of the cache when its shard starts to run (`take`) and put back only when the run has
written everything (`keep`), so runners that a failed run changed are never reused. The cache is bounded by the
size of the snapshots its runners were written as (`max_bytes` of JSON; a runner in memory takes about six times
its snapshot); past it, the shards used least recently go, but not those kept in this micro-batch or the one
before: those are refused instead. A fleet at live cadence runs every shard at every batch, in the same order;
with more shards than the bound holds, dropping the least recent would drop, each time, the shard that runs next,
and no shard would ever be found (measured: none of 10,000 groups of 10 members at the default bound, a group's
snapshot being about 6 kB). Refused instead, the shards kept first stay and are found at every batch, as many as
the bound holds; a shard that stopped running here (its tasks went to another worker) goes after one batch.
0 turns the cache off.
"""
from __future__ import annotations

import secrets
from collections import OrderedDict


def new_token() -> int:
    """A token no other run of any shard will write (63 random bits)."""
    return secrets.randbits(63)


class RunnerCache:
    """Shard -> (token, {group: (GroupRunner, snapshot bytes)}, bytes, batch time kept at), least recently used
    first."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._shards: OrderedDict = OrderedDict()
        self._bytes = 0
        self._batches = (None, None)  # the batch times of this micro-batch and of the one before
        self.hits = 0  # runners taken from the cache (for tests and figures)
        self.misses = 0  # shards whose entry was missing or stale

    def take(self, shard, token) -> dict:
        """The shard's cached runners if they were written under `token` (the one in the state store), else {};
        either way the shard's entry leaves the cache until `keep`."""
        entry = self._shards.pop(shard, None)
        if entry is None:
            if token is not None:
                self.misses += 1
            return {}
        self._bytes -= entry[2]
        if token is None or entry[0] != token:
            self.misses += 1
            return {}
        self.hits += len(entry[1])
        return entry[1]

    def keep(self, shard, token: int, runners: dict, batch_ms: int | None = None) -> None:
        """Keep the shard's runners ({group: (runner, snapshot bytes)}), all in the state store under `token`, at
        the micro-batch of time `batch_ms` (None: none known, every entry goes by least recent use)."""
        if self.max_bytes <= 0 or not runners:
            return
        size = sum(n for _, n in runners.values())
        if size > self.max_bytes:
            return
        if batch_ms is not None and batch_ms != self._batches[0]:
            self._batches = (batch_ms, self._batches[0])
        if self._bytes + size > self.max_bytes and not self._make_room(size):
            return  # full of shards of this batch and the one before: refused (see the module docstring)
        self._shards[shard] = (token, runners, size, batch_ms)
        self._bytes += size

    def _make_room(self, size: int) -> bool:
        """Drop the least recently used shards, except those kept in this batch or the one before, until `size`
        more bytes fit; False (nothing dropped) if they would not."""
        now, before = self._batches
        recent = {now, before} - {None}
        going, freed = [], 0
        for shard, entry in self._shards.items():
            if entry[3] is None or entry[3] not in recent:
                going.append(shard)
                freed += entry[2]
                if self._bytes - freed + size <= self.max_bytes:
                    break
        if self._bytes - freed + size > self.max_bytes:
            return False
        for shard in going:
            self._bytes -= self._shards.pop(shard)[2]
        return True

    def __len__(self) -> int:
        """Runners held."""
        return sum(len(entry[1]) for entry in self._shards.values())


# One per Python worker process: the processor object is rebuilt for every task, the process is reused.
_CACHES: dict[tuple, RunnerCache] = {}


MAX_CACHES = 64  # past it, every cache goes (those of jobs long gone, with the live ones: they fill again)


def process_cache(max_bytes: int, settings, cluster: str = "default") -> RunnerCache:
    """The worker process's cache for runners of these core settings (a job restarted on the same checkpoint with
    other settings, in a reused worker, must not get runners built with the old ones), of this bound, of this
    Kafka cluster's query (one cluster's shard is not another's: sharing a cache, they would take each other's
    entries at every run, all misses)."""
    key = (max_bytes, settings, cluster)
    cache = _CACHES.get(key)
    if cache is None:
        if len(_CACHES) >= MAX_CACHES:  # settings of jobs long gone
            _CACHES.clear()
        cache = _CACHES[key] = RunnerCache(max_bytes)
    return cache
