"""`expected.coordinator_order`: which of a KIP-848 generation's members the coordinator already held (in its
TimelineHashMap, sized by the most members it held at once) and which one joined with this epoch (added after them).
Kafka's own classes hold the orders themselves (tests/assignors/test_coordinator_member_order.py)."""
from __future__ import annotations

import json

from rebalance_monitor.core.assignors._java import string_hash, timeline_order
from rebalance_monitor.core.assignors.server import coordinator_fill_order
from rebalance_monitor.core.expected import coordinator_order
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.members import Member


def _ids(want) -> tuple[str, ...]:
    """The first ids m0, m1, ... (in pairs, then triples) for which `want` holds."""
    pool = [f"m{i}" for i in range(200)]
    for a in pool:
        for b in pool:
            for c in pool[:40]:
                if len({a, b, c}) == 3 and want(a, b, c):
                    return a, b, c
    raise AssertionError("no ids found")


def _group(*members: tuple[str, int | None]) -> GroupMonitor:
    g = GroupMonitor("g")
    for mid, owned_generation in members:
        m = Member(mid)
        m.owned_generation = owned_generation
        g.members[mid] = m
    return g


def test_the_member_new_to_every_generation_is_added_after_those_held():
    # a and b held in an order other than the one they joined in; c joins now
    a, b, c = _ids(lambda a, b, c: timeline_order([a, b], string_hash, 2) == [b, a])
    g = _group((a, 1), (b, 1), (c, None))
    assert coordinator_order(g, sorted([a, b, c])) == [b, a, c] == coordinator_fill_order([a, b], [c], 2)
    assert g.members_peak == 3


def test_members_that_owned_a_generation_are_all_held():
    a, b, c = _ids(lambda a, b, c: timeline_order([a, b, c], string_hash, 3) != [a, b, c])
    g = _group((a, 1), (b, 1), (c, 2))
    assert coordinator_order(g, [a, b, c]) == timeline_order([a, b, c], string_hash, 3)


def test_the_table_stays_as_large_as_the_most_members_it_held():
    """Three members held once (a table of 4); one leaves: the two left iterate as in a table of 4, not of 2."""
    a, b, c = _ids(lambda a, b, c: timeline_order([a, b], string_hash, 2) != timeline_order([a, b], string_hash, 3))
    g = _group((a, 1), (b, 1), (c, 1))
    coordinator_order(g, [a, b, c])
    assert g.members_peak == 3
    del g.members[c]
    assert coordinator_order(g, [a, b]) == timeline_order([a, b], string_hash, 3) != timeline_order([a, b], string_hash, 2)
    assert g.members_peak == 3


def test_the_peak_survives_a_snapshot_and_an_older_snapshot_reads_as_none_seen():
    g = _group(("a", 1), ("b", 1), ("c", 1))
    coordinator_order(g, ["a", "b", "c"])
    state = json.loads(json.dumps(g.to_state()))
    assert GroupMonitor.from_state(state).members_peak == 3
    del state["mp"]
    assert GroupMonitor.from_state(state).members_peak == 0
