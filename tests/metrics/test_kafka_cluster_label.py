"""The Kafka cluster of every series: ``kafka_cluster``, first label of every family, its value the store's ``cluster``
written exactly as given; the two families of a cluster's own health (up, last read); and a snapshot written before
the label existed, which loads unchanged into the store of the cluster it belongs to."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rebalance_monitor.metrics.docs import T0, sample_records
from rebalance_monitor.metrics.exporter import ExporterSettings
from rebalance_monitor.metrics.updater import MetricsUpdater

from helpers.exposition import parse

DATA = Path(__file__).resolve().parent / "data"
UP = "rebalance_monitor_kafka_cluster_up"
LAST_READ = "rebalance_monitor_kafka_cluster_last_read_timestamp_seconds"


class Clock:
    def __init__(self, t: float = T0 / 1000) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _clusters(samples: dict) -> set:
    return {dict(labels).get("kafka_cluster") for _, labels in samples}


@pytest.mark.parametrize("cluster", ["default", "prod-eu", "MyCluster-1.prod", "PROD_EU", "b-1.kafka.eu-west-1:9092",
                                     'we"ird\\name\nx', "kafka cluster ünïcode"])
def test_every_sample_carries_the_cluster_name_exactly_as_given(cluster):
    u = MetricsUpdater(clock=Clock(), cluster=cluster)
    u.apply(sample_records(), now_ms=T0)
    u.record_batch(1, {"events": 3}, {"invalid_json": 1}, 0.5)
    u.set_kafka_up(True)
    u.note_kafka_read()
    text = u.render()
    s = parse(text)             # prometheus_client's parser reads the value back unescaped
    assert _clusters(s) == {cluster}
    assert len(s) > 100
    for line in text.splitlines():
        if not line.startswith("#"):
            assert line.split("{", 1)[1].startswith('kafka_cluster="'), line   # the first label, every line


def test_a_cluster_name_is_a_non_empty_string():
    for bad in ("", None, 3):
        with pytest.raises(ValueError, match="cluster's name"):
            MetricsUpdater(cluster=bad)


def test_the_settings_name_the_cluster_of_the_updater_they_make():
    assert ExporterSettings().make_updater().cluster == "default"
    settings = ExporterSettings(cluster="prod-eu")
    assert settings.make_updater().cluster == "prod-eu"
    assert settings.make_updater(cluster="MyCluster-1.prod").cluster == "MyCluster-1.prod"


def test_the_clusters_up_and_last_read_are_absent_until_said_then_follow_the_job():
    clock = Clock()
    u = MetricsUpdater(clock=clock, cluster="prod-eu")
    s = parse(u.render())
    assert not any(name in (UP, LAST_READ) for name, _ in s)
    u.set_kafka_up(False)
    s = parse(u.render())
    assert s[(UP, (("kafka_cluster", "prod-eu"),))] == 0 and not any(name == LAST_READ for name, _ in s)
    u.set_kafka_up(True)
    u.note_kafka_read()                     # now, from the store's clock
    s = parse(u.render())
    assert s[(UP, (("kafka_cluster", "prod-eu"),))] == 1
    assert s[(LAST_READ, (("kafka_cluster", "prod-eu"),))] == T0 / 1000
    clock.t += 30
    u.note_kafka_read(T0 / 1000 + 12.5)     # a read the job timed itself
    assert parse(u.render())[(LAST_READ, (("kafka_cluster", "prod-eu"),))] == T0 / 1000 + 12.5
    u.note_kafka_read(T0 / 1000 + 1)        # an older read said late: the time does not go back
    assert parse(u.render())[(LAST_READ, (("kafka_cluster", "prod-eu"),))] == T0 / 1000 + 12.5
    u.set_kafka_up(False)
    assert parse(u.render())[(UP, (("kafka_cluster", "prod-eu"),))] == 0


def test_the_clusters_up_and_last_read_are_per_process():
    u = MetricsUpdater(clock=Clock(), cluster="prod-eu")
    u.set_kafka_up(True)
    u.note_kafka_read()
    u.apply_batch(0, sample_records())
    state = u.state_text(0)
    assert "kafka" not in json.loads(state)["counters"] and "prod-eu" not in state
    restarted = MetricsUpdater(clock=Clock(), cluster="prod-eu")
    restarted.load_state(json.loads(state))
    assert not any(name in (UP, LAST_READ) for name, _ in parse(restarted.render()))


def test_a_single_cluster_snapshot_written_before_the_label_loads_into_its_clusters_store():
    """state-single-cluster.json and .prom: a snapshot and the exposition of the store restored from it, as the code of
    commit 5e79090 (before kafka_cluster) wrote them. Loaded into the store of cluster prod-eu, every series is back,
    the same values under kafka_cluster="prod-eu"."""
    before = parse((DATA / "state-single-cluster.prom").read_text(encoding="utf-8"))
    assert not _clusters(before) - {None}
    u = MetricsUpdater(clock=Clock(), cluster="prod-eu")
    assert u.load_state(json.loads((DATA / "state-single-cluster.json").read_text(encoding="utf-8"))) == 2
    assert u.applied_batch_id == 7
    now = parse(u.render())
    assert _clusters(now) == {"prod-eu"}
    assert {(name, tuple(kv for kv in labels if kv[0] != "kafka_cluster")): v for (name, labels), v in now.items()} \
        == before
    key = ("kafka_consumergroup_generations_total",
           (("group", "orders-service"), ("group_type", "unknown"), ("kafka_cluster", "prod-eu")))
    assert now[key] == 1
    assert now[("rebalance_monitor_events_read_total", (("kafka_cluster", "prod-eu"), ("source", "events")))] == 42
    assert now[("rebalance_monitor_broker_facts_errors_total",
                (("kafka_cluster", "prod-eu"), ("reason", "describe_configs_denied")))] == 1
    # and written again, it is the same snapshot: nothing in it names the cluster
    again = json.loads(u.state_text(7, query_id="q-single", saved_at=1700000000.0))
    assert again == json.loads((DATA / "state-single-cluster.json").read_text(encoding="utf-8"))

