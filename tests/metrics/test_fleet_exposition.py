"""Several Kafka clusters on one /metrics (fleet_exposition.FleetMetrics): each cluster's updater keeps its own
series, the merged exposition has every family's HELP and TYPE once with the clusters' lines after it (Prometheus'
parsers accept it), nothing of one cluster shows under another, and /ready is green while one cluster is ready."""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rebalance_monitor.metrics.catalogue import CATALOGUE, by_name
from rebalance_monitor.metrics.docs import T0, sample_records
from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter
from rebalance_monitor.metrics.fleet_exposition import FleetMetrics, exposition_of
from rebalance_monitor.metrics.updater import MetricsUpdater

from helpers.exposition import parse

EU, US = "prod-eu", "MyCluster-1.prod"


class Clock:
    def __init__(self, t: float = T0 / 1000) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _us_records() -> list[dict]:
    """Another cluster's history with the same group name as sample_records' orders-service, other values."""
    g = "orders-service"
    return [
        {"kind": "end_offsets", "group": "", "ts": T0 - 10_000, "offsets": [["orders", 0, 50], ["orders", 3, 70]]},
        {"kind": "generation", "group": g, "generation": 3, "protocol": "range", "group_type": "consumer",
         "started_ms": T0 - 9_000, "completed_ms": T0 - 8_000, "ts": T0 - 8_000, "duration_ms": 1_000,
         "causes": [{"cause": "member_joined"}], "members": ["a", "b", "c", "d", "e"], "partitions_moved": 4},
        {"kind": "offsets_committed", "group": g, "ts": T0 - 5_000, "member_id": "a",
         "offsets": [["orders", 0, 45], ["orders", 3, 70]]},
        {"kind": "group_status", "group": g, "ts": T0, "state": "Stable", "generation": 3, "members": 5},
    ]


def _fleet(clock: Clock) -> tuple[FleetMetrics, MetricsUpdater, MetricsUpdater]:
    eu = MetricsUpdater(clock=clock, cluster=EU)
    us = MetricsUpdater(clock=clock, cluster=US)
    eu.apply(sample_records(), now_ms=T0)
    eu.record_batch(1, {"events": 10}, {"invalid_json": 1}, 0.5)
    eu.set_kafka_up(True)
    eu.note_kafka_read()
    us.apply(_us_records(), now_ms=T0)
    us.record_batch(1, {"events": 4}, None, 0.2)
    us.set_kafka_up(False)
    us.note_sink_error("kafka")
    return FleetMetrics({EU: eu, US: us}), eu, us


def test_the_same_group_on_two_clusters_is_two_sets_of_series_nothing_mixed():
    fleet, eu, us = _fleet(Clock())
    merged, alone_eu, alone_us = parse(fleet.render()), parse(eu.render()), parse(us.render())
    assert not set(alone_eu) & set(alone_us)
    assert merged == {**alone_eu, **alone_us}           # each sample is one cluster's own, as it alone writes it

    def of(cluster, name):
        return {dict(lbl).get("topic", "") + dict(lbl).get("partition", ""): v for (n, lbl), v in merged.items()
                if n == name and dict(lbl).get("group") == "orders-service" and dict(lbl)["kafka_cluster"] == cluster}
    assert of(EU, "kafka_consumergroup_generation") == {"": 12} and of(US, "kafka_consumergroup_generation") == {"": 3}
    assert of(EU, "kafka_consumergroup_members") == {"": 2} and of(US, "kafka_consumergroup_members") == {"": 5}
    assert of(EU, "kafka_consumergroup_lag") == {"orders0": 450, "orders1": 0}
    assert of(US, "kafka_consumergroup_lag") == {"orders0": 5, "orders3": 0}
    ends = {(dict(lbl)["kafka_cluster"], dict(lbl)["partition"]): v for (n, lbl), v in merged.items()
            if n == "kafka_topic_partition_end_offset"}
    assert ends == {(EU, "0"): 1600, (EU, "1"): 960, (US, "0"): 50, (US, "3"): 70}
    assert merged[("rebalance_monitor_kafka_cluster_up", (("kafka_cluster", EU),))] == 1
    assert merged[("rebalance_monitor_kafka_cluster_up", (("kafka_cluster", US),))] == 0


def test_every_family_is_announced_once_in_catalogue_order_and_prometheus_parses_it():
    fleet, _, _ = _fleet(Clock())
    text = fleet.render()
    helps = [line.split(" ")[2] for line in text.splitlines() if line.startswith("# HELP ")]
    types = [line.split(" ")[2] for line in text.splitlines() if line.startswith("# TYPE ")]
    assert helps == types == [s.name for s in CATALOGUE]
    # every sample line is under its own family's header, the clusters' lines in the fleet's order
    current, clusters_of = None, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            current = line.split(" ")[2]
        elif not line.startswith("#"):
            suffixes = ("_bucket", "_count", "_sum") if by_name(current).type == "histogram" else ("",)
            assert line.split("{", 1)[0] in {current + x for x in suffixes}, line
            cluster = line.split('kafka_cluster="', 1)[1].split('"', 1)[0]
            order = clusters_of.setdefault(current, [])
            if not order or order[-1] != cluster:
                order.append(cluster)
    assert all(order in ([EU], [US], [EU, US]) for order in clusters_of.values()), clusters_of
    assert clusters_of["rebalance_monitor_up"] == [EU, US]
    fams = list(text_string_to_metric_families(text))
    assert len({f.name for f in fams}) == len(fams)


def test_promtool_reads_the_merged_exposition_as_it_reads_one_clusters():
    """Prometheus' own parser (promtool check metrics) refuses a family announced twice; the merged text parses, and
    its lint findings (the catalogue's names) are those of one cluster's exposition."""
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    if not os.path.exists(promtool):
        pytest.skip("promtool not installed: run scripts/bootstrap.sh (installs Debian's prometheus)")

    def check(text: str) -> tuple[int, str]:
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    fleet, eu, _ = _fleet(Clock())
    rc, out = check(fleet.render())
    assert "parsing error" not in out and rc in (0, 3), out
    assert (rc, out) == check(eu.render())
    twice = eu.render() + eu.render()
    rc, out = check(twice)
    assert rc == 1 and "second HELP line" in out          # what a naive concatenation of the clusters would be


def test_bytes_gzip_and_the_merged_cache():
    clock = Clock()
    fleet, eu, us = _fleet(clock)
    text = fleet.render()
    assert fleet.render_bytes(False) == (text.encode(), None)
    body, enc = fleet.render_bytes(True)
    assert enc == "gzip" and gzip.decompress(body) == text.encode()
    merged = fleet._merged
    fleet.render()
    assert fleet._merged is merged                     # nothing changed: the merged groups' text is reused
    us.apply([{"kind": "generation", "group": "orders-service", "generation": 4, "completed_ms": T0 + 1000,
               "members": ["a"]}], now_ms=T0 + 1000)
    s = parse(fleet.render())
    assert fleet._merged is not merged
    gen = {dict(lbl)["kafka_cluster"]: v for (n, lbl), v in s.items() if n == "kafka_consumergroup_generation"
           and dict(lbl)["group"] == "orders-service"}
    assert gen == {EU: 12, US: 4}


def test_a_scrape_while_a_cluster_persists_its_snapshot_sees_that_cluster_before_the_batch():
    fleet, eu, us = _fleet(Clock())
    seen = []

    def persist(upd, batch_id):
        seen.append(parse(fleet.render()))

    us.apply_batch(5, [{"kind": "generation", "group": "orders-service", "generation": 9, "completed_ms": T0 + 1,
                        "members": ["a"]}], persist=persist)
    key = ("kafka_consumergroup_generation", (("group", "orders-service"), ("group_type", "consumer"),
                                              ("kafka_cluster", US)))
    assert seen[0][key] == 3 and parse(fleet.render())[key] == 9


def test_ready_while_one_cluster_is_with_each_clusters_reason():
    clock = Clock()
    fleet, eu, us = _fleet(clock)
    assert fleet.readiness() == (False, "no Kafka cluster is ready\n"
                                        "prod-eu: not ready: the streaming job has not started yet\n"
                                        "MyCluster-1.prod: not ready: the streaming job has not started yet")
    assert not fleet.is_ready()
    us.set_ready(True)
    eu.set_ready(False, "Kafka cluster prod-eu does not answer")
    assert fleet.readiness() == (True, "prod-eu: not ready: Kafka cluster prod-eu does not answer\n"
                                       "MyCluster-1.prod: ready")
    assert fleet.is_ready()
    s = parse(fleet.render())
    assert s[("rebalance_monitor_ready", (("kafka_cluster", US),))] == 1
    assert s[("rebalance_monitor_ready", (("kafka_cluster", EU),))] == 0


def test_the_exporter_serves_a_fleet():
    fleet, eu, us = _fleet(Clock())
    exp = MetricsExporter(ExporterSettings(port=0), updater=fleet).start()

    def get(path):
        try:
            with urllib.request.urlopen(exp.url + path, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
    try:
        code, body = get("/metrics")
        assert code == 200 and parse(body)[("rebalance_monitor_up", (("kafka_cluster", US),))] == 1
        assert parse(body) == parse(fleet.render())
        assert get("/ready") == (503, "not ready: no Kafka cluster is ready\n"
                                      "prod-eu: not ready: the streaming job has not started yet\n"
                                      "MyCluster-1.prod: not ready: the streaming job has not started yet\n")
        eu.set_ready(True)
        assert get("/ready") == (200, "ready\nprod-eu: ready\n"
                                      "MyCluster-1.prod: not ready: the streaming job has not started yet\n")
    finally:
        exp.stop()
    s = parse(fleet.render())
    assert s[("rebalance_monitor_up", (("kafka_cluster", EU),))] == 0
    assert s[("rebalance_monitor_up", (("kafka_cluster", US),))] == 0


def test_one_cluster_is_served_by_its_updater_itself():
    u = MetricsUpdater(cluster=EU)
    assert exposition_of({EU: u}) is u
    both = exposition_of({EU: u, US: MetricsUpdater(cluster=US)})
    assert isinstance(both, FleetMetrics) and list(both.updaters) == [EU, US]
    with pytest.raises(ValueError, match="writes kafka_cluster"):
        exposition_of({US: u})
    with pytest.raises(ValueError, match="writes kafka_cluster"):
        FleetMetrics({EU: u, "other": MetricsUpdater(cluster=US)})
    with pytest.raises(ValueError, match="at least one"):
        exposition_of({})
