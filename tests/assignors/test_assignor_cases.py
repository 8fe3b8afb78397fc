"""The generated assignor cases: the default run's mix reaches every dimension of issue 17's list for every assignor
it applies to (counted from the cases themselves), the counting is right, and the shrinker finds small cases."""
import random

import pytest

from helpers.assignor_mix import mix_cases
from rebalance_monitor.testing.assignor_cases import CLIENT, SERVER, SHARE, random_case
from rebalance_monitor.testing.assignor_coverage import NAMES, Coverage, applicable, features
from rebalance_monitor.testing.assignor_shrink import shrink


@pytest.mark.parametrize("assignor", CLIENT + SERVER + SHARE)
def test_the_default_mix_reaches_every_dimension(assignor):
    cov = Coverage()
    for case in mix_cases(assignor, 500):
        cov.add(case)
    assert cov.missing(at_least=3) == {}, cov.table()


def test_generation_features_do_not_apply_to_the_server_assignors():
    assert "stale generation" in applicable("sticky")
    assert "stale generation" not in applicable("uniform")
    assert set(applicable("range")) == set(NAMES)


def _case(members, ppt=None, **extra):
    return {"assignor": "sticky", "partitions_per_topic": ppt or {"t": 4}, "members": members, **extra}


def test_features_are_read_from_the_case():
    f = features(_case([
        {"member_id": "b", "topics": ["t", "gone"], "group_instance_id": "a-1", "rack": "r0",
         "owned_partitions": [["t", 0], ["t", 0], ["t", 9]], "generation": 3},
        {"member_id": "a", "topics": ["t"], "group_instance_id": "z-1",
         "owned_partitions": [["t", 0], ["t", 1]], "generation": 2},
    ], partition_racks={"t": [["r0"], ["r1"], [], ["r0", "r1"]]}))
    assert {"members 2-10", "topics 1", "subscriptions unequal", "subscribed to a missing topic",
            "static members, all", "instance-id order differs from member-id order", "claim listed twice by one member",
            "owned partitions of missing topics or beyond the count", "stale generation",
            "conflicting claims, different generations", "member racks", "members with and without racks",
            "partition racks", "rack-aware assignment applies", "generations", "owned partitions"} <= f
    assert not f & {"subscriptions equal", "static members, some", "conflicting claims, same generation",
                    "owned partitions without a generation", "non-ASCII member ids"}


def test_balanced_and_unbalanced_previous_assignments():
    even = _case([{"member_id": "a", "topics": ["t"], "owned_partitions": [["t", 0], ["t", 1]]},
                  {"member_id": "b", "topics": ["t"], "owned_partitions": [["t", 2], ["t", 3]]}])
    skewed = _case([{"member_id": "a", "topics": ["t"], "owned_partitions": [["t", 0], ["t", 1], ["t", 2]]},
                    {"member_id": "b", "topics": ["t"], "owned_partitions": []}])
    assert "previous assignment balanced" in features(even) and "previous assignment unbalanced" not in features(even)
    assert "previous assignment unbalanced" in features(skewed)


def test_shrink_keeps_what_makes_a_case_fail():
    # a stand-in for a disagreement: it shows whenever some member claims t1-3 and another member is present
    def fails(cases):
        return [len(c["members"]) >= 2 and any(["t1", 3] in (m.get("owned_partitions") or []) for m in c["members"])
                for c in cases]

    big = random_case(random.Random(5), "sticky")
    big["partitions_per_topic"] = {"t0": 40, "t1": 40, "t2": 7}
    big["members"] = [{"member_id": f"x{i}", "topics": ["t0", "t1", "t2"], "rack": "r1", "generation": i,
                       "owned_partitions": [["t1", i], ["t0", i]]} for i in range(30)]
    big.pop("partition_racks", None)
    small = shrink(big, fails)
    assert fails([small]) == [True]
    assert len(small["members"]) == 2
    assert small["partitions_per_topic"] == {"t1": 4}
    assert sum(len(m.get("owned_partitions") or []) for m in small["members"]) == 1
    assert all("rack" not in m and "generation" not in m for m in small["members"])
