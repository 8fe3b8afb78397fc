"""A streams group (KIP-1071) on a real Apache Kafka 4.4 broker, from `__consumer_offsets` alone: three instances
of the project's Kafka Streams test application on `group.protocol=streams` (one StreamThread each, a stateless
topology: one subtopology, a task per input partition) join; one is killed with `kill -9` and fenced by the
coordinator after its session (`group.streams.session.timeout.ms`, 6 s on this test's broker of its own); one
closes gracefully (leaving the group); the last stops. The project's decoder reads every StreamsGroup* record the
broker wrote, and the core's generations are held against what Kafka's own streams group tool
(`kafka-streams-groups --describe`, StreamsGroupCommand) said at each step: the group epochs, the members' ids,
client ids, process ids and active tasks; no generation is judged by a consumer assignor, and each is judged by the
project's sticky task assignor (Kafka 4.4's StickyTaskAssignor reproduced): the tasks it expects are the ones the
broker assigned, and the tasks a member's departure moved are counted between processes."""
from __future__ import annotations

import time

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import kill_hard, stop_gracefully
from helpers import streams_group_kafka as sk
from helpers.replay import decode_offsets_topic


pytestmark = pytest.mark.integration

TOPICS, GROUP = ("streams-in", "streams-out"), "streams-app-1"
CLIENTS = ("s-a", "s-b", "s-c")


@pytest.fixture(scope="module")
def streams_broker():
    yield from sk.module_broker(TOPICS, 3)


def _stable(bootstrap: str, n: int):
    """The broker's members and state once `n` members hold their active tasks of the group's epoch, every task
    once; None before."""
    st = sk.state(bootstrap, GROUP)
    if st is None or st[0] != "Stable" or st[1] != st[2] or st[3] != n:
        return None
    ms = sk.members(bootstrap, GROUP)
    active = [t for m in ms.values() for t in m["tasks"].get("active", ())]
    ok = len(ms) == n and all(m["epoch"] == st[1] and m["tasks"].get("active") == m["tasks"].get("target-active")
                              for m in ms.values()) and sorted(active) == [("0", p) for p in range(3)]
    return (ms, st) if ok else None


@pytest.fixture(scope="module")
def streams_run(streams_broker, tmp_path_factory):
    """The scenario, once for the module's tests: what the broker's streams group tool said at each step."""
    work = tmp_path_factory.mktemp("streams-members")
    bootstrap = streams_broker.bootstrap
    procs = {}
    try:
        for c in CLIENTS:
            procs[c] = sk.start_instance(bootstrap, GROUP, c, TOPICS, work)
        three, state_three = eventually(lambda: _stable(bootstrap, 3), 120,
                                        lambda: f"three stable members: {sk.members(bootstrap, GROUP)}")
        ids = {m["client_id"].split("-StreamThread-")[0]: mid for mid, m in three.items()}
        killed_at_ms = int(time.time() * 1000)
        kill_hard(procs["s-a"])
        two, state_two = eventually(lambda: _stable(bootstrap, 2), 90,
                                    lambda: f"s-a fenced: {sk.members(bootstrap, GROUP)}")
        stop_gracefully(procs["s-b"])
        one, state_one = eventually(lambda: _stable(bootstrap, 1), 90,
                                    lambda: f"s-b gone: {sk.members(bootstrap, GROUP)}")
        stop_gracefully(procs["s-c"])
        final = eventually(lambda: (s := sk.state(bootstrap, GROUP)) and s[0] == "Empty" and s, 60, "the group empty")
    finally:
        for p in procs.values():
            if p.poll() is None:
                kill_hard(p)
    return {"three": three, "state_three": state_three, "ids": ids, "killed_at_ms": killed_at_ms, "two": two,
            "state_two": state_two, "one": one, "state_one": state_one, "final": final}




def test_a_streams_groups_rebalances_from_consumer_offsets_match_the_broker(streams_broker, streams_run):
    bootstrap = streams_broker.bootstrap
    r = streams_run
    ids = r["ids"]
    # every record the coordinator wrote decodes, none rejected
    kinds_seen, _decoder = decode_offsets_topic(bootstrap)
    assert {f"StreamsGroup{name} v0" for name in (
        "Metadata", "MemberMetadata", "TargetAssignmentMetadata", "TargetAssignmentMember",
        "CurrentMemberAssignment", "Topology")} | {"StreamsGroupMemberMetadata tombstone"} <= kinds_seen, kinds_seen

    gens = [g for g in sk.replay(bootstrap, GROUP) if g["kind"] == "generation"]
    by_epoch = {g["generation"]: g for g in gens}
    assert sorted(by_epoch) == [g["generation"] for g in gens] and len(by_epoch) == len(gens)
    assert gens[-1]["generation"] == r["final"][1] and gens[-1]["members"] == [], gens[-1]
    for g in gens[:-1]:  # (the last, empty, has nothing to assign: the core's rule for an empty group)
        assert (g["protocol"], g["group_type"], g["expected_assignment"], g["mismatched_partitions"],
                g["partitions_moved"]) == ("sticky", "streams", None, None, None), g
        # judged by the sticky task assignor: what it expects is what the broker assigned (the input's partition
        # count is not among the replayed events: the three tasks the members hold bound the count, which is 3)
        assert (g["num_standby_replicas"], g["num_standby_replicas_source"]) == (0, "coordinator"), g
        reason = "task counts bounded below by the tasks held for subtopology 0 (streams-in)"
        if g["mismatched_tasks"] is None:  # only a member that had not reconciled to the epoch when it completed
            assert "not reconciled yet" in g["expected_reason"] and g["expected_tasks"] is not None, g
        else:
            assert (g["mismatched_tasks"], g["expected_reason"]) == (0, reason), g
    # each epoch the broker described: its members, their processes and active tasks
    for broker_members, st in ((r["three"], r["state_three"]), (r["two"], r["state_two"]),
                               (r["one"], r["state_one"])):
        g = by_epoch[st[1]]
        assert sorted(g["members"]) == sorted(broker_members), (g, broker_members)
        assert {mid: t["process_id"] for mid, t in g["tasks"].items()} == \
            {mid: m["process_id"] for mid, m in broker_members.items()}
        described = sk.active_tasks_of(broker_members)
        assert {mid: sorted(map(tuple, t["active"])) for mid, t in g["tasks"].items()} == described
        assert all(t["standby"] == [] and t["warmup"] == [] for t in g["tasks"].values())  # stateless: none
        assert g["mismatched_tasks"] == 0 and {mid: sorted(map(tuple, t["active"]))
                                               for mid, t in g["expected_tasks"].items()} == described
    joined = {c["member_id"]: c.get("client_id") for g in gens for c in g["causes"] if c["cause"] == "member_joined"}
    assert joined == {mid: f"{c}-StreamThread-1-consumer" for c, mid in ids.items()}, joined
    # s-a's fence: the first epoch without it, after its session ran out
    gone = next(g for g in gens if g["generation"] > r["state_three"][1] and ids["s-a"] not in g["members"])
    assert sorted(gone["members"]) == sorted([ids["s-b"], ids["s-c"]]), gone
    assert [c.get("member_id") for c in gone["causes"]] == [ids["s-a"]], gone["causes"]
    # its tasks went to other processes (each instance is a process of one thread): moves between processes
    assert (gone["tasks_moved_between_processes"], gone["tasks_moved_within_process"]) == (
        sk.held_before(gens, gone, ids["s-a"]), 0), gone
    assert sk.SESSION_MS - 1500 <= gone["started_ms"] - r["killed_at_ms"] <= sk.SESSION_MS + 15000, \
        (gone["started_ms"] - r["killed_at_ms"])
    # s-b's graceful close, then s-c's: each the cause of the epoch it ended
    left_b = next(g for g in gens if g["generation"] > r["state_two"][1] and ids["s-b"] not in g["members"])
    assert [c.get("member_id") for c in left_b["causes"]] == [ids["s-b"]], left_b["causes"]
    assert (left_b["tasks_moved_between_processes"], left_b["tasks_moved_within_process"]) == (
        sk.held_before(gens, left_b, ids["s-b"]), 0), left_b
    assert [c.get("member_id") for c in gens[-1]["causes"]] == [ids["s-c"]], gens[-1]["causes"]
