"""Kafka client assignor tests ported as data: RangeAssignorTest, RoundRobinAssignorTest,
StickyAssignorTest, CooperativeStickyAssignorTest, AbstractStickyAssignorTest (the cases that
assert exact outputs; rack-aware ones are in test_assignors_kafka_racks.py).  Expected outputs are
the ones in those Kafka tests.  Kafka's member ids are consumer1..consumer4 put in that order
into a HashMap, which is the order we pass them."""
import pytest

from rebalance_monitor.core.assignors import MemberSubscription as M
from rebalance_monitor.core.assignors import assign


def tps(*items):
    return sorted(items)


def run(name, ppt, members):
    return assign(name, ppt, members)


# ---------------------------------------------------------------- range / roundrobin
RANGE_RR = [
    # (kafka test, assignor, partitions_per_topic, members, expected)
    ("RangeAssignorTest.testOneConsumerNoTopic", "range", {}, [M("consumer1", ())], {"consumer1": []}),
    ("RangeAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics", "range",
     {"topic1": 3, "other": 3}, [M("consumer1", ("topic1",))],
     {"consumer1": tps(("topic1", 0), ("topic1", 1), ("topic1", 2))}),
    ("RangeAssignorTest.testOneConsumerMultipleTopics", "range", {"topic1": 1, "topic2": 2},
     [M("consumer1", ("topic1", "topic2"))],
     {"consumer1": tps(("topic1", 0), ("topic2", 0), ("topic2", 1))}),
    ("RangeAssignorTest.testTwoConsumersOneTopicOnePartition", "range", {"topic1": 1},
     [M("consumer1", ("topic1",)), M("consumer2", ("topic1",))],
     {"consumer1": [("topic1", 0)], "consumer2": []}),
    ("RangeAssignorTest.testTwoConsumersOneTopicTwoPartitions", "range", {"topic1": 2},
     [M("consumer1", ("topic1",)), M("consumer2", ("topic1",))],
     {"consumer1": [("topic1", 0)], "consumer2": [("topic1", 1)]}),
    ("RangeAssignorTest.testMultipleConsumersMixedTopics", "range", {"topic1": 3, "topic2": 2},
     [M("consumer1", ("topic1",)), M("consumer2", ("topic1", "topic2")), M("consumer3", ("topic1",))],
     {"consumer1": [("topic1", 0)], "consumer2": tps(("topic1", 1), ("topic2", 0), ("topic2", 1)),
      "consumer3": [("topic1", 2)]}),
    ("RangeAssignorTest.testTwoConsumersTwoTopicsSixPartitions", "range", {"topic1": 3, "topic2": 3},
     [M("consumer1", ("topic1", "topic2")), M("consumer2", ("topic1", "topic2"))],
     {"consumer1": tps(("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)),
      "consumer2": tps(("topic1", 2), ("topic2", 2))}),
    # static members sort by group instance id, not member id
    ("RangeAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions", "range", {"topic1": 3, "topic2": 3},
     [M("consumer-b", ("topic1", "topic2"), "instance1"), M("consumer-a", ("topic1", "topic2"), "instance2")],
     {"consumer-b": tps(("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)),
      "consumer-a": tps(("topic1", 2), ("topic2", 2))}),
    # a static member sorts before a dynamic one
    ("RangeAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions", "range",
     {"topic1": 3, "topic2": 3},
     [M("consumer-b", ("topic1", "topic2"), "instance1"), M("consumer-a", ("topic1", "topic2"))],
     {"consumer-b": tps(("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)),
      "consumer-a": tps(("topic1", 2), ("topic2", 2))}),
    ("RoundRobinAssignorTest.testOneConsumerMultipleTopics", "roundrobin", {"topic1": 1, "topic2": 2},
     [M("consumer", ("topic1", "topic2"))],
     {"consumer": tps(("topic1", 0), ("topic2", 0), ("topic2", 1))}),
    ("RoundRobinAssignorTest.testTwoConsumersOneTopicOnePartition", "roundrobin", {"topic": 1},
     [M("consumer1", ("topic",)), M("consumer2", ("topic",))], {"consumer1": [("topic", 0)], "consumer2": []}),
    ("RoundRobinAssignorTest.testMultipleConsumersMixedTopics", "roundrobin", {"topic1": 3, "topic2": 2},
     [M("consumer1", ("topic1",)), M("consumer2", ("topic1", "topic2")), M("consumer3", ("topic1",))],
     {"consumer1": [("topic1", 0)], "consumer2": tps(("topic1", 1), ("topic2", 0), ("topic2", 1)),
      "consumer3": [("topic1", 2)]}),
    ("RoundRobinAssignorTest.testTwoDynamicConsumersTwoTopicsSixPartitions", "roundrobin",
     {"topic1": 3, "topic2": 3},
     [M("consumer1", ("topic1", "topic2")), M("consumer2", ("topic1", "topic2"))],
     {"consumer1": tps(("topic1", 0), ("topic1", 2), ("topic2", 1)),
      "consumer2": tps(("topic1", 1), ("topic2", 0), ("topic2", 2))}),
    ("RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistent", "roundrobin",
     {"topic1": 3, "topic2": 3},
     [M("consumer1", ("topic1", "topic2"), "instance1"), M("consumer2", ("topic1", "topic2"), "instance2"),
      M("consumer3", ("topic1", "topic2"), "instance3"), M("consumer4", ("topic1", "topic2"))],
     {"consumer1": tps(("topic1", 0), ("topic2", 1)), "consumer2": tps(("topic1", 1), ("topic2", 2)),
      "consumer3": [("topic1", 2)], "consumer4": [("topic2", 0)]}),
    # ... and after the dynamic member consumer4 is replaced by consumer5
    ("RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistent/replaced", "roundrobin",
     {"topic1": 3, "topic2": 3},
     [M("consumer1", ("topic1", "topic2"), "instance1"), M("consumer2", ("topic1", "topic2"), "instance2"),
      M("consumer3", ("topic1", "topic2"), "instance3"), M("consumer5", ("topic1", "topic2"))],
     {"consumer1": tps(("topic1", 0), ("topic2", 1)), "consumer2": tps(("topic1", 1), ("topic2", 2)),
      "consumer3": [("topic1", 2)], "consumer5": [("topic2", 0)]}),
]


@pytest.mark.parametrize("case", RANGE_RR, ids=[c[0] for c in RANGE_RR])
def test_range_roundrobin_kafka_cases(case):
    _, name, ppt, members, expected = case
    assert run(name, ppt, members) == expected


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_static_member_assignment_persists_after_member_id_changes(name):
    """testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges / RoundRobin equivalent:
    instance ids order the members, so new member ids do not shuffle partitions."""
    ppt = {"topic1": 5, "topic2": 5}
    ids = {"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}
    first = run(name, ppt, [M(c, ("topic1", "topic2"), i) for c, i in ids.items()])
    renamed = {"consumer1": "instance1", "consumer5": "instance2", "consumer4": "instance3"}
    second = run(name, ppt, [M(c, ("topic1", "topic2"), i) for c, i in renamed.items()])
    by_instance = lambda res, m: {m[c]: v for c, v in res.items()}  # noqa: E731
    assert by_instance(first, ids) == by_instance(second, renamed)


# ---------------------------------------------------------------- sticky family
G = 1  # generationId in AbstractStickyAssignorTest
STICKY = [
    ("testConsumerOwningMinQuotaExpectedMaxQuota", {"topic1": 2, "topic2": 3},
     [M("consumer1", ("topic1", "topic2"), None, (("topic1", 0), ("topic2", 1)), G),
      M("consumer2", ("topic1", "topic2"), None, (("topic1", 1), ("topic2", 2)), G)],
     {"consumer1": tps(("topic1", 0), ("topic2", 1), ("topic2", 0)),
      "consumer2": tps(("topic1", 1), ("topic2", 2))}, None),
    ("testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers", {"topic1": 2, "topic2": 2},
     [M("consumer1", ("topic1", "topic2"), None, (("topic1", 0), ("topic2", 0)), G),
      M("consumer2", ("topic1", "topic2"), None, (("topic1", 1), ("topic2", 1)), G),
      M("consumer3", ("topic1", "topic2"), None, (), G)],
     {"consumer1": [("topic1", 0)], "consumer2": tps(("topic1", 1), ("topic2", 1)),
      "consumer3": [("topic2", 0)]},
     # cooperative first round: topic2-0 is revoked from consumer1 and withheld from consumer3
     {"consumer1": [("topic1", 0)], "consumer2": tps(("topic1", 1), ("topic2", 1)), "consumer3": []}),
    ("testAllConsumersAreUnderMinQuota", {"topic1": 2, "topic2": 3},
     [M("consumer1", ("topic1", "topic2"), None, (("topic1", 0),), G),
      M("consumer2", ("topic1", "topic2"), None, (("topic1", 1),), G),
      M("consumer3", ("topic1", "topic2"), None, (), G)],
     {"consumer1": tps(("topic1", 0), ("topic2", 1)), "consumer2": tps(("topic1", 1), ("topic2", 2)),
      "consumer3": [("topic2", 0)]}, None),
    ("testAllConsumersReachExpectedQuotaAndAreConsideredFilled", {"topic": 4},
     [M("consumer1", ("topic",), None, (("topic", 0), ("topic", 1)), G),
      M("consumer2", ("topic",), None, (("topic", 2),), G), M("consumer3", ("topic",), None, (), G)],
     {"consumer1": tps(("topic", 0), ("topic", 1)), "consumer2": [("topic", 2)],
      "consumer3": [("topic", 3)]}, None),
    ("testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration", {"topic": 3, "topic2": 3},
     [M("consumer1", ("topic", "topic2"), None, (("topic", 0), ("topic", 2), ("topic2", 1)), 10),
      M("consumer2", ("topic", "topic2"), None, (("topic", 0), ("topic", 2), ("topic2", 1)), 9)],
     {"consumer1": tps(("topic", 0), ("topic", 2), ("topic2", 1)),
      "consumer2": tps(("topic", 1), ("topic2", 0), ("topic2", 2))}, None),
    ("testOwnedPartitionsAreInvalidatedForConsumerWithNoGeneration", {"topic": 3, "topic2": 3},
     [M("consumer1", ("topic", "topic2"), None, (("topic", 0), ("topic", 2), ("topic2", 1)), 10),
      M("consumer2", ("topic", "topic2"), None, (("topic", 0), ("topic", 2), ("topic2", 1)), -1)],
     {"consumer1": tps(("topic", 0), ("topic", 2), ("topic2", 1)),
      "consumer2": tps(("topic", 1), ("topic2", 0), ("topic2", 2))}, None),
    ("testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumersInSameGeneration",
     {"topic": 3},
     [M("consumer1", ("topic",), None, (("topic", 0), ("topic", 1)), G),
      M("consumer2", ("topic",), None, (("topic", 0), ("topic", 2)), G), M("consumer3", ("topic",), None, (), G)],
     {"consumer1": [("topic", 1)], "consumer2": [("topic", 2)], "consumer3": [("topic", 0)]},
     # CooperativeStickyAssignorTest...WithEqualPartitionsPerConsumer: withheld this round
     {"consumer1": [("topic", 1)], "consumer2": [("topic", 2)], "consumer3": []}),
    ("StickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGenerationWithUnequalPartitionsPerConsumer",
     {"topic": 4},
     [M("consumer1", ("topic",), None, (("topic", 0), ("topic", 1)), G),
      M("consumer2", ("topic",), None, (("topic", 0), ("topic", 2)), G), M("consumer3", ("topic",), None, (), G)],
     {"consumer1": tps(("topic", 1), ("topic", 3)), "consumer2": [("topic", 2)], "consumer3": [("topic", 0)]},
     {"consumer1": tps(("topic", 1), ("topic", 3)), "consumer2": [("topic", 2)], "consumer3": []}),
    ("testEnsurePartitionsAssignedToHighestGeneration", {"topic": 3, "topic2": 3, "topic3": 3},
     [M("consumer1", ("topic", "topic2", "topic3"), None, (("topic", 0), ("topic2", 0), ("topic3", 0)), 10),
      M("consumer2", ("topic", "topic2", "topic3"), None, (("topic", 1), ("topic2", 1), ("topic3", 1)), 9),
      M("consumer3", ("topic", "topic2", "topic3"), None, (("topic2", 1), ("topic3", 0), ("topic3", 2)), 8)],
     {"consumer1": tps(("topic", 0), ("topic2", 0), ("topic3", 0)),
      "consumer2": tps(("topic", 1), ("topic2", 1), ("topic3", 1)),
      "consumer3": tps(("topic", 2), ("topic2", 2), ("topic3", 2))}, None),
    ("testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration", {"topic": 3, "topic2": 3},
     [M("consumer1", ("topic", "topic2"), None, (("topic", 0), ("topic2", 1), ("topic", 1)), 10),
      M("consumer2", ("topic", "topic2"), None, (("topic", 0), ("topic2", 1), ("topic2", 2)), 8)],
     {"consumer1": tps(("topic", 0), ("topic2", 1), ("topic", 1)),
      "consumer2": tps(("topic", 2), ("topic2", 2), ("topic2", 0))}, None),
]


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("case", STICKY, ids=[c[0] for c in STICKY])
def test_sticky_kafka_cases(case, name):
    _, ppt, members, expected, coop_first_round = case
    got = run(name, ppt, members)
    if name == "cooperative-sticky" and coop_first_round is not None:
        assert got == coop_first_round
        # the follow-up rebalance (CooperativeStickyAssignorTest.verifyValidityAndBalance)
        members = [M(m.member_id, m.topics, None, tuple(got[m.member_id]), G) for m in members]
        got = run(name, ppt, members)
    assert got == expected


def test_no_reassignment_on_current_members():
    """AbstractStickyAssignorTest.testNoReassignmentOnCurrentMembers: only the new member's share
    moves; the three owners keep everything."""
    ppt = {"topic": 3, "topic1": 3, "topic2": 3, "topic3": 3}
    topics = ("topic", "topic2", "topic3", "topic1")
    for name in ("sticky", "cooperative-sticky"):
        got = run(name, ppt, [
            M("consumer1", topics, None, (), -1),
            M("consumer2", topics, None, (("topic", 0), ("topic2", 0), ("topic1", 0)), 9),
            M("consumer3", topics, None, (("topic3", 2), ("topic2", 2), ("topic1", 1)), 8),
            M("consumer4", topics, None, (("topic3", 1), ("topic", 1), ("topic", 2)), 7)])
        assert got["consumer1"] == tps(("topic1", 2), ("topic2", 1), ("topic3", 0))
        assert got["consumer2"] == tps(("topic", 0), ("topic2", 0), ("topic1", 0))


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_subscription_not_equal_and_same_partition_with_three_generations(name):
    """AbstractStickyAssignorTest.testSubscriptionNotEqualAndAssignSamePartitionWith3Generation
    (general algorithm): no partition twice, every member 1..2 partitions, whatever the order of
    the generations."""
    ppt = {"topic": 6, "topic1": 1}
    for g1, g2, g3 in [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)]:
        got = run(name, ppt, [
            M("consumer1", ("topic",), None, (("topic", 0), ("topic", 2)), g1),
            M("consumer2", ("topic",), None, (("topic", 1), ("topic", 2), ("topic", 3)), g2),
            M("consumer3", ("topic",), None, (("topic", 2), ("topic", 4), ("topic", 5)), g3),
            M("consumer4", ("topic1",), None, (("topic1", 0),), 2)])
        flat = [tp for v in got.values() for tp in v]
        assert len(flat) == len(set(flat))
        if name == "sticky":
            assert all(1 <= len(v) <= 2 for v in got.values())


def test_cooperative_uniform_subscription_transfer_ownership_list():
    """CooperativeStickyAssignorTest.testUniformSubscriptionTransferOwnershipListIsRight: with
    racks a (c0) / b (c1) and one replica per partition on alternating racks, two partitions
    change owner, so the first round gives each member only what it keeps."""
    racks = {"topic1": [["a"], ["b"], ["a"], ["b"]]}
    members = [M("c0", ("topic1",), None, (("topic1", 0), ("topic1", 1)), 1, "a"),
               M("c1", ("topic1",), None, (("topic1", 2), ("topic1", 3)), 1, "b")]
    eager = assign("sticky", {"topic1": 4}, [M(m.member_id, m.topics, None, m.owned_partitions, 1, m.rack)
                                             for m in members], racks)
    coop = assign("cooperative-sticky", {"topic1": 4}, members, racks)
    moved = sum(len(set(eager[m.member_id]) - set(m.owned_partitions)) for m in members)
    assert moved == 2
    assert coop == {"c0": [("topic1", 0)], "c1": [("topic1", 3)]}
