"""The brokers' release from their ApiVersions answer (broker_facts/release.py), without a broker: the table's rows,
a broker newer or older than the table, an answer unlike any, and the patches that answer alike. Real brokers of
3.9.2, 4.0.0 and 4.4.0 answer in tests/broker_facts/test_release_on_real_brokers.py."""
from __future__ import annotations

from enum import IntEnum

import pytest

from rebalance_monitor.broker_facts.release import (
    CONDITIONAL_KEYS, ReleaseGuess, combined, release_from_api_versions)
from rebalance_monitor.broker_facts.release_fingerprints import (
    API_MAXIMA, API_NAMES, METADATA_VERSION, RELEASES, SUPPORTED_FEATURES)
from rebalance_monitor.core.assignors import parse_release, server_rules_release

# What each release's answer gives: (release handed to the core, candidates). Patches of one minor answer alike;
# 4.0.0's server assignor rules are not 4.0.1's and 4.0.2's, so their shared answer names no release.
EXPECTED = {
    **dict.fromkeys(("3.9.0", "3.9.1", "3.9.2"), ("3.9.2", ("3.9.0", "3.9.1", "3.9.2"))),
    **dict.fromkeys(("4.0.0", "4.0.1", "4.0.2"), (None, ("4.0.0", "4.0.1", "4.0.2"))),
    **dict.fromkeys(("4.1.0", "4.1.1", "4.1.2"), ("4.1.2", ("4.1.0", "4.1.1", "4.1.2"))),
    **dict.fromkeys(("4.2.0", "4.2.1", "4.2.2"), ("4.2.2", ("4.2.0", "4.2.1", "4.2.2"))),
    **dict.fromkeys(("4.3.0", "4.3.1"), ("4.3.1", ("4.3.0", "4.3.1"))),
    "4.4.0": ("4.4.0", ("4.4.0",)),
}


def without_telemetry(release: str) -> dict[int, int]:
    """A row as a broker without a telemetry reporter answers it (no GetTelemetrySubscriptions, PushTelemetry)."""
    return {k: v for k, v in API_MAXIMA[release].items() if k not in CONDITIONAL_KEYS}


def test_the_table_holds_every_release_on_maven_central_of_3_9_and_4_x():
    assert RELEASES == tuple(sorted(RELEASES, key=parse_release)) == tuple(EXPECTED)
    assert set(API_MAXIMA) == set(SUPPORTED_FEATURES) == set(METADATA_VERSION) == set(RELEASES)
    assert all({71, 72} <= set(row) and set(row) <= set(API_NAMES) for row in API_MAXIMA.values())
    # the KIP-848 heartbeat: an early-access v0 on 3.9, v1 from 4.0 on
    assert [API_MAXIMA[r][68] for r in ("3.9.2", "4.0.0", "4.4.0")] == [0, 1, 1]


@pytest.mark.parametrize("release", RELEASES)
def test_each_rows_answer_names_its_releases(release):
    for answer in (API_MAXIMA[release], without_telemetry(release)):
        guess = release_from_api_versions(answer)
        assert (guess.release, guess.candidates) == EXPECTED[release], guess.basis
        guess = release_from_api_versions(answer, SUPPORTED_FEATURES[release])
        assert (guess.release, guess.candidates) == EXPECTED[release], guess.basis


def test_minor_releases_answer_unlike_and_by_metadata_version_too():
    minors = {}
    for release in RELEASES:
        minors.setdefault(release.rsplit(".", 1)[0], set()).add(
            (tuple(sorted(API_MAXIMA[release].items())), METADATA_VERSION[release]))
    assert all(len(answers) == 1 for answers in minors.values())  # patches alike
    assert len({a for answers in minors.values() for a in answers}) == len(minors) == 6
    assert len({METADATA_VERSION[r] for r in RELEASES}) == 6  # the newest metadata.version, one per minor


def test_4_0_0_and_its_patches_are_said_not_guessed():
    guess = release_from_api_versions(API_MAXIMA["4.0.1"], SUPPORTED_FEATURES["4.0.1"])
    assert guess.release is None
    assert "4.0.0: 4.0.0's; 4.0.1, 4.0.2: 4.4.0's" in guess.basis and "kafka.broker_release" in guess.basis
    # what the core does with nothing: the newest rules, 4.0.1's and 4.0.2's
    assert server_rules_release(guess.release) == server_rules_release("4.0.1") != server_rules_release("4.0.0")


def test_the_answer_may_come_as_kafka_pythons_ranges_with_api_key_enums():
    key_enum = IntEnum("ApiKey", {f"K{k}": k for k in API_MAXIMA["4.2.1"]})
    answer = {key_enum(k): (0, v) for k, v in without_telemetry("4.2.1").items()}
    assert release_from_api_versions(answer).release == "4.2.2"


def test_a_telemetry_key_answered_at_another_version_is_not_the_row():
    answer = {**API_MAXIMA["4.4.0"], 72: 1}
    guess = release_from_api_versions(answer)
    assert guess.release == "4.4.0" and guess.candidates == ()  # more than 4.4.0: a newer broker
    assert "PushTelemetry (72) v1 not v0" in guess.basis


def test_a_broker_newer_than_the_table_gets_the_newest_rules():
    newer = {**without_telemetry("4.4.0"), 18: 6, 95: 0}  # ApiVersions v6, and a key no release serves
    guess = release_from_api_versions(newer)
    assert guess == ReleaseGuess("4.4.0", (), guess.basis)
    assert "newer than 4.4.0" in guess.basis and "ApiVersions (18) v6 not v5" in guess.basis
    # a newer release that dropped a key still supports a newer metadata.version
    dropped = {k: v for k, v in newer.items() if k != 46}
    assert release_from_api_versions(dropped).release is None
    guess = release_from_api_versions(dropped, {"metadata.version": (7, 40)})
    assert guess.release == "4.4.0" and "level 40" in guess.basis
    guess = release_from_api_versions(dropped, {"metadata.version": {"supported": (7, 33), "finalized": (34, 34)}})
    assert guess.release == "4.4.0"


def test_a_broker_older_than_the_table_names_no_release():
    older = {k: v for k, v in without_telemetry("3.9.0").items() if k not in (80, 81)}  # no KIP-853 voters
    older[1] = 16
    guess = release_from_api_versions(older)
    assert guess == ReleaseGuess(None, (), guess.basis) and "older than 3.9.0" in guess.basis
    guess = release_from_api_versions(without_telemetry("3.9.0"), {"metadata.version": (1, 20)})
    assert guess.release is None and "3.9.0" in guess.basis  # 3.9's answer, 3.8's features: not guessed


def test_an_answer_unlike_every_row_names_no_release():
    mixed = {**without_telemetry("4.2.0"), 0: 11}  # 4.2's answer with 3.9's Produce
    guess = release_from_api_versions(mixed)
    assert guess == ReleaseGuess(None, (), guess.basis)
    assert "no known release" in guess.basis and "nearest 4.2.2" in guess.basis
    assert "Produce (0) v11 not v13" in guess.basis
    assert release_from_api_versions({}).release is None


def test_features_that_contradict_the_api_maxima_are_said():
    features = {**SUPPORTED_FEATURES["4.1.0"], "metadata.version": (7, 28)}  # 4.1's keys, 4.2-IV0 supported
    guess = release_from_api_versions(API_MAXIMA["4.1.0"], features)
    assert guess.release is None and guess.candidates == ("4.1.0", "4.1.1", "4.1.2")
    assert "metadata.version (7, 28) not (7, 27)" in guess.basis


def test_the_clusters_finalized_metadata_version_is_named():
    features = {"metadata.version": {"supported": (7, 33), "finalized": (27, 27)}}
    guess = release_from_api_versions(API_MAXIMA["4.4.0"], features)
    assert guess.release == "4.4.0" and "the cluster runs metadata.version 4.1-IV1" in guess.basis


def test_brokers_combined():
    g44 = release_from_api_versions(API_MAXIMA["4.4.0"])
    g40 = release_from_api_versions(API_MAXIMA["4.0.0"])
    g41 = release_from_api_versions(API_MAXIMA["4.1.0"])
    assert combined({1: g44, 2: g44}).release == "4.4.0"
    assert combined({1: g44}) == g44
    rolling = combined({1: g41, 2: g44})
    assert rolling.release is None and rolling.candidates == ("4.1.0", "4.1.1", "4.1.2", "4.4.0")
    assert "1: 4.1.2; 2: 4.4.0" in rolling.basis
    assert "4.0.0 or 4.0.1 or 4.0.2" in combined({1: g40, 2: g44}).basis
    assert combined({}).release is None
