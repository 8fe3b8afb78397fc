"""Fixtures of the Kafka tests: the one broker of the run, the one SASL_SSL broker of the run, and unique names
for topics and groups."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """Apache Kafka (one KRaft node, testing.broker) on free loopback ports, for the whole run."""
    from rebalance_monitor.testing.broker import Broker

    log = tmp_path_factory.mktemp("broker") / "broker.log"
    b = Broker(log_path=str(log)).start()
    yield b
    b.stop()


@pytest.fixture()
def unique(request):
    """A short unique name for topics and groups of one test."""
    import uuid

    return f"{request.node.name[:30]}-{uuid.uuid4().hex[:6]}".replace("[", "-").replace("]", "")


@pytest.fixture(scope="session")
def sasl_ssl_broker(tmp_path_factory):
    """Apache Kafka (one KRaft node) whose client listener is SASL_SSL with SCRAM-SHA-512, its TLS files made in
    the run's tmp dir, for the whole run: helpers.sasl_ssl_broker.SaslSslBroker (bootstrap, username, password,
    ca_file, overrides() for the monitor's kafka.security.*)."""
    from helpers.sasl_ssl_broker import start_sasl_ssl_broker

    b = start_sasl_ssl_broker(tmp_path_factory.mktemp("sasl-ssl-broker"))
    yield b
    b.stop()
