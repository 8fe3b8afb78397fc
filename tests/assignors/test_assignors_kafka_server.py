"""Kafka group-coordinator assignor tests (OptimizedUniformAssignmentBuilderTest,
UniformHeterogeneousAssignmentBuilderTest - formerly GeneralUniformAssignmentBuilderTest - and
the coordinator's RangeAssignorTest) as data: cases/kafka_server_cases.json.

Kafka's tests put members in a TreeMap (sorted), force the subscription type and sometimes use
LinkedHashMaps for the previous assignment; the cases say so ("member_order", "subscription_type",
"owned_order") and we call the assignor functions with the same switches.  The broker itself
uses HashMaps, which is what :func:`assign` follows."""
import pytest

from helpers.kafka_assignor_harness import load_cases
from rebalance_monitor.core.assignors import MemberSubscription, assign
from rebalance_monitor.core.assignors.server import server_range_assign, uniform_assign

CASES = load_cases("kafka_server_cases.json")
FUNCS = {"uniform": uniform_assign, "server-range": server_range_assign}


def _members(case):
    return [MemberSubscription(m["member_id"], tuple(m["topics"]), m["group_instance_id"],
                               tuple((t, p) for t, p in m["owned_partitions"]))
            for m in case["members"]]


def _by_topic(tps):
    out = {}
    for t, p in tps:
        out.setdefault(t, []).append(p)
    return {t: sorted(ps) for t, ps in out.items()}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_kafka_server_case(case):
    members = _members(case)
    order = (lambda ms: sorted(ms, key=lambda m: m.member_id)) if case["member_order"] == "sorted" else None
    result = FUNCS[case["assignor"]](case["partitions_per_topic"], members,
                                     topic_ids=case["topic_ids"], member_order=order,
                                     subscription_type=case["subscription_type"],
                                     owned_order=case["owned_order"])
    assert {mid: _by_topic(tps) for mid, tps in result.items()} == case["expected"]


def test_server_range_static_member_keeps_range_after_member_id_change():
    """RangeAssignorTest.testStaticMembership / testMixedStaticMembership (group coordinator)."""
    def run(a_id):
        ms = [MemberSubscription(a_id, ("t1",), "instanceA"), MemberSubscription("C", ("t1",), "instanceC"),
              MemberSubscription("B", ("t1",))]
        return assign("server-range", {"t1": 5}, ms)
    before, after = run("A"), run("memberA1")
    assert before["A"] == after["memberA1"]
    assert before["B"] == after["B"] and before["C"] == after["C"]
    ms = [MemberSubscription("A", ("t1",), "instanceA"), MemberSubscription("B", ("t1",), "instanceB")]
    first = assign("server-range", {"t1": 3}, ms)
    ms[0] = MemberSubscription("memberA1", ("t1",), "instanceA")
    assert assign("server-range", {"t1": 3}, ms)["memberA1"] == first["A"]


@pytest.mark.parametrize("name", ["uniform", "server-range"])
def test_nonexistent_topic_is_ignored(name):
    """testOneMemberSubscribedToNonexistentTopic: Kafka's assignor throws when handed a topic id it cannot
    describe, but the coordinator never hands it one: it resolves subscribed names to the ids of existing
    topics only. At the monitor's level (topic names), a missing topic is skipped."""
    assert assign(name, {"topic1": 3}, [MemberSubscription("A", ("topic2",)), MemberSubscription("B", ("topic1",))]) \
        == {"A": [], "B": [("topic1", 0), ("topic1", 1), ("topic1", 2)]}


@pytest.mark.parametrize("hetero", [False, True])
def test_uniform_large_sample_valid_and_balanced(hetero):
    """testValidityAndBalanceForLargeSampleSet: 99 topics x 3 partitions, 49 members."""
    ppt = {f"topic-{i}": 3 for i in range(1, 100)}
    topics = tuple(ppt)
    members = [MemberSubscription(f"member{i}", topics if not hetero or i % 2 else topics[: 50 + i])
               for i in range(1, 50)]
    result = assign("uniform", ppt, members)
    seen = [tp for tps in result.values() for tp in tps]
    assert len(seen) == len(set(seen)) == 297
    subs = {m.member_id: set(m.topics) for m in members}
    assert all(t in subs[mid] for mid, tps in result.items() for t, _ in tps)
    sizes = [len(v) for v in result.values()]
    if not hetero:
        assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_kafka_server_case_by_4_0_0s_rules(case):
    """Kafka 4.0's own unit cases, as that release expected them (`expected_kafka_4_0` where 4.0.1 changed the
    answer), from the 4.0.0 rules."""
    order = (lambda ms: sorted(ms, key=lambda m: m.member_id)) if case["member_order"] == "sorted" else None
    result = FUNCS[case["assignor"]](case["partitions_per_topic"], _members(case),
                                     topic_ids=case["topic_ids"], member_order=order,
                                     subscription_type=case["subscription_type"],
                                     owned_order=case["owned_order"], release="4.0.0")
    assert {mid: _by_topic(tps) for mid, tps in result.items()} == case.get("expected_kafka_4_0", case["expected"])
