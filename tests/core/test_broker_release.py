"""The server (KIP-848) assignors follow the broker's release (CoreSettings.broker_release, from the configuration's
kafka.broker_release): a group on a 4.0.0 broker is judged by 4.0.0's rules and its record says so; the client
assignors run in the clients and keep the newest rules whatever the broker."""
from __future__ import annotations

import pytest

from helpers.events import ev, hb, heartbeats, join, kinds, run, stable_group, sync, tps
from rebalance_monitor.config import ConfigError, load_config
from rebalance_monitor.core.assignors import ASSIGNOR_RELEASE, server_rules_release
from rebalance_monitor.core.settings import CoreSettings


def _generation(protocol, broker_release):
    out = run(stable_group(("a", "b", "c"), parts=5, protocol=protocol),
              settings=CoreSettings(broker_release=broker_release))
    return kinds(out, "generation")[0]


@pytest.mark.parametrize("release, rules", [
    (None, ASSIGNOR_RELEASE), ("4.0.0", "4.0.0"), ("4.0.1", ASSIGNOR_RELEASE), ("4.1.0", ASSIGNOR_RELEASE),
    ("4.3.1", ASSIGNOR_RELEASE), ("4.4.0", ASSIGNOR_RELEASE), ("4.9.0", ASSIGNOR_RELEASE),
    ("4.0.0-rc1", "4.0.0"), ("3.9.2", None), ("3.7.0", None), ("four", None)])
def test_the_rules_each_broker_release_follows(release, rules):
    assert server_rules_release(release) == rules


def test_a_uniform_group_on_a_4_0_0_broker_is_judged_by_4_0_0s_rules():
    on_4_0_0, on_newest = _generation("uniform", "4.0.0"), _generation("uniform", None)
    assert on_4_0_0["expected_assignor_release"] == "4.0.0"
    assert on_newest["expected_assignor_release"] == ASSIGNOR_RELEASE
    # five partitions over three members: the two members that get a second one are not the same
    assert on_4_0_0["expected_assignment"] != on_newest["expected_assignment"]
    for gen in (on_4_0_0, on_newest):
        sizes = sorted(len(tps) for tps in gen["expected_assignment"].values())
        assert sizes == [1, 2, 2]
    # the real assignment (a range-like split) is judged against each release's answer
    assert on_4_0_0["mismatched_partitions"] != on_newest["mismatched_partitions"]


def test_a_broker_before_4_0_gets_no_server_assignment_and_says_why():
    gen = _generation("uniform", "3.9.2")
    assert gen["expected_assignment"] is None and gen["expected_assignor_release"] is None
    assert gen["expected_reason"] == "server assignor rules of Kafka 3.9.2 not reproduced (4.0.0 and later are)"


@pytest.mark.parametrize("broker_release", [None, "4.0.0", "3.9.2"])
def test_the_client_assignors_keep_their_release_whatever_the_broker(broker_release):
    gen = _generation("range", broker_release)
    assert gen["expected_assignor_release"] == ASSIGNOR_RELEASE
    assert gen["mismatched_partitions"] == 0


def test_the_configuration_key(tmp_path):
    def settings(value):
        path = tmp_path / "monitor.yaml"
        path.write_text(f"kafka:\n  broker_release: {value!r}\n" if value is not None else "{}\n")
        return load_config(str(path), env={}).core_settings()

    assert settings(None).broker_release is None  # auto
    assert settings("auto").broker_release is None
    assert settings("4.0.0").broker_release == "4.0.0"
    for bad in ("4.0", "latest", "4.0.0.1"):
        with pytest.raises(ConfigError, match=r"kafka\.broker_release: auto, or .*MAJOR\.MINOR\.PATCH"):
            settings(bad)


# --- the release learned from the brokers' log (broker_release events, group "") -----------------------------------
def _uniform_generation(events_before=(), settings=None, start=1000):
    out = run(list(events_before) + stable_group(("a", "b", "c"), parts=5, protocol="uniform", start=start),
              settings=settings)
    return kinds(out, "generation")[0]


def test_a_release_the_log_announced_before_the_group_existed_is_the_groups():
    gen = _uniform_generation([ev("broker_release", 500, "", release="4.0.0")])
    assert gen["expected_assignor_release"] == "4.0.0"
    assert gen["expected_assignment"] == _generation("uniform", "4.0.0")["expected_assignment"]


def test_a_release_announced_while_the_group_lives_judges_its_next_generations():
    u = {"protocol": "uniform"}
    events = stable_group(("a", "b"), parts=5, protocol="uniform") + heartbeats(["a", "b"], 1, 3000, 9000)
    events += [ev("broker_release", 9500, "", release="4.0.0"),
               join(10_000, "c", protocols=("uniform",)),
               hb(10_100, "a", 1, error="REBALANCE_IN_PROGRESS"),
               join(10_200, "a", protocols=("uniform",), owned=tps("t", 0, 1, 2)),
               join(10_300, "b", protocols=("uniform",), owned=tps("t", 3, 4)),
               sync(10_600, "a", 2, tps("t", 0), "a", **u),
               sync(10_610, "b", 2, tps("t", 3, 4), "a", **u),
               sync(10_620, "c", 2, tps("t", 1, 2), "a", **u)] + heartbeats(["a", "b", "c"], 2, 12_000, 20_000)
    gens = kinds(run(events), "generation")
    assert [(g["generation"], g["expected_assignor_release"]) for g in gens] == [(1, ASSIGNOR_RELEASE), (2, "4.0.0")]


def test_the_configured_release_wins_over_the_logs():
    gen = _uniform_generation([ev("broker_release", 500, "", release="4.0.0")],
                              settings=CoreSettings(broker_release="4.4.0"))
    assert gen["expected_assignor_release"] == ASSIGNOR_RELEASE


def test_a_release_before_4_0_from_the_log_says_why_there_is_no_expected_assignment():
    gen = _uniform_generation([ev("broker_release", 500, "", release="3.9.2")])
    assert gen["expected_assignment"] is None
    assert gen["expected_reason"] == "server assignor rules of Kafka 3.9.2 not reproduced (4.0.0 and later are)"


def test_the_learned_release_survives_a_snapshot():
    from rebalance_monitor.core.events import parse_event
    from rebalance_monitor.core.group import GroupMonitor

    g = GroupMonitor("g")
    g.process(parse_event(ev("broker_release", 500, "g", release="4.0.0")))
    assert g.broker_release == "4.0.0"
    assert GroupMonitor.from_state(g.to_state()).broker_release == "4.0.0"
    old = g.to_state()
    del old["br"]  # a snapshot written before the field
    assert GroupMonitor.from_state(old).broker_release is None


def test_a_kip848_groups_range_is_the_coordinators_and_follows_the_broker():
    """A KIP-848 group whose coordinator logs `with 'range' assignor` is assigned by the group coordinator's
    RangeAssignor (server-range), not the clients' one: it follows the broker's release."""
    k848 = {"group_protocol": "consumer"}
    events = [join(1000, m, protocols=(), **k848) for m in ("a", "b")]
    events += [ev("rebalance_started", 1000, generation=0, reason="group epoch bumped to 1"),
               ev("generation_completed", 1001, generation=1, protocol="range", protocol_type="consumer")]
    events += [sync(1100 + i, m, 1, tps("t", 2 * i, 2 * i + 1), None, protocol=None, member_state="stable")
               for i, m in enumerate(("a", "b"))]
    on_3_9 = kinds(run(events, settings=CoreSettings(broker_release="3.9.2")), "generation")[0]
    assert on_3_9["protocol"] == "range" and on_3_9["expected_assignment"] is None
    assert on_3_9["expected_reason"].startswith("server assignor rules of Kafka 3.9.2")
    on_4_0 = kinds(run(events, settings=CoreSettings(broker_release="4.0.0")), "generation")[0]
    assert on_4_0["expected_assignor_release"] == "4.0.0" and on_4_0["mismatched_partitions"] == 0


@pytest.mark.parametrize("release", ["", "unknown", "4.0", "v4.0.0", " 4.0.0"])
def test_a_broker_release_event_naming_no_release_is_rejected_with_a_reason(release):
    from rebalance_monitor.core.events import Rejected, parse_event

    got = parse_event(ev("broker_release", 500, "", release=release))
    assert isinstance(got, Rejected) and got.reason == "bad_value:release"


def test_an_assign_case_names_the_release_whose_rules_it_follows():
    from rebalance_monitor.core.assignors import AssignmentInputError, run_assign_case

    case = {"assignor": "uniform", "partitions_per_topic": {"t": 5},
            "members": [{"member_id": m, "topics": ["t"]} for m in "abc"]}
    assert run_assign_case({**case, "release": "4.0.0"}) != run_assign_case(case) == \
        run_assign_case({**case, "release": ASSIGNOR_RELEASE})
    with pytest.raises(AssignmentInputError, match="uniform assignor follows Kafka 4.0.0 or 4.4.0"):
        run_assign_case({**case, "release": "4.2.0"})
    with pytest.raises(AssignmentInputError, match="range assignor follows Kafka 4.4.0"):
        run_assign_case({**case, "assignor": "range", "release": "4.0.0"})
    with pytest.raises(AssignmentInputError, match="'release' must be a string"):
        run_assign_case({**case, "release": 4})


def test_a_kip848_group_is_judged_by_the_server_assignor_its_members_declare():
    """From `__consumer_offsets` alone a KIP-848 generation names no assignor; its members' records name the one
    they asked for (`group.remote.assignor`): when all name the same, the generation is judged by it. When any names
    none (the broker's configured default, which no input shows), it is not."""
    k848 = {"group_protocol": "consumer"}

    def generation(protocols_b):
        events = [join(1000, "a", protocols=("uniform",), **k848), join(1000, "b", protocols=protocols_b, **k848),
                  ev("rebalance_started", 1000, generation=0, reason="group epoch bumped to 1"),
                  ev("generation_completed", 1001, generation=1, protocol_type="consumer")]
        events += [sync(1100 + i, m, 1, tps("t", *parts), None, protocol=None, member_state="stable")
                   for i, (m, parts) in enumerate((("a", (0, 1, 2)), ("b", (3,))))]
        return kinds(run(events, settings=CoreSettings(broker_release="4.0.0")), "generation")[0]

    declared = generation(("uniform",))
    assert declared["protocol"] == "uniform" and declared["expected_assignor_release"] == "4.0.0"
    assert declared["expected_assignment"] is not None
    for other in ((), ("range",)):
        gen = generation(other)
        assert gen["protocol"] is None and gen["expected_reason"].startswith("protocol unknown")


def test_members_in_one_hash_bucket_are_ordered_as_they_joined():
    """What a real 4.0.0 broker did (tests/assignors/test_server_assignor_on_kafka_4_0.py): two members whose ids
    fall in one bucket of the coordinator's HashMap iterate in the order they joined, the first member (which held
    every partition) first; by 4.0.0's rules it then keeps three partitions. Ordered by id, the second member came
    first and took the extra partition: a mismatch that was not there."""
    first, second = "8NQDef34S2S6rcwpJAOxHg", "6Q5gih0QSCO9G7kIUmXOpA"  # (bucket 1 of 16, both)
    k848 = {"group_protocol": "consumer", "protocols": ("uniform",), "topics": ("orders",)}
    events = [join(1000, first, **k848), ev("rebalance_started", 1000, generation=0, reason="group epoch bumped to 1"),
              ev("generation_completed", 1001, generation=1, protocol_type="consumer"),
              sync(1100, first, 1, tps("orders", 0, 1, 2, 3, 4), None, protocol=None, member_state="stable"),
              join(20_000, second, **k848),
              ev("rebalance_started", 20_000, generation=1, reason="group epoch bumped to 2"),
              ev("generation_completed", 20_001, generation=2, protocol_type="consumer"),
              sync(20_100, second, 2, [], None, protocol=None, member_state="unreleased_partitions"),
              sync(20_200, first, 2, tps("orders", 0, 1, 2), None, protocol=None, member_state="stable"),
              sync(20_300, second, 2, tps("orders", 3, 4), None, protocol=None, member_state="stable")]
    gens = kinds(run(events, settings=CoreSettings(broker_release="4.0.0")), "generation")
    assert [g["generation"] for g in gens] == [1, 2]
    assert gens[1]["expected_assignment"] == {first: [["orders", 0], ["orders", 1], ["orders", 2]],
                                              second: [["orders", 3], ["orders", 4]]}
    assert gens[1]["mismatched_partitions"] == 0
