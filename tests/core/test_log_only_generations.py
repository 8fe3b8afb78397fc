"""Generations seen through broker log lines alone: the proof that a pre-3.0 generation became Stable, and the
members a rebalance reason names as rejoining (a Kafka Connect worker's `Updating metadata for member M`, a
leader's `Leader M re-joining`)."""
from __future__ import annotations

from helpers.events import ev, join, kinds, run, stable_group, sync, tps


def _connect_loop(assignment_ts: int) -> list[dict]:
    """What a 2.x broker logs of a Connect worker's rejoin: the reason, `Stabilized` (1001) and `Assignment received`
    (which names no leader before 3.0), then the next rebalance 4 ms later."""
    why = "Updating metadata for member w1"
    return [ev("rebalance_started", 1000, generation=4, reason=why, member_id="w1"),
            ev("generation_completed", 1001, generation=5),
            ev("generation_completed", assignment_ts, generation=5),
            ev("rebalance_started", 1005, generation=5, reason=why, member_id="w1")]


def test_a_pre_3_0_generation_is_proven_stable_by_its_second_line_and_holds_the_rejoining_member():
    gens = kinds(run(_connect_loop(assignment_ts=1002)), "generation")
    assert [(g["generation"], g["members"], g["leader"], g["completed_ms"]) for g in gens] == [(5, ["w1"], None, 1002)]
    assert gens[0]["causes"] == [{"cause": "subscription_change", "member_id": "w1",
                                  "reason": "Updating metadata for member w1"}]


def test_a_stabilized_line_shipped_twice_proves_nothing_more():
    """The same line twice (same time): the generation formed but no leader's assignment was seen before the next
    rebalance sent the group back to PreparingRebalance, so it never became Stable and is not reported."""
    assert kinds(run(_connect_loop(assignment_ts=1001)), "generation") == []


def test_a_member_a_reason_names_as_rejoining_is_taken_only_from_a_log_alone():
    """With the clients' own events, the members are theirs: a name in a broker's rebalance reason adds none."""
    events = stable_group(("a", "b"))
    events += [ev("rebalance_started", 5000, generation=1, reason="Updating metadata for member zz during Stable",
                  member_id="zz"),
               join(5100, "a", owned=tps("t", 0, 1)), join(5200, "b", owned=tps("t", 2, 3)),
               sync(5300, "a", 2, tps("t", 0, 1), "a"), sync(5310, "b", 2, tps("t", 2, 3), "a"),
               ev("generation_completed", 5320, generation=2, leader="a")]
    gens = kinds(run(events), "generation")
    assert [(g["generation"], g["members"]) for g in gens] == [(1, ["a", "b"]), (2, ["a", "b"])]
