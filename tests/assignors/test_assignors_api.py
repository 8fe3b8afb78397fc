"""Public API, input validation and the assign CLI."""
import io
import json
import subprocess
import sys

import pytest

from rebalance_monitor.core.assignors import (ASSIGNOR_NAMES, AssignmentInputError,
                                              MemberSubscription, UnknownAssignor, assign,
                                              run_assign_case)
from rebalance_monitor.cli import main

CASE = {"assignor": "range", "partitions_per_topic": {"t": 3},
        "members": [{"member_id": "b", "topics": ["t"]}, {"member_id": "a", "topics": ["t"],
                                                          "group_instance_id": None, "owned_partitions": [],
                                                          "generation": None, "rack": None}]}


def test_names():
    assert ASSIGNOR_NAMES == ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range",
                              "simple")
    assert issubclass(UnknownAssignor, ValueError) and issubclass(AssignmentInputError, ValueError)


@pytest.mark.parametrize("name", ["consumer-range", "Range", "org.apache.kafka.clients.consumer.RangeAssignor", ""])
def test_unknown_assignor(name):
    with pytest.raises(UnknownAssignor, match="unknown assignor"):
        assign(name, {"t": 1}, [MemberSubscription("a", ("t",))])
    with pytest.raises(UnknownAssignor):
        run_assign_case({**CASE, "assignor": name})


@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
def test_every_member_present_and_sorted(name):
    ms = [MemberSubscription("m1", ("t", "u")), MemberSubscription("m2", ("u",)), MemberSubscription("idle", ())]
    out = assign(name, {"t": 5, "u": 3, "unused": 4}, ms)
    assert set(out) == {"m1", "m2", "idle"} and out["idle"] == []
    assert all(v == sorted(v) for v in out.values())


def test_run_assign_case_shape():
    assert run_assign_case(CASE) == {"a": [["t", 0], ["t", 1]], "b": [["t", 2]]}


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c.update(partitions_per_topic={"t": "3"}), "non-negative integer"),
    (lambda c: c.update(partitions_per_topic={"t": -1}), "non-negative integer"),
    (lambda c: c.update(members="x"), "'members' must be a list"),
    (lambda c: c["members"][0].update(topics="t"), "'topics' must be a list"),
    (lambda c: c["members"][0].pop("member_id"), "member_id must be a string"),
    (lambda c: c["members"][0].update(generation="1"), "'generation' must be an integer"),
    (lambda c: c["members"][0].update(owned_partitions=[["t", "0"]]), "owned partition"),
    (lambda c: c["members"][0].update(rack=3), "'rack'"),
    (lambda c: c["members"][0].update(group_instance_id=5), "group_instance_id"),
    (lambda c: c.update(partition_racks={"t": [["a"]]}), "replica racks of each of its 3 partitions"),
    (lambda c: c.update(members=[{"member_id": "a", "topics": []}, {"member_id": "a", "topics": []}]), "duplicate"),
    (lambda c: c.update(topic_ids={"t": "not-a-uuid"}), "topic_ids"),
])
def test_bad_input_messages(mutate, message):
    case = json.loads(json.dumps(CASE))
    mutate(case)
    with pytest.raises(AssignmentInputError, match=message):
        run_assign_case(case)


@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
def test_a_topic_the_cluster_lacks_is_ignored_as_kafka_does(name):
    # found against Kafka 4.4's classes: a deleted or not-yet-created topic in a subscription is skipped, the
    # rest is assigned (the monitor refused such cases before)
    case = {"assignor": name, "partitions_per_topic": {"t": 2},
            "members": [{"member_id": "a", "topics": ["t", "gone"]}, {"member_id": "b", "topics": ["t"]}]}
    assert run_assign_case(case) == {"a": [["t", 0]], "b": [["t", 1]]}


def test_sticky_counts_a_missing_topic_when_it_compares_subscriptions():
    # Kafka's sticky assignors decide "all subscriptions equal" on the subscriptions as sent: {t, gone} and {t}
    # differ, so the general (not the constrained) algorithm runs; here both keep their partitions either way, and
    # the member with the missing topic is the one whose subscription differs
    from rebalance_monitor.core.assignors import MemberSubscription
    from rebalance_monitor.core.assignors.sticky import _resolve_ownership

    a = MemberSubscription("a", ("t",), subscribed=("t", "gone"))
    b = MemberSubscription("b", ("t",))
    assert _resolve_ownership({"t"}, [a, b])[0] is False
    assert _resolve_ownership({"t"}, [b, MemberSubscription("c", ("t",))])[0] is True


def test_uniform_gives_the_extra_partition_to_a_member_after_an_empty_one():
    # Kafka 4.4's homogeneous uniform assignor: with 1 partition for 2 new members the extra one goes to the last
    # member in the coordinator's order, since enough members follow the first to take every extra partition
    from rebalance_monitor.core.assignors.server import coordinator_member_order

    members = [MemberSubscription("m000-175", ("t0",)), MemberSubscription("m001-768", ("t0",))]
    order = [m.member_id for m in coordinator_member_order(members)]
    out = assign("uniform", {"t0": 1}, members, topic_ids={"t0": "eTzvjx_C6qgV53d0WtPeuw"})
    assert out[order[-1]] == [("t0", 0)] and out[order[0]] == []


def test_cli_main_in_process(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(CASE)))
    assert main(["assign"]) == 0
    assert json.loads(capsys.readouterr().out) == {"a": [["t", 0], ["t", 1]], "b": [["t", 2]]}
    monkeypatch.setattr("sys.stdin", io.StringIO("{"))
    assert main(["assign"]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_cli_subprocess_bad_input_exit_code():
    bad = dict(CASE, members=[{"member_id": "a", "topics": "nope"}])
    proc = subprocess.run([sys.executable, "-m", "rebalance_monitor", "assign"],
                          input=json.dumps(bad), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "topics" in proc.stderr and proc.stdout == ""


def test_pure_core_imports():
    """The assignor modules must not pull in Kafka clients, Spark or Prometheus."""
    code = ("import sys; import rebalance_monitor.core.assignors as a, rebalance_monitor.core.assignment_checks;"
            "a.assign('sticky', {'t': 2}, [a.MemberSubscription('m', ('t',))]);"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('kafka','pyspark','confluent_kafka','prometheus_client')];"
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
