"""`rebalance-monitor client-metrics` (kafka-python's admin client, the base install) on the real Kafka 4.4 broker
of the Java plugins' tests: with the fixture's own subscription deleted by the command, a subscription the command
makes (matching one client id) is what Kafka's `kafka-configs` describes, and what makes a stock Java consumer
(Kafka's console consumer) push, so the broker plugin's events of it arrive; `list` shows it and `delete` removes it.
The fixture's subscription is put back at the end."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import events_of, kill_hard

from rebalance_monitor.client_metrics_subscription import SUBSCRIPTION_METRICS
from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing.kafka_install import KAFKA_VERSION, classpath, java_binary

EVENTS = "rebalance-events"  # the plugin_broker fixture's (tests/java/conftest.py)
FIXTURE_SUBSCRIPTION = "rebalance-monitor"


def _command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rebalance_monitor", "client-metrics", *args], capture_output=True,
                          text=True, timeout=120)


def _listed(bootstrap: str) -> dict[str, dict]:
    done = _command("list", "--bootstrap-server", bootstrap)
    assert done.returncode == 0, done.stderr
    return {r["name"]: r for r in map(json.loads, done.stdout.splitlines())}


@pytest.mark.integration
def test_the_command_sets_up_the_subscription_a_stock_java_consumer_pushes_under(plugin_broker, unique, tmp_path):
    if plugin_broker.version != KAFKA_VERSION:
        pytest.skip("one broker is enough for the command: Kafka 4.4 (the 3.9 broker has the same config resource)")
    bootstrap = plugin_broker.bootstrap
    name, client = f"cm-{unique}"[:60], f"cm-java-{unique}"[:60]
    topic, group = f"t-{unique}", f"g-{unique}"
    plugin_broker.create_topics({topic: 1})
    proc, restored = None, False
    try:
        assert FIXTURE_SUBSCRIPTION in _listed(bootstrap)
        done = _command("delete", "--bootstrap-server", bootstrap, "--name", FIXTURE_SUBSCRIPTION)
        assert done.returncode == 0, done.stderr
        assert FIXTURE_SUBSCRIPTION not in _listed(bootstrap)

        done = _command("subscribe", "--bootstrap-server", bootstrap, "--name", name, "--interval-ms", "2000",
                        "--match", f"client_id={client}")
        assert done.returncode == 0, done.stderr
        listed = _listed(bootstrap)
        assert listed[name] == {"name": name, "metrics": ",".join(SUBSCRIPTION_METRICS), "interval.ms": "2000",
                                "match": f"client_id={client}"}, listed

        # Kafka's own kafka-configs describes it
        described = subprocess.run(
            [java_binary(), "-Xmx128m", "-cp", classpath(), "org.apache.kafka.tools.ConfigCommand",
             "--bootstrap-server", bootstrap, "--describe", "--entity-type", "client-metrics", "--entity-name", name],
            capture_output=True, text=True, timeout=120)
        assert described.returncode == 0, described.stderr
        assert "interval.ms=2000" in described.stdout and f"match=client_id={client}" in described.stdout, described
        assert all(p in described.stdout for p in SUBSCRIPTION_METRICS), described.stdout

        # a stock Java consumer with that client id pushes under it: the plugin's events of its member arrive
        proc = jt.console_consumer(bootstrap, topic, group, client, log_path=tmp_path / "consumer.log")
        ev = eventually(lambda: [e for e in events_of(bootstrap, EVENTS, group) if e["type"] == "client_metrics"
                                 and e.get("client_id") == client and e.get("member_id")
                                 and e.get("last_heartbeat_ms_ago") is not None], 90, "the consumer's pushes",
                        interval_s=1.0)[-1]
        assert ev["interval_ms"] == 2000 and ev["source"] == "kip714", ev

        done = _command("delete", "--bootstrap-server", bootstrap, "--name", name)
        assert done.returncode == 0, done.stderr
        assert name not in _listed(bootstrap)

        # the fixture's subscription back through the command (every client: no --match)
        done = _command("subscribe", "--bootstrap-server", bootstrap, "--name", FIXTURE_SUBSCRIPTION,
                        "--interval-ms", "2000")
        assert done.returncode == 0, done.stderr
        restored = True
        assert _listed(bootstrap)[FIXTURE_SUBSCRIPTION]["match"] == ""
    finally:
        if proc is not None:
            kill_hard(proc)
        _command("delete", "--bootstrap-server", bootstrap, "--name", name)
        if not restored:
            jt.subscribe(bootstrap, FIXTURE_SUBSCRIPTION, 2000)  # the fixture's, as the other tests expect it


def test_bad_arguments_name_the_option_and_the_allowed_values():
    for args, option, allowed in ((("--interval-ms", "100"), "--interval-ms", "from 2000 to 10000"),
                                  (("--interval-ms", "5s"), "--interval-ms", "from 2000 to 10000"),
                                  (("--match", "group_id=g"), "--match", "client_id, client_software_name"),
                                  (("--name", "a b"), "--name", "letters, digits")):
        done = _command("subscribe", "--bootstrap-server", "127.0.0.1:1", *args)
        assert done.returncode == 2, done
        assert f"argument {option}" in done.stderr and allowed in done.stderr, done.stderr
