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
its snapshot); past it, the shards used least recently go. 0 turns the cache off.
"""
from __future__ import annotations

import secrets
from collections import OrderedDict


def new_token() -> int:
    """A token no other run of any shard will write (63 random bits)."""
    return secrets.randbits(63)


class RunnerCache:
    """Shard -> (token, {group: (GroupRunner, snapshot bytes)}, bytes), least recently used first."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._shards: OrderedDict = OrderedDict()
        self._bytes = 0
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

    def keep(self, shard, token: int, runners: dict) -> None:
        """Keep the shard's runners ({group: (runner, snapshot bytes)}), all in the state store under `token`."""
        if self.max_bytes <= 0 or not runners:
            return
        size = sum(n for _, n in runners.values())
        if size > self.max_bytes:
            return
        self._shards[shard] = (token, runners, size)
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, (_, _, dropped) = self._shards.popitem(last=False)
            self._bytes -= dropped

    def __len__(self) -> int:
        """Runners held."""
        return sum(len(entry[1]) for entry in self._shards.values())


# One per Python worker process: the processor object is rebuilt for every task, the process is reused.
_CACHES: dict[tuple, RunnerCache] = {}


def process_cache(max_bytes: int, settings) -> RunnerCache:
    """The worker process's cache for runners of these core settings (a job restarted on the same checkpoint with
    other settings, in a reused worker, must not get runners built with the old ones), of this bound."""
    key = (max_bytes, settings)
    cache = _CACHES.get(key)
    if cache is None:
        if len(_CACHES) >= 4:  # settings of jobs long gone
            _CACHES.clear()
        cache = _CACHES[key] = RunnerCache(max_bytes)
    return cache
