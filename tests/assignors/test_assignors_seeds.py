"""Worked examples from the project's background articles (/work/shared/seeds/003, 004).

003 describes today's client assignors; every example maps directly, except the StickyAssignor
example after C1 leaves: the article shows the *original* (Kafka 0.11) sticky algorithm's
result C0 [t0p0 t1p1 t3p0 t2p0], C2 [t1p0 t2p1 t0p1 t3p1].  Since Kafka 2.x equal subscriptions
use the constrained algorithm, which deals the orphaned partitions (sorted: t0p1, t2p0, t3p1)
round-robin to the sorted unfilled members, so C0 gets t0p1 and C2 gets t2p0, t3p1.  Both keep
every partition the survivors owned (3 moves either way), which we assert as well.

004 is about the old Scala consumer: a consumer ran ``num.streams`` threads and the range /
roundrobin strategies assigned to "consumer threads" (C1-0, C2-0, C2-1).  Mapped to the modern
assignor, each thread is one group member with that id - the range examples hold as written.
Not applicable: (a) its roundrobin example, which sorted partitions by
``TopicAndPartition.toString.hashCode`` - the modern RoundRobinAssignor sorts topics by name
and partitions by number, so that layout (T1-5, T1-3, T1-0, ...) cannot be reproduced; (b) the
rule that all consumers must have equal streams and subscriptions - modern roundrobin accepts
any subscriptions (see the unequal-subscription example of 003)."""
import pytest

from helpers.kafka_assignor_harness import load_cases
from rebalance_monitor.core.assignors import run_assign_case
from rebalance_monitor.core.assignment_checks import min_moves_for_balance, partitions_moved

CASES = load_cases("seed_examples.json")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_seed_example(case):
    assert run_assign_case(case) == case["expected"]


def test_seed003_sticky_keeps_what_survivors_owned_unlike_roundrobin():
    case = next(c for c in CASES if "after C1 leaves (modern" in c["name"])
    previous = {"C0": [("t0", 0), ("t1", 1), ("t3", 0)], "C1": [("t0", 1), ("t2", 0), ("t3", 1)],
                "C2": [("t1", 0), ("t2", 1)]}
    sticky = run_assign_case(case)
    rr = run_assign_case({**case, "assignor": "roundrobin"})
    ppt = case["partitions_per_topic"]
    topics = {m["member_id"]: m["topics"] for m in case["members"]}
    assert partitions_moved(previous, sticky) == 3 == min_moves_for_balance(previous, topics, ppt)
    assert partitions_moved(previous, rr) == 5
    # the article's (pre-2.x) sticky result is just as sticky
    article = {"C0": [("t0", 0), ("t1", 1), ("t3", 0), ("t2", 0)], "C2": [("t1", 0), ("t2", 1), ("t0", 1), ("t3", 1)]}
    assert partitions_moved(previous, article) == 3
