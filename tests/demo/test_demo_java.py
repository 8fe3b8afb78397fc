"""The demo's Java group runs only when what it needs was built: the broker plugin's jar (scripts/build_java.sh) and
the project's plain Java consumer (scripts/fetch_kafka.sh); otherwise the demo says which is missing and how to build
it, once, and runs without the group (the whole demo with the group: test_demo_terminal.py)."""
from __future__ import annotations

from rebalance_monitor.demo import java as demo_java
from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing import kafka_install
from rebalance_monitor.testing.kafka_install import KAFKA_VERSION


def test_the_java_group_says_what_is_missing_and_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setattr(kafka_install, "project_root", lambda: tmp_path)
    monkeypatch.setenv("RM_KAFKA_HOME", str(tmp_path / "kafka"))
    why = demo_java.missing()
    assert why and jt.BROKER_JAR in why and "scripts/build_java.sh" in why
    (tmp_path / "var" / "java").mkdir(parents=True)
    (tmp_path / "var" / "java" / jt.BROKER_JAR).write_bytes(b"jar")
    why = demo_java.missing()
    assert why and "RmJavaConsumer.class" in why and "scripts/fetch_kafka.sh" in why
    (tmp_path / "kafka" / KAFKA_VERSION / "classes").mkdir(parents=True)
    (tmp_path / "kafka" / KAFKA_VERSION / "classes" / "RmJavaConsumer.class").write_bytes(b"class")
    assert demo_java.missing() is None


def test_the_demo_broker_runs_the_plugin_sending_to_itself():
    opts = demo_java.broker_options(19092, "rebalance-events")
    assert opts["port"] == 19092 and opts["extra_classpath"][0].endswith(jt.BROKER_JAR)
    assert opts["settings"] == {"metric.reporters": jt.EXPORTER_PLUGIN,
                                "rebalance.monitor.bootstrap.servers": "127.0.0.1:19092",
                                "rebalance.monitor.events.topic": "rebalance-events"}
