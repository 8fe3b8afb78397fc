"""Hostile input at the core: floods of distinct members and groups keep state bounded."""
from __future__ import annotations

import json

from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.settings import CoreSettings


def _hb(ts, group, member):
    return parse_event({"v": 1, "type": "heartbeat", "ts": ts, "group": group, "member_id": member,
                        "generation": 1, "error": None})


def test_a_flood_of_distinct_members_is_capped_and_counted():
    g = GroupMonitor("g", CoreSettings(max_members_per_group=500))
    for i in range(100_000):
        g.process(_hb(1000 + i, "g", f"m{i}"))
    assert len(g.members) == 500
    assert g.counters["members_capped"] == 100_000 - 500
    assert len(json.dumps(g.to_state())) < 500 * 400


def test_a_coordinators_member_list_is_capped_too():
    """A generation_completed naming more members than the cap adds members only up to it; its generation
    record still names every member the coordinator listed."""
    g = GroupMonitor("g", CoreSettings(max_members_per_group=50))
    members = [{"member_id": f"m{i}", "topics": ["t"], "assignment": [["t", i]]} for i in range(5000)]
    out = g.process(parse_event({"v": 1, "type": "generation_completed", "ts": 1000, "group": "g", "generation": 1,
                                 "protocol": "range", "leader": "m0", "members": members}))
    assert len(g.members) == 50
    assert g.counters["members_capped"] == 5000 - 50
    (gen,) = [r for r in out if r["kind"] == "generation"]
    assert len(gen["members"]) == 5000 and len(gen["assignment"]) == 5000
    assert len(json.dumps(g.to_state())) < 50 * 400 + 5000 * 40  # members capped; owners of every partition


def test_a_flood_of_distinct_groups_is_pruned_after_the_idle_ttl():
    recon = Reconstructor(CoreSettings(group_idle_ttl_ms=60_000), max_disorder_ms=1000)
    recon.prune_every = 5000
    live = 0
    peak = 0
    for i in range(200_000):
        recon.feed(_hb(1_000 + i * 10, f"random-{i}", "m"))  # every group is seen once and never again
        peak = max(peak, len(recon.groups))
    live = len(recon.groups)
    # 60 s of TTL at 10 ms per event is ~6,000 groups alive; pruning every 5,000 events bounds it near that
    assert peak < 12_000, peak
    assert live < 12_000
    assert recon.stats.groups_dropped > 180_000


def test_replayed_records_of_hostile_members_never_raise():
    """Members that send nonsense sequences (sync before join, heartbeats for future generations, leaves of
    unknown members, errors of every kind) only produce records or counters."""
    import random

    rng = random.Random(3)
    types = ["join", "sync", "heartbeat", "poll", "leave", "commit", "rebalance_started",
             "generation_completed", "member_removed", "group_empty", "group_deleted", "topic_partitions"]
    errors = [None, "REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID",
              "NOT_COORDINATOR", "SOMETHING_NEW"]
    recon = Reconstructor(CoreSettings(settle_ms=500, storm_window_ms=5000, storm_min_rebalances=2))
    ts = 1000
    for _ in range(30_000):
        ts += rng.randrange(0, 400)
        t = rng.choice(types)
        m = f"m{rng.randrange(6)}"
        gen = rng.randrange(-1, 8)
        e = {"v": 1, "type": t, "ts": ts, "group": f"g{rng.randrange(3)}"}
        if t == "join":
            e.update(member_id=rng.choice([m, ""]), protocols=[rng.choice(["range", "sticky", "x"])],
                     topics=rng.sample(["a", "b", "c"], rng.randrange(0, 3)),
                     owned=[["a", rng.randrange(4)]] * rng.randrange(2), session_timeout_ms=rng.randrange(1, 5000),
                     rebalance_timeout_ms=rng.randrange(1, 9000), group_instance_id=rng.choice([None, "s1"]))
        elif t == "sync":
            e.update(member_id=m, generation=gen, protocol=rng.choice(["range", "cooperative-sticky", None]),
                     leader=rng.choice([m, "m0", None]), assignment=[["a", rng.randrange(5)] for _ in range(rng.randrange(3))])
        elif t == "heartbeat":
            e.update(member_id=m, generation=gen, error=rng.choice(errors))
        elif t in ("poll", "leave"):
            e.update(member_id=m, reason=rng.choice([None, "consumer poll timeout has expired.", "bye"]))
        elif t == "commit":
            e.update(offsets=[["a", 0, rng.randrange(100)]])
        elif t in ("rebalance_started", "group_empty"):
            e.update(generation=gen)
        elif t == "generation_completed":
            e.update(generation=gen, protocol="range",
                     members=[{"member_id": f"m{i}", "topics": ["a"]} for i in range(rng.randrange(3))])
        elif t == "member_removed":
            e.update(member_id=m, cause=rng.choice(["session_timeout", "member_left", "weird"]))
        elif t == "topic_partitions":
            e.update(topics={"a": rng.randrange(1, 6)})
        ev = parse_event(e)
        recon.feed(ev)
    recon.finish()
    assert recon.stats.used + recon.stats.rejected_total == recon.stats.events
