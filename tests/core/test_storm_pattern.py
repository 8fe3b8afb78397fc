"""Storms explained: each rule of core/storm_pattern on the generations it is meant for, in one table, and the
pattern on the storm records of a replayed storm."""
from __future__ import annotations

import pytest

from rebalance_monitor.core.group import codec
from rebalance_monitor.core.storm import StormTracker
from rebalance_monitor.core.storm_pattern import classify, summarise


def g(members, *causes):
    return {"members": members, "causes": list(causes)}


CASES = [
    ("rolling restart: each member out and back once, in turn",
     [g(2, ("member_left", "c1@h1")), g(3, ("member_joined", "c1@h1")), g(2, ("member_left", "c2@h2")),
      g(3, ("member_joined", "c2@h2")), g(2, ("member_left", "c3@h3")), g(3, ("member_joined", "c3@h3"))],
     "rolling_restart", "3 members restarted in turn"),
    ("scaling out, one member at a time",
     [g(3, ("member_joined", "c4@h4")), g(4, ("member_joined", "c5@h5")), g(5, ("member_joined", "c6@h6")),
      g(6, ("member_joined", "c7@h7"))],
     "scaling", "scale-out from 3 to 6 members"),
    ("scaling in",
     [g(5, ("member_left", "a@1")), g(4, ("member_left", "b@2")), g(3, ("member_left", "c@3")), g(2, ("member_left", "d@4"))],
     "scaling", "scale-in from 5 to 2 members"),
    ("one member flapping",
     [g(3, ("member_joined", "bad@h9")), g(2, ("member_left", "bad@h9")), g(3, ("member_joined", "bad@h9")),
      g(2, ("member_left", "bad@h9")), g(3, ("member_joined", "ok@h1"))],
     "flapping_member", "bad@h9 in 4 of 5 generations, gone 2 times"),
    ("timeouts",
     [g(3, ("session_timeout", "slow@h2")), g(3, ("member_joined", "slow@h2")), g(2, ("poll_timeout", "slow@h2")),
      g(3, ("member_joined", "new@h3"))],
     "timeouts", "poll_timeout, session_timeout of slow@h2"),
    ("mixed",
     [g(3, ("metadata_change", "")), g(4, ("member_joined", "a@1")), g(3, ("member_left", "b@2")),
      g(3, ("subscription_change", "c@3"))],
     "mixed", "metadata_change x1, member_joined x1, member_left x1, subscription_change x1"),
]


@pytest.mark.parametrize("name, gens, pattern, detail", CASES, ids=[c[0] for c in CASES])
def test_rules(name, gens, pattern, detail):
    assert classify(gens) == (pattern, detail)


def test_summary_of_a_generation_record():
    rec = {"members": ["a", "b"], "causes": [{"cause": "member_left", "member_id": "m-1", "client_id": "c",
                                              "host": "/10.0.0.1"}, {"cause": "unknown"}]}
    assert summarise(rec) == {"members": 2, "causes": [("member_left", "c@/10.0.0.1"), ("unknown", "")]}
    # no client id: the member id less the UUID Kafka appends to the client id
    rec = {"members": [], "causes": [{"cause": "member_joined",
                                      "member_id": "storm-flapper-1b4e28ba-2fa1-11d2-883f-0016d3cca427"}]}
    assert summarise(rec)["causes"] == [("member_joined", "storm-flapper")]


def test_storm_records_carry_the_pattern_and_survive_the_state_codec():
    t = StormTracker(window_ms=60_000, min_rebalances=3)
    gens = CASES[0][1]
    out = []
    for i, s in enumerate(gens[:3]):
        out += t.on_generation(1000 * (i + 1), s)
    # at its start the storm holds the first three generations: two members, the first already back
    assert (out[-1]["pattern"], out[-1]["pattern_detail"]) == ("rolling_restart", "2 members restarted in turn")
    import json

    restored = StormTracker(window_ms=60_000, min_rebalances=3)
    codec.load_storm(restored, json.loads(json.dumps(codec.storm_to_state(t))))
    for i, s in enumerate(gens[3:]):
        out += restored.on_generation(4000 + 1000 * i, s)
    end = restored.advance(10_000_000)
    assert end and end[0]["ended_ms"] is not None
    assert (end[0]["pattern"], end[0]["pattern_detail"]) == ("rolling_restart", "3 members restarted in turn")


def test_a_running_storm_is_reported_again_when_its_pattern_changes_and_only_then():
    # the storm scenario on Apache Kafka: two members join one at a time, then a third joins and leaves
    joins = [g(1, ("member_joined", "storm-1")), g(2, ("member_joined", "storm-0"))]
    cycle = [g(3, ("member_joined", "storm-flapper")), g(2, ("member_left", "storm-flapper"))]
    t = StormTracker(window_ms=120_000, min_rebalances=4)
    records = []
    for i, s in enumerate(joins + cycle * 4):
        records += [(i, r) for r in t.on_generation(1000 * (i + 1), s)]
    running = [(i, r) for i, r in records if r["ended_ms"] is None]
    # it starts as mixed (the flapper gone once), becomes flapping_member when it leaves again, then stays so
    assert [(i, r["pattern"]) for i, r in running] == [(3, "mixed"), (5, "flapping_member")]
    assert {r["started_ms"] for _, r in running} == {4000}
    import json

    restored = StormTracker(window_ms=120_000, min_rebalances=4)
    codec.load_storm(restored, json.loads(json.dumps(codec.storm_to_state(t))))
    assert restored.on_generation(20_000, cycle[0]) == []  # the same pattern after a restart: no new record
    (end,) = restored.advance(10_000_000)
    assert end["pattern"] == "flapping_member" and end["ended_ms"] is not None


def test_the_pattern_does_not_depend_on_the_interpreters_hash_seed():
    """Two clients named in every generation, one of them gone twice: which one the flapping rule weighs must not
    depend on set order (string hashes differ between processes: replay and each Spark worker would disagree)."""
    import subprocess
    import sys

    code = ("from rebalance_monitor.core.storm_pattern import classify\n"
            "g = lambda *c: {'members': 3, 'causes': list(c)}\n"
            "print(classify([g(('member_joined', 'x@h'), ('member_joined', 'y@h')),"
            " g(('member_left', 'x@h'), ('member_joined', 'y@h')), g(('member_left', 'x@h'), ('member_joined', 'y@h'))]))")
    seen = {subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)},
                           capture_output=True, text=True, check=True).stdout.strip() for seed in range(12)}
    assert seen == {"('flapping_member', 'x@h in 3 of 3 generations, gone 2 times')"}
