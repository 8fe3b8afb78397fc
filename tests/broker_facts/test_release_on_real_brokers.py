"""Real Apache Kafka brokers of 3.9.2, 4.0.0 and 4.4.0 answer ApiVersions as the generated table says their release
does (release_fingerprints.py, from the jars), and `ask_release` names their release from that answer: 3.9.2 and
4.4.0 by the rows their patches share, 4.0.0 not at all (4.0.1 and 4.0.2 answer alike and follow other rules)."""
from __future__ import annotations

import pytest

from rebalance_monitor.broker_facts.release import CONDITIONAL_KEYS, ask_api_versions, ask_release
from rebalance_monitor.broker_facts.release_fingerprints import API_MAXIMA, METADATA_VERSION, SUPPORTED_FEATURES
from rebalance_monitor.kafka_connection import KafkaConnection
from rebalance_monitor.testing.kafka_install import KAFKA_VERSION, RELEASES

pytestmark = [pytest.mark.integration]

GUESSES = {
    "3.9.2": ("3.9.2", ("3.9.0", "3.9.1", "3.9.2")),
    "4.0.0": (None, ("4.0.0", "4.0.1", "4.0.2")),
    "4.4.0": ("4.4.0", ("4.4.0",)),
}


@pytest.fixture(scope="module", params=sorted(RELEASES))
def release_broker(request, tmp_path_factory):
    """A broker of each release the tests run: the run's own for 4.4.0, one of this module's for the others."""
    if request.param == KAFKA_VERSION:
        yield request.getfixturevalue("broker")
        return
    from rebalance_monitor.testing.broker import Broker

    b = Broker(version=request.param, log_path=str(tmp_path_factory.mktemp(f"kafka-{request.param}") / "broker.log"))
    b.start()
    yield b
    b.stop()


def test_the_broker_answers_its_releases_row(release_broker):
    from kafka.admin import KafkaAdminClient

    release = release_broker.version
    admin = KafkaAdminClient(bootstrap_servers=release_broker.bootstrap, client_id="rm-test-api-versions")
    try:
        answers = ask_api_versions(admin)
        admin.describe_cluster()  # the caller's client stays open
    finally:
        admin.close()
    assert list(answers) == [1]
    api, features = answers[1]
    # no telemetry reporter on the test broker: GetTelemetrySubscriptions and PushTelemetry are not served
    assert {k: hi for k, (_lo, hi) in api.items()} == {
        k: v for k, v in API_MAXIMA[release].items() if k not in CONDITIONAL_KEYS}
    assert {name: f["supported"] for name, f in features.items() if "supported" in f} == SUPPORTED_FEATURES[release]
    # a fresh cluster is formatted at its release's newest production metadata.version
    level = METADATA_VERSION[release][0]
    assert features["metadata.version"]["finalized"] == (level, level)


def test_ask_release_names_what_the_answer_can_tell(release_broker):
    release = release_broker.version
    guess = ask_release(KafkaConnection(bootstrap_servers=release_broker.bootstrap))
    assert (guess.release, guess.candidates) == GUESSES[release], guess.basis
    assert f"the cluster runs metadata.version {METADATA_VERSION[release][1]}" in guess.basis
    if release == "4.0.0":
        assert "rules differ" in guess.basis
    assert ask_release(release_broker.bootstrap) == guess
