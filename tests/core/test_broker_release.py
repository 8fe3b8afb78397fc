"""The server (KIP-848) assignors follow the broker's release (CoreSettings.broker_release, from the configuration's
kafka.broker_release): a group on a 4.0.0 broker is judged by 4.0.0's rules and its record says so; the client
assignors run in the clients and keep the newest rules whatever the broker."""
from __future__ import annotations

import pytest

from helpers.events import kinds, run, stable_group
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
