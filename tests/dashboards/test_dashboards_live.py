"""Every dashboard query evaluated by a real Prometheus over series shaped like the monitor's: no evaluation
error (bad vector matching, wrong types) and no empty result (a label or metric name that does not match
what the exporter exposes). The scraped target is a stand-in that exposes every catalogue metric with the
catalogue's labels, counters and histograms growing at each scrape; Prometheus also runs the recording rules.
"""
from __future__ import annotations

import json
import time
import urllib.error
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

from dashboards.promql import label_values_selector, substitute

ROOT = Path(__file__).resolve().parents[2]

LABEL_VALUES = {"kafka_cluster": "default", "group": "g", "group_type": "consumer", "cause": "session_timeout", "timeout": "session",
                "client_id": "c1", "host": "h1", "topic": "t", "partition": "0", "protocol": "range", "broker": "1", "source": "events",
                "reason": "invalid_json", "kind": "generation", "sink": "history", "state": "Stable"}
LIVE_SUBSTITUTIONS = {"$cluster": ".*", "$kafka_cluster": ".*", "$group_type": ".*", "$group": "g", "$instance": ".*",
                      "$__rate_interval": "10s",
                      "$__range": "1m", "${__range}": "1m", "$__range_s": "60", "$__interval": "2s"}


class CatalogueStandIn:
    """A prometheus_client collector yielding every catalogue metric, one series each."""

    def __init__(self):
        self.scrapes = 0

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        from rebalance_monitor.metrics.catalogue import CATALOGUE

        self.scrapes += 1
        n = self.scrapes
        now = time.time()
        for spec in CATALOGUE:
            labels = list(spec.labels)
            values = [LABEL_VALUES.get(lb, "x") for lb in labels]
            if spec.type == "counter":
                fam = CounterMetricFamily(spec.name, spec.help, labels=labels)
                fam.add_metric(values, 3 * n)
            elif spec.type == "histogram":
                fam = HistogramMetricFamily(spec.name, spec.help, labels=labels)
                buckets = [(str(b), n if b >= 1.0 else 0) for b in spec.buckets] + [("+Inf", n)]
                fam.add_metric(values, buckets, sum_value=1.0 * n)
            else:
                if spec.name.endswith("timestamp_seconds"):
                    value = now - 5
                elif spec.type == "info" or spec.name in {
                        "kafka_consumergroup_state", "kafka_consumergroup_storm", "kafka_consumergroup_storm_pattern",
                        "rebalance_monitor_up", "rebalance_monitor_kafka_cluster_up",
                        "rebalance_monitor_ready", "kafka_consumergroup_rebalance_in_progress"}:
                    value = 1
                else:
                    value = n  # changes at every scrape (generation, lag, ...)
                fam = GaugeMetricFamily(spec.name, spec.help, labels=labels)
                fam.add_metric(values, value)
            yield fam


@pytest.fixture()
def stand_in():
    from prometheus_client import CollectorRegistry

    from rebalance_monitor.testing.prometheus import serve_registry

    registry = CollectorRegistry()
    registry.register(CatalogueStandIn())
    with serve_registry(registry) as target:
        yield target


def _queries() -> dict[str, str]:
    out = {}
    for path in sorted((ROOT / "dashboards" / "generated").glob("*.json")):
        model = json.loads(path.read_text())
        for p in model["panels"]:
            for t in p.get("targets") or []:
                out[f"{path.stem} / {p['title']} / {t['refId']}"] = t["expr"]
        for a in model["annotations"]["list"]:
            if a.get("expr"):
                out[f"{path.stem} / annotation {a['name']}"] = a["expr"]
        for v in model["templating"]["list"]:
            if v["type"] == "query":
                out[f"{path.stem} / variable {v['name']}"] = label_values_selector(v["query"])
    return {k: substitute(e, LIVE_SUBSTITUTIONS) for k, e in out.items()}


def test_every_dashboard_query_returns_data(stand_in):
    from rebalance_monitor.testing.prometheus import PrometheusServer, PrometheusUnavailable, prometheus_binary

    try:
        prometheus_binary()
    except PrometheusUnavailable as exc:
        pytest.fail(str(exc))
    queries = _queries()
    with PrometheusServer([stand_in], rule_files=[str(ROOT / "conf" / "rules" / "recording.yml")]) as prom:
        prom.wait_for("rate(kafka_consumergroup_generations_total[10s]) > 0", bool, timeout_s=30)
        prom.wait_for("cluster_group_cause:kafka_consumergroup_rebalances:increase1h > 0", bool, timeout_s=30)
        deadline = time.monotonic() + 30
        while True:  # not `eventually`: on a time out the assertion below names the empty queries
            empty = []
            for where, expr in queries.items():
                try:
                    result = prom.query(expr)
                except urllib.error.HTTPError as exc:
                    pytest.fail(f"{where}: Prometheus rejected {expr!r}: {exc.read().decode()}")
                if not result:
                    empty.append(where)
            if not empty or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert empty == [], f"queries with no data over the catalogue-shaped series: {empty}"
