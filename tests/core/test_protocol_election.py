"""The assignor of a classic group whose members' syncs do not name it (confluent-kafka's instrumentation names it
only when one strategy is configured): the coordinator's vote over the members' preferences (core/expected.py,
`elect_protocol`), and when it cannot be known, the reason the generation record carries and every view shows."""
from __future__ import annotations

from helpers.events import join, run, sync

from rebalance_monitor.core.expected import mismatch_text, unchecked_reason


def generations(prefs: dict[str, tuple], assignment: dict[str, list]) -> list[dict]:
    """One generation of members with these preferences and this assignment; no sync names the protocol."""
    members = sorted(prefs)
    events = [join(1000 + i, m, topics=("t",), protocols=prefs[m]) for i, m in enumerate(members)]
    events += [sync(2000 + i, m, 1, assignment[m], leader=members[0], protocol=None) for i, m in enumerate(members)]
    return [r for r in run(events) if r["kind"] == "generation"]


RANGE = {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}       # what range gives a and b over 4 partitions
ROUND_ROBIN = {"a": [("t", 0), ("t", 2)], "b": [("t", 1), ("t", 3)]}


def test_members_that_prefer_the_same_assignor_elect_it_and_the_assignment_is_checked():
    [gen] = generations({"a": ("range", "roundrobin"), "b": ("range", "roundrobin")}, RANGE)
    assert gen["protocol"] == "range"
    assert gen["mismatched_partitions"] == 0 and unchecked_reason(gen) is None
    assert mismatch_text(gen) == "mismatched 0"


def test_the_vote_is_over_the_assignors_every_member_supports():
    # a prefers sticky, which b does not support: a votes for its next choice that both support
    [gen] = generations({"a": ("sticky", "roundrobin", "range"), "b": ("roundrobin", "range")}, RANGE)
    assert gen["protocol"] == "roundrobin"
    assert gen["mismatched_partitions"] == 2  # t-1 and t-2 have other owners under roundrobin


def test_a_tied_vote_is_not_guessed_and_says_why():
    [gen] = generations({"a": ("range", "roundrobin"), "b": ("roundrobin", "range")}, ROUND_ROBIN)
    assert gen["protocol"] is None and gen["mismatched_partitions"] is None
    assert gen["expected_reason"] == "protocol unknown: the members' votes tie between range and roundrobin"
    assert unchecked_reason(gen) == gen["expected_reason"]
    assert mismatch_text(gen) == f"mismatched unknown ({gen['expected_reason']})"


def test_members_sharing_no_assignor_say_so():
    [gen] = generations({"a": ("range",), "b": ("roundrobin",)}, RANGE)
    assert gen["protocol"] is None and gen["mismatched_partitions"] is None
    assert gen["expected_reason"] == "protocol unknown: the members share no assignor"


def test_a_sync_that_names_the_protocol_wins_over_the_vote():
    members = ("a", "b")
    events = [join(1000 + i, m, protocols=("range", "roundrobin")) for i, m in enumerate(members)]
    events += [sync(2000 + i, m, 1, ROUND_ROBIN[m], leader="a", protocol="roundrobin") for i, m in enumerate(members)]
    [gen] = [r for r in run(events) if r["kind"] == "generation"]
    assert gen["protocol"] == "roundrobin" and gen["mismatched_partitions"] == 0


def test_an_unknown_actual_assignment_is_named_too():
    rec = {"mismatched_partitions": None, "expected_assignment": {"a": [["t", 0]]}, "expected_reason": None}
    assert unchecked_reason(rec) == "the members' assignment is not known"
