"""The brokers of the Java plugins' tests, shared by their modules: Kafka 4.4 with the broker plugin's
`ExporterPlugin` (KIP-1217) and Kafka 3.9 with its `ReceiverPlugin` (KIP-714's first pair), one at a time (a
session-scoped parametrized fixture: pytest runs every test of one broker before it starts the other), each with
the events topic and a client-metrics subscription asking every client for the plugin's metrics every 2 s."""
from __future__ import annotations

import pytest

from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing.kafka_install import KAFKA_CLASSIC_VERSION, KAFKA_VERSION

EVENTS = "rebalance-events"
PUSH_INTERVAL_MS = 2000


@pytest.fixture(scope="session", params=[(KAFKA_VERSION, jt.EXPORTER_PLUGIN), (KAFKA_CLASSIC_VERSION, jt.RECEIVER_PLUGIN)],
                ids=["kafka-4.4-exporter", "kafka-3.9-receiver"])
def plugin_broker(request, tmp_path_factory):
    version, plugin = request.param
    log = tmp_path_factory.mktemp("plugin-broker") / "broker.log"
    broker = jt.plugin_broker(EVENTS, plugin=plugin, version=version, log_path=str(log)).start()
    try:
        broker.create_topics({EVENTS: 1})
        jt.subscribe(broker.bootstrap, "rebalance-monitor", PUSH_INTERVAL_MS)
        yield broker
    finally:
        broker.stop()
