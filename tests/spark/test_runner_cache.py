"""The worker's runner cache (spark/runner_cache.py): used only while the state store holds what it wrote.

The processor is driven directly on an in-memory handle (helpers/processor_handle.py). A run with the cache must
give exactly the records and the state of a run without it, and a state store rolled back under it (a failed
batch run again, another worker having run the shard) must be read, never the runners the cache still holds.
"""
from __future__ import annotations

import copy
import json

from rebalance_monitor.decoding.decoded_rows import shard_of
from rebalance_monitor.spark.runner_cache import RunnerCache

from helpers.processor_handle import TimerValues, decoded_rows, new_processor

T0 = 1_700_000_000_000


def _same_shard_groups(n: int) -> tuple[list[str], int]:
    """`n` group names on one `__consumer_offsets` partition (a shard holding several groups), and that shard."""
    shard = shard_of("grp-0", 50)
    return [g for g in (f"grp-{i}" for i in range(10_000)) if shard_of(g, 50) == shard][:n], shard


GROUPS, SHARD = _same_shard_groups(3)
# 4 MiB: a bound no other test module uses, so this module's processors share one cache of their own
CACHE = 4 << 20


def _events(group: str, start_s: int, seconds: int) -> list[dict]:
    evs = []
    if start_s == 0:
        for m in ("a", "b"):
            evs.append({"v": 1, "type": "join", "ts": T0, "group": group, "member_id": m, "protocols": ["range"],
                        "topics": ["t"], "session_timeout_ms": 10_000, "rebalance_timeout_ms": 30_000})
        for i, m in enumerate(("a", "b")):
            evs.append({"v": 1, "type": "sync", "ts": T0 + 100, "group": group, "member_id": m, "generation": 1,
                        "protocol": "range", "leader": "a", "assignment": [["t", i]]})
    for s in range(max(1, start_s), start_s + seconds):
        for m in ("a", "b"):
            evs.append({"v": 1, "type": "heartbeat", "ts": T0 + s * 1000 + (m == "b") * 7, "group": group,
                        "member_id": m, "generation": 1, "error": None})
            evs.append({"v": 1, "type": "commit", "ts": T0 + s * 1000 + 300, "group": group, "member_id": m,
                        "offsets": [["t", 0 if m == "a" else 1, s]]})
    return evs


def _batches() -> list[list[dict]]:
    """Four batches of three groups of one shard; in the third, only the first group has events, and from then on
    member b of the second is silent (its session times out)."""
    first, second, _ = GROUPS
    out = []
    for b in range(4):
        evs = []
        for g in GROUPS:
            if b == 2 and g != first:
                continue
            evs.extend(e for e in _events(g, b * 20, 20) if not (b >= 2 and g == second and e["member_id"] == "b"))
        out.append(sorted(evs, key=lambda e: e["ts"]))
    return out


def _run(p, shard, evs, offset, batch_s):
    rows = p.handleInputRows((shard,), iter(decoded_rows(evs, offset)), TimerValues(0, T0 + batch_s * 1000))
    return [(r.kind, r.group, json.loads(r.payload)) for r in rows]


def _state(p) -> dict:
    return {k: json.loads(v[0]) for k, v in p.handle.maps["groups"].values.items()}


def test_a_run_with_the_cache_equals_one_without_and_really_uses_it():
    assert len(GROUPS) == 3
    plain, cached = new_processor(), new_processor(cache_bytes=CACHE)
    hits = cached.cache.hits
    offset = 0
    records = []
    for i, evs in enumerate(_batches()):
        got = _run(cached, SHARD, evs, offset, 20 * i + 25)
        assert got == _run(plain, SHARD, evs, offset, 20 * i + 25)
        assert _state(cached) == _state(plain)
        records.extend(got)
        offset += len(evs)
    # each batch after the first took every group in state from the cache, the groups that did not run in
    # the third batch included (they were carried over, as the state store still had them)
    assert cached.cache.hits - hits == 3 * 3
    assert {kind for kind, _, _ in records} >= {"generation", "offsets_committed", "member_timeout"}


def test_a_rolled_back_state_store_is_read_not_the_cache():
    batches = _batches()
    p = new_processor(cache_bytes=CACHE)
    _run(p, SHARD, batches[0], 0, 25)
    after_first = copy.deepcopy(p.handle)
    first_try = _run(p, SHARD, batches[1], len(batches[0]), 45)
    # the batch is run again on the state the store rolled back to (a failed batch, or another worker ran it
    # since): the cache still holds the runners of the first try, under a token the store no longer has
    misses = p.cache.misses
    p.init(after_first)
    again = _run(p, SHARD, batches[1], len(batches[0]), 45)
    assert p.cache.misses == misses + 1
    assert again == first_try
    assert any(kind == "offsets_committed" for kind, _, _ in again)  # (not dead-lettered as late)
    reference = new_processor()
    _run(reference, SHARD, batches[0], 0, 25)
    _run(reference, SHARD, batches[1], len(batches[0]), 45)
    assert _state(p) == _state(reference)


def test_the_cache_keeps_a_shard_under_its_token_and_drops_the_least_recently_used():
    cache = RunnerCache(max_bytes=100)
    cache.keep("s1", 7, {"g": ("runner-1", 60)})
    assert cache.take("s1", 8) == {}  # another token: stale, and gone
    assert cache.take("s1", 7) == {}
    cache.keep("s1", 7, {"g": ("runner-1", 60)})
    assert cache.take("s1", 7) == {"g": ("runner-1", 60)}
    assert cache.take("s1", 7) == {}  # taken out until kept again
    cache.keep("s1", 1, {"g": ("runner-1", 60)})
    cache.keep("s2", 2, {"h": ("runner-2", 30)})
    cache.keep("s3", 3, {"i": ("runner-3", 30)})  # 120 bytes > 100: s1, the least recently kept, goes
    assert cache.take("s1", 1) == {} and len(cache) == 2
    cache.keep("s4", 4, {"j": ("runner-4", 101)})  # larger than the bound alone: not kept
    assert cache.take("s4", 4) == {}
    off = RunnerCache(max_bytes=0)
    off.keep("s1", 1, {"g": ("runner-1", 1)})
    assert off.take("s1", 1) == {}


def test_a_full_cache_keeps_the_shards_of_the_last_batches_rather_than_drop_the_next_to_run():
    """Every shard runs at every batch, in the same order, and the bound holds two of four: the two kept first are
    found at every batch (least-recently-used would drop, each time, the shard that runs next: none found)."""
    cache = RunnerCache(max_bytes=100)
    found = []
    for batch in range(4):
        now = 1_000 + 5_000 * batch
        hits = []
        for shard in ("s1", "s2", "s3", "s4"):
            if cache.take(shard, batch):  # the token of the last run: its batch
                hits.append(shard)
            cache.keep(shard, batch + 1, {shard: ("runner", 40)}, now)
        found.append(hits)
    assert found == [[], ["s1", "s2"], ["s1", "s2"], ["s1", "s2"]]
    # s1 and s2 run elsewhere from now on: one batch later their entries give way to the shards that run here
    cache.keep("s3", 9, {"s3": ("runner", 40)}, 21_000)
    assert cache.take("s3", 9) == {}  # s1 and s2 were kept in the batch before: still held, s3 refused
    cache.keep("s3", 9, {"s3": ("runner", 40)}, 26_000)
    assert cache.take("s3", 9) == {"s3": ("runner", 40)} and cache.take("s1", 4) == {}


def test_each_clusters_query_has_its_own_cache_in_a_worker():
    """Two clusters' queries in one Python worker: shard 3 of one is not shard 3 of the other, so each keeps its own
    cache (shared, they would take each other's entry at every run and never find their own)."""
    from rebalance_monitor.core.settings import CoreSettings
    from rebalance_monitor.spark.runner_cache import process_cache

    settings = CoreSettings()
    eu, us = process_cache(1 << 20, settings, "prod-eu"), process_cache(1 << 20, settings, "prod-us")
    assert eu is not us and process_cache(1 << 20, settings, "prod-eu") is eu
    eu.keep(3, 111, {"orders": ("runner-eu", 10)})
    us.keep(3, 222, {"orders": ("runner-us", 10)})
    assert eu.take(3, 111) == {"orders": ("runner-eu", 10)}
    assert us.take(3, 222) == {"orders": ("runner-us", 10)}
