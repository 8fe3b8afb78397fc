"""End to end: a real Prometheus loaded with conf/rules/*.yml fires the storm alert while a group is in a
storm, and a real Alertmanager receives it (and sees it resolve when the storm ends).

The scraped target is a stand-in exporter built with prometheus_client that exposes kafka_consumergroup_storm
(the series the monitor exports); the alerts' `for:` durations are shortened to 1s in copies of the rule files.
"""
from __future__ import annotations

import glob
import os

import pytest

from helpers.eventually import eventually

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _require_binaries():
    from helpers.alertmanager import AlertmanagerUnavailable, alertmanager_binary
    from rebalance_monitor.testing.prometheus import PrometheusUnavailable, prometheus_binary

    try:
        prometheus_binary()
        alertmanager_binary()
    except (PrometheusUnavailable, AlertmanagerUnavailable) as exc:
        pytest.fail(str(exc))


@pytest.fixture()
def storm_exporter():
    """A tiny exporter of one monitor watching two Kafka clusters: kafka_consumergroup_storm for group g on prod-eu
    (storm), a group of the same name on prod-us (no storm) and group calm (no storm)."""
    from prometheus_client import CollectorRegistry, Gauge

    from rebalance_monitor.metrics.catalogue import by_name
    from rebalance_monitor.testing.prometheus import serve_registry

    spec = by_name("kafka_consumergroup_storm")
    registry = CollectorRegistry()
    gauge = Gauge(spec.name, spec.help, list(spec.labels), registry=registry)
    gauge.labels(kafka_cluster="prod-eu", group="g", group_type="consumer").set(1)
    gauge.labels(kafka_cluster="prod-us", group="g", group_type="consumer").set(0)
    gauge.labels(kafka_cluster="prod-eu", group="calm", group_type="classic").set(0)
    with serve_registry(registry) as target:
        yield target, gauge


def test_storm_alert_reaches_alertmanager(storm_exporter, tmp_path):
    _require_binaries()
    from helpers.alertmanager import AlertmanagerServer, PrometheusWithAlertmanager, copy_rules_with_short_for

    target, gauge = storm_exporter
    sources = sorted(glob.glob(os.path.join(ROOT, "conf", "rules", "*.yml")))
    assert any(s.endswith("alerts.yml") for s in sources)
    rules = copy_rules_with_short_for(sources, tmp_path, "1s")

    with AlertmanagerServer() as am, PrometheusWithAlertmanager(
            [target], alertmanager=am, rule_files=rules, scrape_interval="1s") as prom:
        loaded = {r["name"] for g in prom.api("rules")["groups"] for r in g["rules"]}
        assert "KafkaConsumerGroupRebalanceStorm" in loaded

        alert = am.wait_for_alert("KafkaConsumerGroupRebalanceStorm", {"group": "g"}, timeout_s=45)
        assert alert["labels"]["severity"] == "warning" and alert["labels"]["kafka_cluster"] == "prod-eu"
        assert alert["annotations"]["summary"] == "Rebalance storm in consumer group g on cluster prod-eu"
        assert alert["annotations"]["runbook"].startswith("Open the group drill-down dashboard")
        assert alert["status"]["state"] == "active"
        # The calm group's series is there (0) but never alerts.
        assert prom.values('kafka_consumergroup_storm{group="calm"}', "group") == {"calm": 0.0}
        assert am.find("KafkaConsumerGroupRebalanceStorm", {"group": "calm"}) == []
        # The group of the same name on the other cluster is another group: calm, no alert of its own.
        assert prom.values('kafka_consumergroup_storm{group="g"}', "kafka_cluster") == {"prod-eu": 1.0,
                                                                                       "prod-us": 0.0}
        assert am.find("KafkaConsumerGroupRebalanceStorm", {"group": "g", "kafka_cluster": "prod-us"}) == []

        # The storm ends: Prometheus resolves the alert and Alertmanager drops it.
        gauge.labels(kafka_cluster="prod-eu", group="g", group_type="consumer").set(0)
        am.wait_until_gone("KafkaConsumerGroupRebalanceStorm", {"group": "g"}, timeout_s=45)


@pytest.fixture()
def pattern_exporter():
    """Two groups in a storm: `rollout` looks like a rolling restart, `flappy` like a flapping member."""
    from prometheus_client import CollectorRegistry, Gauge

    from rebalance_monitor.metrics.catalogue import by_name
    from rebalance_monitor.testing.prometheus import serve_registry

    registry = CollectorRegistry()
    gauges = {name: Gauge(name, by_name(name).help, list(by_name(name).labels), registry=registry)
              for name in ("kafka_consumergroup_storm", "kafka_consumergroup_storm_pattern")}
    for group, pattern in (("rollout", "rolling_restart"), ("flappy", "flapping_member")):
        gauges["kafka_consumergroup_storm"].labels(kafka_cluster="default", group=group, group_type="consumer").set(1)
        gauges["kafka_consumergroup_storm_pattern"].labels(kafka_cluster="default", group=group, group_type="consumer",
                                                           pattern=pattern).set(1)
    with serve_registry(registry) as target:
        yield target


def test_a_planned_rollout_does_not_page_but_a_flapping_member_does(pattern_exporter, tmp_path):
    """The shipped Alertmanager configuration (deploy/compose/alertmanager.yml) inhibits the storm alert of a group
    whose storm looks planned, and leaves the flapping member's storm and its critical alert active."""
    import yaml

    _require_binaries()
    from helpers.alertmanager import AlertmanagerServer, PrometheusWithAlertmanager, copy_rules_with_short_for

    shipped = yaml.safe_load(open(os.path.join(ROOT, "deploy", "compose", "alertmanager.yml")))
    rules = copy_rules_with_short_for(sorted(glob.glob(os.path.join(ROOT, "conf", "rules", "*.yml"))), tmp_path, "1s")
    with AlertmanagerServer(config=shipped) as am, PrometheusWithAlertmanager(
            [pattern_exporter], alertmanager=am, rule_files=rules, scrape_interval="1s"):
        planned = am.wait_for_alert("KafkaConsumerGroupPlannedChurn", {"group": "rollout"}, timeout_s=45)
        assert planned["labels"]["severity"] == "info" and planned["labels"]["pattern"] == "rolling_restart"
        assert planned["labels"]["kafka_cluster"] == "default"
        flapping = am.wait_for_alert("KafkaConsumerGroupFlappingMember", {"group": "flappy"}, timeout_s=45)
        assert flapping["labels"]["severity"] == "critical" and flapping["status"]["state"] == "active"
        assert am.find("KafkaConsumerGroupFlappingMember", {"group": "rollout"}) == []
        def inhibited_storm():
            storm = am.wait_for_alert("KafkaConsumerGroupRebalanceStorm", {"group": "rollout"}, timeout_s=45)
            return storm if storm["status"]["inhibitedBy"] else None

        storm = eventually(inhibited_storm, 45, "the rollout's storm alert to be inhibited")
        assert storm["status"]["state"] == "suppressed" and storm["status"]["inhibitedBy"]
        other = am.wait_for_alert("KafkaConsumerGroupRebalanceStorm", {"group": "flappy"}, timeout_s=45)
        assert other["status"]["state"] == "active" and not other["status"]["inhibitedBy"]
