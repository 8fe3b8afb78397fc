"""The streams group task assignor (KIP-1071, core/assignors/sticky_task.py) against Kafka 4.4's own
StickyTaskAssignor (testing.assignor_oracle runs it): seeded random cases (RM_TASK_ASSIGNOR_CASES, default 400),
Kafka's own StickyTaskAssignorTest cases as data (cases/kafka_sticky_task_cases.json: each case's inputs and what
Kafka's test asserts of it, held by ours and by Kafka's class); then the comparison helpers (core/assignors/
task_moves.py) and bad input. `make assignors-soak` runs many more (the soak's "sticky-task" turn)."""
from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path

import pytest

from rebalance_monitor.core.assignors import AssignmentInputError, KafkaAssignorFailure
from rebalance_monitor.core.assignors.sticky_task import Subtopology, TaskAssignment, TaskMember, sticky_task_assign
from rebalance_monitor.core.assignors.sticky_task_case import run_sticky_task_case
from rebalance_monitor.core.assignors.task_moves import misplaced_tasks, task_moves
from rebalance_monitor.testing.assignor_oracle import KafkaAssignorOracle
from rebalance_monitor.testing.assignor_shrink import agree, outcome
from rebalance_monitor.testing.task_assignor_cases import seeded_task_case

CASES = int(os.environ.get("RM_TASK_ASSIGNOR_CASES", "400"))
KAFKA_CASES = json.loads((Path(__file__).parent / "cases" / "kafka_sticky_task_cases.json").read_text())


@pytest.fixture(scope="module")
def oracle():
    with KafkaAssignorOracle() as o:
        yield o


@pytest.mark.integration
def test_agrees_with_kafka_on_random_cases(oracle):
    cases = [seeded_task_case(7, i) for i in range(CASES)]
    kafkas = []
    for i in range(0, len(cases), 100):
        kafkas += oracle.assign_many(cases[i:i + 100])
    wrong = [(c, outcome(c), k) for c, k in zip(cases, kafkas) if not agree(outcome(c), k)]
    assert not wrong, f"{len(wrong)} of {len(cases)} disagree; the first: {json.dumps(wrong[0])[:3000]}"
    # the cases reach what they are for: standbys placed, some replicas left unplaced, stickiness used
    results = [k["result"] for k in kafkas]
    assert sum(any(a["standby"] for a in r.values()) for r in results) > CASES // 4
    assert sum(any(m.get("active") for m in c["members"]) for c in cases) > CASES // 3


def _check_expectations(result: dict, expect: dict) -> None:
    for member, n in expect.get("active_counts", {}).items():
        assert len(result[member]["active"]) == n, (member, result[member])
    for member, tasks in expect.get("active_includes", {}).items():
        assert all(t in result[member]["active"] for t in tasks), (member, result[member])
    for kind in ("active", "standby"):
        for member, tasks in expect.get(kind, {}).items():
            assert result[member][kind] == tasks, (member, kind, result[member])


@pytest.mark.parametrize("entry", KAFKA_CASES, ids=[c["name"] for c in KAFKA_CASES])
def test_kafka_sticky_task_assignor_test_cases(entry):
    _check_expectations(run_sticky_task_case(entry["case"]), entry["expect"])


@pytest.mark.integration
def test_kafka_sticky_task_assignor_test_cases_on_kafka(oracle):
    for entry, kafka in zip(KAFKA_CASES, oracle.assign_many([e["case"] for e in KAFKA_CASES])):
        assert "result" in kafka, (entry["name"], kafka)
        _check_expectations(kafka["result"], entry["expect"])
        assert run_sticky_task_case(entry["case"]) == kafka["result"], entry["name"]


@pytest.mark.integration
def test_failures_and_edges_agree_with_kafka(oracle):
    edges = [
        # tasks and no member: Kafka's assignor throws
        {"assignor": "sticky-task", "subtopologies": [{"id": "0", "partitions": 2}], "members": []},
        # no tasks at all
        {"assignor": "sticky-task", "subtopologies": [{"id": "0", "partitions": 0, "stateful": True}],
         "members": [{"member_id": "a", "process_id": "p"}], "num_standby_replicas": 2},
        # more standby replicas than other processes: the rest are dropped
        {"assignor": "sticky-task", "subtopologies": [{"id": "0", "partitions": 3, "stateful": True}],
         "members": [{"member_id": "a", "process_id": "p"}, {"member_id": "b", "process_id": "p"},
                     {"member_id": "c", "process_id": "q"}], "num_standby_replicas": 2},
        # claims on tasks the topology does not have, two members claiming one active task
        {"assignor": "sticky-task", "subtopologies": [{"id": "0", "partitions": 2, "stateful": True}],
         "members": [{"member_id": "a", "process_id": "p", "active": [["0", 0], ["0", 5], ["gone", 1]]},
                     {"member_id": "b", "process_id": "q", "active": [["0", 0]], "standby": [["gone", 0]]}],
         "num_standby_replicas": 1},
    ]
    for case, kafka in zip(edges, oracle.assign_many(edges)):
        assert agree(outcome(case), kafka), (case, outcome(case), kafka)


@pytest.mark.integration
def test_ids_of_one_hash_agree_with_kafka(oracle):
    """Process and member ids that share one Java hash ("Aa" and "BB" hash alike) fill one HashMap bucket: up to
    nine, the JDK grows the table rather than make the bucket a tree, and the order is the port's; ten or more in a
    table of 64 slots are a red-black tree, not modelled (docs/assignors.md)."""
    words = ["".join(p) for p in itertools.product(["Aa", "BB"], repeat=5)]
    cases = []
    for n in (7, 8, 9):
        for i in range(30):
            rnd = random.Random(f"{n}:{i}")
            processes = rnd.sample(words, n)
            members = [{"member_id": w, "process_id": processes[j] if i % 2 else rnd.choice(processes),
                        "active": [["0", j]] if rnd.random() < 0.5 else []}
                       for j, w in enumerate(rnd.sample(words, n))]
            cases.append({"assignor": "sticky-task", "num_standby_replicas": rnd.randint(0, 2), "members": members,
                          "subtopologies": [{"id": "0", "partitions": rnd.randint(1, 30), "stateful": True}]})
    for case, kafka in zip(cases, oracle.assign_many(cases)):
        assert agree(outcome(case), kafka), (case, outcome(case), kafka)


def test_no_member_is_kafkas_failure():
    with pytest.raises(KafkaAssignorFailure):
        sticky_task_assign([Subtopology("0", 1)], [])
    assert sticky_task_assign([Subtopology("0", 0)], []) == {}


@pytest.mark.parametrize("bad", [
    lambda: sticky_task_assign([Subtopology("0", -1)], []),
    lambda: sticky_task_assign([Subtopology("0", 1), Subtopology("0", 2)], []),
    lambda: sticky_task_assign([Subtopology("0", 1)], [TaskMember("a", "p"), TaskMember("a", "q")]),
    lambda: sticky_task_assign([Subtopology("0", 1)], [TaskMember("a", "p", active=(("0",),))]),
    lambda: sticky_task_assign([Subtopology("0", 1)], [TaskMember("a", "p")], num_standby_replicas=-1),
    lambda: run_sticky_task_case({"assignor": "sticky-task", "subtopologies": {}, "members": []}),
    lambda: run_sticky_task_case({"assignor": "sticky-task", "subtopologies": [],
                                  "members": [{"member_id": "a", "process_id": "p", "task_offsets": [["0", 1]]}]}),
])
def test_bad_input_is_a_readable_error(bad):
    with pytest.raises(AssignmentInputError):
        bad()


def test_standby_never_shares_a_process_with_its_active():
    for i in range(200):
        case = seeded_task_case(11, i)
        result = run_sticky_task_case(case)
        process = {m["member_id"]: m["process_id"] for m in case["members"]}
        for kind_a, kind_b in (("active", "standby"), ("standby", "standby")):
            seen: dict = {}
            for mid, a in result.items():
                for t in a[kind_a]:
                    seen.setdefault(tuple(t), []).append(process[mid])
            if kind_a == "active":
                for mid, a in result.items():
                    for t in a[kind_b]:
                        assert process[mid] not in seen.get(tuple(t), []), (i, t, mid)
            else:
                assert all(len(ps) == len(set(ps)) for ps in seen.values()), i
        assert all(a["warmup"] == [] for a in result.values())


def _ta(active=(), standby=()):
    return TaskAssignment(frozenset(active), frozenset(standby))


def test_misplaced_tasks_say_whether_only_the_thread_differs():
    process_of = {"a1": "A", "a2": "A", "b1": "B"}
    expected = {"a1": _ta({("0", 0)}), "a2": _ta({("0", 1)}, {("0", 2)}), "b1": _ta({("0", 2)}, {("0", 0)})}
    actual = {"a1": _ta({("0", 0)}), "a2": _ta(), "b1": _ta({("0", 2)}, {("0", 0)})}
    actual["a1"] = _ta({("0", 0), ("0", 1)}, {("0", 2)})
    wrong = misplaced_tasks(expected, actual, process_of)
    assert [(w.task, w.kind, w.expected_members, w.actual_members, w.same_processes) for w in wrong] == [
        (("0", 1), "active", ("a2",), ("a1",), True),
        (("0", 2), "standby", ("a2",), ("a1",), True)]
    actual["b1"] = _ta({("0", 2), ("0", 1)}, {("0", 0)})
    actual["a1"] = _ta({("0", 0)}, {("0", 2)})
    assert [(w.task, w.same_processes) for w in misplaced_tasks(expected, actual, process_of)] == [
        (("0", 1), False), (("0", 2), True)]
    assert misplaced_tasks(expected, expected, process_of) == []


def test_task_moves_split_threads_from_processes():
    process_of = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}
    before = {"a1": _ta({("0", 0), ("0", 1)}, {("0", 3)}), "b1": _ta({("0", 2)}, {("0", 0)}), "c1": _ta()}
    after = {"a1": _ta({("0", 0)}), "a2": _ta({("0", 1)}), "b1": _ta(set(), {("0", 0)}),
             "c1": _ta({("0", 2), ("1", 0)}, {("0", 3)})}
    moves = task_moves(before, after, process_of)
    assert [(m.task, m.kind, m.from_member, m.to_member) for m in moves.within_process] == [
        (("0", 1), "active", "a1", "a2")]
    assert [(m.task, m.kind, m.from_member, m.to_member, m.from_process, m.to_process)
            for m in moves.between_processes] == [
        (("0", 2), "active", "b1", "c1", "B", "C"),
        (("1", 0), "active", None, "c1", None, "C"),
        (("0", 3), "standby", "a1", "c1", "A", "C")]
    assert [m.task for m in moves.restores] == [("0", 2), ("1", 0)]
    assert moves.dropped == ()
    assert task_moves(after, after, process_of) == type(moves)()


def test_a_rebalance_of_the_assignor_moves_little():
    """A member joining a balanced group of the assignor's own making takes tasks from the others, and keeps the
    rest in place: every move is to the new member."""
    subs = [Subtopology("0", 8, True), Subtopology("1", 4, False)]
    members = [TaskMember(f"m{i}", f"p{i}") for i in range(3)]
    first = sticky_task_assign(subs, members, 1)
    members = [TaskMember(m.member_id, m.process_id, tuple(first[m.member_id].active),
                          tuple(first[m.member_id].standby)) for m in members] + [TaskMember("m3", "p3")]
    second = sticky_task_assign(subs, members, 1)
    moves = task_moves(first, second, {m.member_id: m.process_id for m in members})
    assert moves.within_process == ()
    assert {m.to_member for m in moves.between_processes if m.kind == "active"} == {"m3"}
