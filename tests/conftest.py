"""Shared fixtures: one broker and one SparkSession per test run (both are expensive to start)."""
from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """Apache Kafka (one KRaft node, testing.broker) on free loopback ports, for the whole run."""
    from rebalance_monitor.testing.broker import Broker

    log = tmp_path_factory.mktemp("broker") / "broker.log"
    b = Broker(log_path=str(log)).start()
    yield b
    b.stop()


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The one SparkSession of the run (local[2], RocksDB state store)."""
    from rebalance_monitor.spark.session import build_session

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("Java is required for the Spark tests: run scripts/bootstrap.sh (installs openjdk-17)")
    session = build_session(master="local[2]", app_name="rebalance-monitor-tests",
                            local_dir=str(tmp_path_factory.mktemp("spark-local")))
    yield session
    session.stop()


@pytest.fixture()
def unique(request):
    """A short unique name for topics and groups of one test."""
    import uuid

    return f"{request.node.name[:30]}-{uuid.uuid4().hex[:6]}".replace("[", "-").replace("]", "")
