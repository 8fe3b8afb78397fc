"""The share groups' simple assignor (core/assignors/share_simple.py, Kafka 4.4's SimpleAssignor): Kafka's own
SimpleAssignorTest cases (4.4) as data where they name an exact assignment, its properties (every assignable
partition held, members joining and leaving one at a time with the previous assignment carried on, as its
incremental tests do), the rules of sharing, and, against Kafka's own class (integration), members joining and
leaving one at a time through a share group's epochs."""
from __future__ import annotations

import math
import random

import pytest

from rebalance_monitor.core.assignors import (AssignmentInputError, KafkaAssignorFailure, MemberSubscription,
                                              assign, run_assign_case)
from rebalance_monitor.testing.assignor_cases import kafka_uuid

M = MemberSubscription


def _held(result) -> set:
    return {tp for tps in result.values() for tp in tps}


def _ids(*topics, seed=7):
    rnd = random.Random(seed)
    return {t: kafka_uuid(rnd.randbytes(16)) for t in topics}


# SimpleAssignorTest (Kafka 4.4): the cases whose assignment Kafka's test names exactly (they follow from the rules
# whatever the topics' random ids): (name, partitions, members [(id, topics)], assignable, expected)
KAFKA_CASES = [
    ("testAssignWithThreeMembersThreeTopicsHeterogeneousWithNonAssignableTopic",
     {"topic1": 3, "topic2": 3, "topic3": 2},
     [("A", ("topic1", "topic2")), ("B", ("topic3",)), ("C", ("topic2", "topic3"))],
     {"topic1": [0, 1, 2], "topic2": [0, 1, 2]},
     # A and C share topic2's three partitions, two and one (A first in the coordinator's order)
     None),
    ("testAssignWithOneMemberNoAssignedTopicHeterogeneous",
     {"topic1": 3, "topic2": 2}, [("A", ("topic1", "topic2")), ("B", ())], None,
     {"A": [("topic1", 0), ("topic1", 1), ("topic1", 2), ("topic2", 0), ("topic2", 1)], "B": []}),
]


@pytest.mark.parametrize("case", KAFKA_CASES, ids=[c[0] for c in KAFKA_CASES])
def test_kafka_simple_assignor_case(case):
    _name, ppt, members, assignable, expected = case
    result = assign("simple", ppt, [M(mid, topics) for mid, topics in members],
                    topic_ids=_ids(*ppt), assignable=assignable)
    if expected is not None:
        assert result == expected
    else:  # Kafka's test: A holds topic1 whole and two of topic2, B nothing (topic3 not assignable), C one of topic2
        assert [tp for tp in result["A"] if tp[0] == "topic1"] == [("topic1", 0), ("topic1", 1), ("topic1", 2)]
        assert len([tp for tp in result["A"] if tp[0] == "topic2"]) == 2 and result["B"] == []
        assert len(result["C"]) == 1 and _held(result) == {("topic1", p) for p in range(3)} | \
            {("topic2", p) for p in range(3)}


@pytest.mark.parametrize("assignable, held", [
    (None, 5),  # testAssignWithTwoMembersAndTwoTopicsHomogeneous
    ({"topic1": [0, 1, 2], "topic3": [0, 1]}, 5),  # ...WithAllowedMap (topic3 has 3 partitions, 2 not initialised)
    ({"topic1": [0, 1, 2]}, 3),  # ...WithNonAssignableTopic
])
def test_kafka_two_members_two_topics_homogeneous(assignable, held):
    ppt = {"topic1": 3, "topic3": 3 if assignable and "topic3" in assignable else 2}
    members = [M("A", ("topic1", "topic3")), M("B", ("topic1", "topic3"))]
    result = assign("simple", ppt, members, topic_ids=_ids(*ppt), assignable=assignable)
    assert len(_held(result)) == held
    assert sorted(len(tps) for tps in result.values()) in ([2, 3], [1, 2])  # balanced: one apart at most
    if assignable:
        assert all(p in assignable.get(t, ()) for t, p in _held(result))


def test_kafka_three_members_three_topics_heterogeneous_with_allowed_map():
    ppt = {"topic1": 3, "topic2": 3, "topic3": 2}
    members = [M("A", ("topic1", "topic2")), M("B", ("topic3",)), M("C", ("topic2", "topic3"))]
    allowed = {"topic1": [0, 1], "topic2": [0, 2], "topic3": [1]}
    for assignable, held in ((None, 8), (allowed, 5)):
        result = assign("simple", ppt, members, topic_ids=_ids(*ppt), assignable=assignable)
        assert len(_held(result)) == held
        assert all(t in dict((m.member_id, m.topics) for m in members)[mid] for mid, tps in result.items()
                   for t, _ in tps)


@pytest.mark.parametrize("subscriptions", [
    [("topic1",)],  # testIncremental...Homogeneous: 24 partitions, one topic
    [("topic1", "topic2", "topic3"), ("topic2",), ("topic3",), ("topic1", "topic2")],  # ...Heterogeneous
], ids=["homogeneous", "heterogeneous"])
def test_kafka_incremental_members_keep_every_partition_held(subscriptions):
    """testIncrementalAssignmentIncreasing/DecreasingMembers*: 24 partitions, members M0..M100 joining one at a time
    and leaving one at a time, each epoch starting from the previous one's assignment: every partition held."""
    ppt = {"topic1": 24} if len(subscriptions) == 1 else {"topic1": 12, "topic2": 8, "topic3": 4}
    ids = _ids(*ppt)
    current: dict = {}
    order: list = []

    def epoch():
        members = [M(mid, subscriptions[int(mid[1:]) % len(subscriptions)], owned_partitions=tuple(current[mid]))
                   for mid in order]
        result = assign("simple", ppt, members, topic_ids=ids)
        assert len(_held(result)) == 24
        current.clear()
        current.update(result)

    for n in range(101):
        order.append(f"M{n}")
        current[f"M{n}"] = []
        epoch()
    while len(order) > 1:
        current.pop(order.pop())
        epoch()


def test_partitions_are_shared_when_members_outnumber_them():
    """Five members, two partitions: each partition wants ceil(5 / 2) = 3 holders; the members hold one each but
    one member, which holds both (Kafka's desired counts: ceil(1.2 * (i + 1)) - ceil(1.2 * i))."""
    members = [M(f"m{i}", ("t",)) for i in range(5)]
    result = assign("simple", {"t": 2}, members, topic_ids=_ids("t"))
    holders = {p: sum(("t", p) in tps for tps in result.values()) for p in range(2)}
    assert sum(holders.values()) == 6 and max(holders.values()) == 3
    assert sorted(len(tps) for tps in result.values()) == [1, 1, 1, 1, 2]


def test_sticky_a_joining_member_takes_from_the_fullest():
    owned = (("t", 0), ("t", 1), ("t", 2), ("t", 3))
    result = assign("simple", {"t": 4}, [M("a", ("t",), owned_partitions=owned), M("b", ("t",))],
                    topic_ids=_ids("t"))
    assert len(result["a"]) == len(result["b"]) == 2 and set(result["a"]) < set(owned)


def test_unassignable_partitions_are_not_handed_out_but_kept():
    """The coordinator hands out only initialised partitions, but one a member already holds stays, and is even
    offered to others (Kafka's builders look at the assignable map only for the partitions nobody holds)."""
    members = [M("a", ("t",), owned_partitions=(("t", 0),)), M("b", ("t",))]
    result = assign("simple", {"t": 3}, members, topic_ids=_ids("t"), assignable={"t": [1]})
    assert ("t", 0) in result["a"] and ("t", 2) not in _held(result)
    result = assign("simple", {"t": 3}, members[1:], topic_ids=_ids("t"), assignable={"t": [1]})
    assert result == {"b": [("t", 1)]}


def test_a_topic_nobody_subscribes_to_any_more_stays_in_a_heterogeneous_target():
    members = [M("a", ("t",), owned_partitions=(("u", 0), ("t", 0))), M("b", ("v",))]
    result = assign("simple", {"t": 1, "u": 1, "v": 1}, members, topic_ids=_ids("t", "u", "v"))
    assert ("u", 0) in result["a"]  # as Kafka's SimpleHeterogeneousAssignmentBuilder leaves it
    homogeneous = assign("simple", {"t": 1, "u": 1}, [members[0], M("b", ("t",))], topic_ids=_ids("t", "u"))
    assert ("u", 0) not in homogeneous["a"]  # the homogeneous builder drops it


# Kafka's builders run out of unfilled members while a partition still wants holders (NoSuchElementException): the
# one partition handed out (t-0) wants both members, but m0 is full with a partition of u, which is not initialised
FAILING = {"assignor": "simple", "partitions_per_topic": {"t": 1, "u": 2},
           "members": [{"member_id": "m0", "topics": ["t", "u"], "owned_partitions": [["u", 0], ["u", 1]]},
                       {"member_id": "m1", "topics": ["t", "u"]}],
           "assignable_partitions": {"t": [0]}, "topic_ids": _ids("t", "u")}


def test_kafkas_failure_is_an_input_error():
    with pytest.raises(KafkaAssignorFailure, match="NoSuchElementException"):
        run_assign_case(FAILING)


def test_assignable_partitions_are_for_the_share_assignor_only():
    with pytest.raises(AssignmentInputError, match="share"):
        assign("uniform", {"t": 1}, [M("a", ("t",))], assignable={"t": [0]})
    with pytest.raises(AssignmentInputError, match="assignable_partitions"):
        assign("simple", {"t": 1}, [M("a", ("t",))], assignable={"t": "0"})


def test_desired_counts_follow_javas_double_arithmetic():
    from rebalance_monitor.core.assignors.share_simple import _desired_counts
    for n, m in ((24, 101), (7, 3), (1, 5), (100, 7)):
        sharing = (m + n - 1) // n
        counts = _desired_counts(sharing, n, m)
        assert sum(counts) == sharing * n and max(counts) - min(counts) <= 1
        assert counts == [math.ceil(sharing * n / m * (i + 1)) - math.ceil(sharing * n / m * i) for i in range(m)]


@pytest.mark.integration
def test_epochs_of_joining_and_leaving_members_agree_with_kafka():
    """A share group's epochs through members joining and leaving, each starting from the previous epoch's target
    (Kafka's answer), held against Kafka 4.4's SimpleAssignor at every epoch."""
    from rebalance_monitor.testing.assignor_oracle import KafkaAssignorOracle
    from rebalance_monitor.testing.assignor_shrink import outcome

    rnd = random.Random(42)
    ppt = {"orders": 6, "payments": 3, "audit": 1}
    ids = _ids(*ppt)
    subs = [["orders"], ["orders", "payments"], ["orders", "payments", "audit"]]
    current: dict = {}
    epochs = 0
    with KafkaAssignorOracle() as oracle:
        for step in range(60):
            if current and (len(current) > 8 or rnd.random() < 0.35):
                current.pop(rnd.choice(sorted(current)))
            else:
                current[f"member-{step}"] = ([], subs[rnd.randrange(3) if step > 20 else 0])
            case = {"assignor": "simple", "partitions_per_topic": ppt, "topic_ids": ids,
                    "members": [{"member_id": mid, "topics": topics, "owned_partitions": owned}
                                for mid, (owned, topics) in current.items()]}
            kafkas = oracle.assign_many([case])[0]
            assert outcome(case)["result"] == kafkas["result"], case
            epochs += 1
            for mid, tps in kafkas["result"].items():
                current[mid] = (tps, current[mid][1])
        assert "NoSuchElementException" in oracle.assign_many([FAILING])[0]["error"]  # Kafka fails there too
    assert epochs == 60
