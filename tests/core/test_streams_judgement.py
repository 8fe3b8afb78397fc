"""A streams group's generations (KIP-1071) judged by the sticky task assignor (core/streams_expected.py): the tasks
Kafka 4.4's StickyTaskAssignor would give, held against the members' tasks; the tasks a rebalance moved, between
processes (a state restore) or between the threads of one process; the topology and num.standby.replicas as the
group's records give them, and the group's snapshot keeping them. The events are the ones the offsets topic's
records give (tests/inputs/test_offsets_streams_groups.py decodes them)."""
from __future__ import annotations

import json

from helpers.events import ev, kinds, run

from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.settings import CoreSettings

G = "app"
TOPOLOGY = ev("streams_topology", 10, G, topology_epoch=0, subtopologies=[
    {"subtopology_id": "0", "source_topics": ["in"], "state_changelog_topics": ["app-store-changelog"]}])
PARTITIONS = ev("topic_partitions", 11, G, topics={"in": 4})


def standby(n: int, ts: int = 12) -> dict:
    return ev("streams_topology", ts, G, num_standby_replicas=n)


def join(ts: int, member: str, process: str) -> dict:
    return ev("join", ts, G, member_id=member, client_id=f"{member}-consumer", protocols=["sticky"], topics=[],
              group_protocol="streams", process_id=process, topology_epoch=0)


def epoch(ts: int, n: int, tasks: dict, before: list | None = None) -> list:
    """Epoch `n`'s records: `before` (joins, removals), the epoch's bump, the target's completion, then each member's
    current assignment {member: (active, standby)} of partitions of subtopology 0."""
    out = list(before or ()) + [ev("rebalance_started", ts, G, generation=n - 1, reason=f"epoch {n}"),
                                ev("generation_completed", ts + 1, G, generation=n, protocol="sticky", leader=None,
                                   protocol_type="streams")]
    for i, (member, (active, stand)) in enumerate(sorted(tasks.items())):
        out.append(ev("sync", ts + 2 + i, G, member_id=member, generation=n, protocol="sticky", leader=None,
                      assignment=[], member_state="stable", active_tasks=[["0", p] for p in active],
                      standby_tasks=[["0", p] for p in stand], warmup_tasks=[]))
    return out


def expected(active, stand) -> dict:
    return {"active": [["0", p] for p in active], "standby": [["0", p] for p in stand], "warmup": []}


def moves(g) -> tuple:
    return g["tasks_moved"], g["tasks_moved_between_processes"], g["tasks_moved_within_process"]


def test_a_scale_out_then_a_crash_are_judged_and_their_moves_counted():
    events = [TOPOLOGY, PARTITIONS, standby(1),
              *epoch(1000, 1, {"m1": ((0, 1, 2, 3), ())}, [join(1000, "m1", "p1")]),
              # scale-out: m2 on another process; Kafka keeps m1's first two tasks (by partition), gives m2 the rest,
              # and a standby of each stateful task on the other process (m1's of the tasks it gave up)
              *epoch(2000, 2, {"m1": ((0, 1), (2, 3)), "m2": ((2, 3), (0, 1))}, [join(2000, "m2", "p2")]),
              # m1's process crashes: m2 takes every task (the standbys it held spare it two restores); one process
              # left, so no standby anywhere
              *epoch(9000, 3, {"m2": ((0, 1, 2, 3), ())},
                     [ev("member_removed", 9000, G, member_id="m1", cause="session_timeout")])]
    gens = kinds(run(events), "generation")
    assert [g["generation"] for g in gens] == [1, 2, 3]
    assert [g["mismatched_tasks"] for g in gens] == [0, 0, 0]
    assert [g["expected_reason"] for g in gens] == [None, None, None]  # the topology and partition counts known
    assert gens[1]["expected_tasks"] == {"m1": expected((0, 1), (2, 3)), "m2": expected((2, 3), (0, 1))}
    assert gens[2]["expected_tasks"] == {"m2": expected((0, 1, 2, 3), ())}
    # new standbys are new replicas, not moves; m2's active 0_0 and 0_1 came from m1, on another process
    assert [moves(g) for g in gens] == [(0, 0, 0), (2, 2, 0), (2, 2, 0)]
    assert {(g["num_standby_replicas"], g["num_standby_replicas_source"]) for g in gens} == {(1, "coordinator")}


def test_an_assignment_the_assignor_would_not_make_is_counted_task_by_task():
    events = [TOPOLOGY, PARTITIONS, standby(1),
              *epoch(1000, 1, {"m1": ((0, 1, 2, 3), ())}, [join(1000, "m1", "p1")]),
              # m2 given the tasks m1 keeps under Kafka's rule: four active and four standby tasks misplaced
              *epoch(2000, 2, {"m1": ((2, 3), (0, 1)), "m2": ((0, 1), (2, 3))}, [join(2000, "m2", "p2")])]
    g = kinds(run(events), "generation")[-1]
    assert g["mismatched_tasks"] == 8 and g["expected_tasks"]["m1"] == expected((0, 1), (2, 3))


def test_a_thread_of_the_same_process_takes_tasks_within_the_process():
    events = [TOPOLOGY, PARTITIONS,
              *epoch(1000, 1, {"m1": ((0, 1, 2, 3), ())}, [join(1000, "m1", "p1")]),
              *epoch(2000, 2, {"m1": ((0, 1), ()), "m1b": ((2, 3), ())}, [join(2000, "m1b", "p1")])]
    g = kinds(run(events), "generation")[-1]
    assert (g["mismatched_tasks"], moves(g)) == (0, (2, 0, 2))
    # no assignment configs written (a 4.1 coordinator's records): Kafka's default, no standby
    assert (g["num_standby_replicas"], g["num_standby_replicas_source"]) == (0, "default")


def test_a_change_of_num_standby_replicas_changes_the_expected_tasks():
    two = [TOPOLOGY, PARTITIONS, standby(1),
           *epoch(1000, 1, {"m1": ((0, 1, 2, 3), ())}, [join(1000, "m1", "p1")]),
           *epoch(2000, 2, {"m1": ((0, 1), (2, 3)), "m2": ((2, 3), (0, 1))}, [join(2000, "m2", "p2")])]
    # the group's streams.num.standby.replicas set to 0: the next epoch's assignment drops every standby
    events = two + [standby(0, 2900), *epoch(3000, 3, {"m1": ((0, 1), ()), "m2": ((2, 3), ())})]
    gens = kinds(run(events), "generation")
    assert [g["num_standby_replicas"] for g in gens] == [1, 1, 0]
    assert gens[2]["expected_tasks"] == {"m1": expected((0, 1), ()), "m2": expected((2, 3), ())}
    assert (gens[2]["mismatched_tasks"], moves(gens[2])) == (0, (0, 0, 0))
    # had the members kept their standbys, each would be a misplaced task
    kept = two + [standby(0, 2900), *epoch(3000, 3, {"m1": ((0, 1), (2, 3)), "m2": ((2, 3), (0, 1))})]
    assert kinds(run(kept), "generation")[-1]["mismatched_tasks"] == 4


def test_without_the_topology_the_tasks_held_stand_for_it_and_the_reason_says_so():
    events = [*epoch(1000, 1, {"m1": ((0, 1, 2), ())}, [join(1000, "m1", "p1")]),
              *epoch(2000, 2, {"m1": ((0, 1), ()), "m2": ((2,), ())}, [join(2000, "m2", "p2")])]
    gens = kinds(run(events), "generation")
    assert [g["mismatched_tasks"] for g in gens] == [0, 0]
    assert gens[1]["expected_reason"] == "task counts bounded below by the tasks held for the topology " \
                                         "(subtopologies from the tasks held)"


def test_a_member_not_reconciled_to_the_epoch_leaves_the_check_open():
    events = [TOPOLOGY, PARTITIONS,
              *epoch(1000, 1, {"m1": ((0, 1, 2, 3), ())}, [join(1000, "m1", "p1")]),
              # epoch 2 completes; m1's current assignment is still epoch 1's (it has not revoked yet), m2 has none
              join(2000, "m2", "p2"), ev("rebalance_started", 2000, G, generation=1),
              ev("generation_completed", 2001, G, generation=2, protocol="sticky", leader=None,
                 protocol_type="streams"),
              ev("sync", 2002, G, member_id="m1", generation=2, protocol="sticky", leader=None, assignment=[],
                 member_state="unrevoked_tasks", active_tasks=[["0", p] for p in range(4)], standby_tasks=[],
                 warmup_tasks=[]),
              ev("heartbeat", 30000, G, member_id="m2", generation=2, error=None)]
    g = kinds(run(events), "generation")[-1]
    assert g["generation"] == 2 and g["expected_tasks"]["m2"] == expected((2, 3), ())
    assert g["mismatched_tasks"] is None and g["tasks_moved"] is None
    assert "not reconciled yet" in g["expected_reason"]


def test_the_tasks_held_at_the_epochs_bump_are_the_previous_assignment():
    """The coordinator hands the assignor each member's current tasks when it computes an epoch's target: those the
    members reconciled to after their last generation's record went out, not the record's."""
    events = [TOPOLOGY, PARTITIONS,
              *epoch(1000, 1, {"m1": ((0, 1, 2, 3), ())}, [join(1000, "m1", "p1")]),
              join(2000, "m2", "p2"), ev("rebalance_started", 2000, G, generation=1),
              ev("generation_completed", 2001, G, generation=2, protocol="sticky", leader=None,
                 protocol_type="streams"),
              ev("heartbeat", 30000, G, member_id="m2", generation=2, error=None),  # epoch 2's record goes out
              *epoch(31000, 2, {"m1": ((0, 1), ()), "m2": ((2, 3), ())})[2:],  # then both reconcile to epoch 2
              # m1's process crashes: m2 takes 0_0 and 0_1 from it (two moves, not four)
              *epoch(40000, 3, {"m2": ((0, 1, 2, 3), ())},
                     [ev("member_removed", 40000, G, member_id="m1", cause="session_timeout")])]
    gens = kinds(run(events), "generation")
    assert [g["generation"] for g in gens] == [1, 2, 3]
    assert gens[1]["mismatched_tasks"] is None  # its record went out before the members reconciled
    assert (gens[2]["mismatched_tasks"], moves(gens[2])) == (0, (2, 2, 0))


def test_the_topology_and_the_last_tasks_survive_the_groups_snapshot():
    events = [parse_event(e) for e in [
        TOPOLOGY, PARTITIONS, standby(1), *epoch(1000, 1, {"m1": ((0, 1, 2, 3), ())}, [join(1000, "m1", "p1")]),
        *epoch(2000, 2, {"m1": ((0, 1), (2, 3)), "m2": ((2, 3), (0, 1))}, [join(2000, "m2", "p2")])]]
    g = GroupMonitor(G, CoreSettings())
    for e in events[:9]:  # epoch 1, then m2 joins and the epoch is bumped to 2
        g.process(e)
    assert g.streams_state["standby"] == 1 and g.streams_state["prev"]["m1"]["active"] == [["0", p] for p in range(4)]
    assert g.streams_state["before"]["2"]["m1"]["active"] == [["0", p] for p in range(4)]
    again = GroupMonitor.from_state(json.loads(json.dumps(g.to_state())), CoreSettings())
    assert again.streams_state == g.streams_state
    assert [g.process(e) for e in events[9:]] == [again.process(e) for e in events[9:]]


def test_without_the_coordinators_record_the_brokers_settings_give_num_standby_replicas():
    """No group metadata record named the coordinator's num.standby.replicas: the group's own
    `streams.num.standby.replicas`, else the brokers' `group.streams.num.standby.replicas` (the broker poller's
    `group_config` events) is what the assignor is taken to use, and the record says where it came from."""
    brokers = ev("group_config", 5, "", source="broker", group_type="streams", num_standby_replicas=1)
    own = ev("group_config", 6, G, source="group", group_type="streams", num_standby_replicas=0)
    two = [*epoch(1000, 1, {"m1": ((0, 1, 2, 3), ())}, [join(1000, "m1", "p1")]),
           *epoch(2000, 2, {"m1": ((0, 1), (2, 3)), "m2": ((2, 3), (0, 1))}, [join(2000, "m2", "p2")])]
    gens = kinds(run([TOPOLOGY, PARTITIONS, brokers, *two]), "generation")
    assert [(g["num_standby_replicas"], g["num_standby_replicas_source"]) for g in gens] == [(1, "broker")] * 2
    assert gens[-1]["mismatched_tasks"] == 0
    gens = kinds(run([TOPOLOGY, PARTITIONS, brokers, own, *two]), "generation")
    assert [(g["num_standby_replicas"], g["num_standby_replicas_source"]) for g in gens] == [(0, "group")] * 2
    assert gens[-1]["mismatched_tasks"] == 4      # with no standby, each standby held is misplaced
    # the coordinator's own word wins
    gens = kinds(run([TOPOLOGY, PARTITIONS, brokers, own, standby(1), *two]), "generation")
    assert [(g["num_standby_replicas"], g["num_standby_replicas_source"]) for g in gens] == [(1, "coordinator")] * 2
