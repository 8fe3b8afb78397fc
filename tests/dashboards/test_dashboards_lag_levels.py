"""The lag panels and the lag rules at every lag.granularity, on a real Prometheus scraping the real exporter.

Three exporters (``MetricsUpdater`` fed with output records), one per level, each with its own group; one
Prometheus scrapes them and evaluates conf/rules/*.yml. Every dashboard query that reads an offset family is
evaluated for each level's group: no query fails, and none is empty except where the panel's description says
that level shows less (``GRANULARITY_NOTE`` in dashboards/group.py).
"""
from __future__ import annotations

import json
import time
import urllib.error
from pathlib import Path

import pytest

from dashboards.group import GRANULARITY_NOTE
from dashboards.promql import metric_names, substitute

from rebalance_monitor.metrics.catalogue import LAG_GRANULARITIES

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

OFFSET_FAMILIES = {"kafka_consumergroup_lag", "kafka_consumergroup_lag_sum", "kafka_consumergroup_lag_seconds",
                   "kafka_consumergroup_committed_offset", "kafka_topic_partition_end_offset",
                   "kafka_consumergroup_lag_sum_at_rebalance_start"}
# (dashboard / panel / refId) -> the levels at which it has no series; each is in the panel's GRANULARITY_NOTE
EMPTY_AT = {"group / Lag by topic and partition / C": {"group"}}   # the log-end offset column


def _records(group: str, now_ms: int, step: int) -> list[dict]:
    base = 1000 + 100 * step
    return [
        {"kind": "end_offsets", "group": "", "ts": now_ms,
         "offsets": [[f"{group}-in", 0, base], [f"{group}-in", 1, base + 5], [f"{group}-retry", 0, 50 + step]]},
        {"kind": "offsets_committed", "group": group, "ts": now_ms,
         "offsets": [[f"{group}-in", 0, 900], [f"{group}-in", 1, 990], [f"{group}-retry", 0, 50]]},
        # the lag is snapshotted when the rebalance starts (the first time only: the record is deduplicated)
        {"kind": "rebalance_started", "group": group, "generation": 4, "started_ms": now_ms - 60_000},
        {"kind": "generation", "group": group, "generation": 5, "completed_ms": now_ms - 55_000,
         "started_ms": now_ms - 60_000, "duration_ms": 5_000, "members": ["a", "b"]},
        {"kind": "group_status", "group": group, "ts": now_ms, "state": "Stable", "generation": 5, "members": 2},
    ]


def _queries() -> dict[str, str]:
    out = {}
    for name in ("group", "fleet"):
        model = json.loads((ROOT / "dashboards" / "generated" / f"{name}.json").read_text())
        for p in model["panels"]:
            for t in p.get("targets") or []:
                if metric_names(t["expr"]) & OFFSET_FAMILIES:
                    out[f"{name} / {p['title']} / {t['refId']}"] = t["expr"]
    return out


def test_lag_panels_and_rules_work_at_every_granularity():
    from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter
    from rebalance_monitor.testing.prometheus import PrometheusServer

    for where in EMPTY_AT:
        assert where.split(" / ")[1] in GRANULARITY_NOTE, f"{where}: say so in the panel's description"
    queries = _queries()
    assert "group / Lag by topic and partition / A" in queries and "fleet / Total lag / A" in queries
    exporters = {g: MetricsExporter(ExporterSettings(port=0, lag_granularity=g)).start() for g in LAG_GRANULARITIES}
    try:
        def feed(step: int) -> None:
            now_ms = int(time.time() * 1000)
            for g, exp in exporters.items():
                exp.updater.apply(_records(f"g-{g}", now_ms, step), now_ms=now_ms)

        feed(0)
        rules = [str(p) for p in sorted((ROOT / "conf" / "rules").glob("*.yml"))]
        targets = [e.url.removeprefix("http://") for e in exporters.values()]
        with PrometheusServer(targets, rule_files=rules) as prom:
            step = 1
            deadline = time.monotonic() + 60
            # two scrapes of moving end offsets: deriv() and the time lag have their points (not `eventually`: it
            # feeds the exporters each turn, and on a time out goes on so that the assertions below name the queries)
            while True:
                feed(step)
                step += 1
                got = prom.query('count by (group) (kafka_consumergroup:lag_sum:deriv1m)')
                if len(got) == len(LAG_GRANULARITIES) or time.monotonic() > deadline:
                    break
                time.sleep(1)
            for level in LAG_GRANULARITIES:
                subs = {"$cluster": ".*", "$kafka_cluster": ".*", "$group_type": ".*", "$group": f"g-{level}", "$__rate_interval": "10s",
                        "$__range": "1m"}
                empty = []
                for where, expr in queries.items():
                    try:
                        result = prom.query(substitute(expr, subs))
                    except urllib.error.HTTPError as exc:
                        pytest.fail(f"{level}: {where}: Prometheus rejected {expr!r}: {exc.read().decode()}")
                    if not result and level not in EMPTY_AT.get(where, ()):
                        empty.append(where)
                    if result and level in EMPTY_AT.get(where, ()):
                        pytest.fail(f"{level}: {where} has data: drop it from EMPTY_AT and the panel's note")
                assert empty == [], f"lag.granularity {level}: queries with no data: {empty}"
                sel = f'{{group="g-{level}"}}'
                # a query summing by the labels every level has gives the same answer at every level
                summed = prom.values(f"sum by (group) (kafka_consumergroup_lag{sel})", "group")
                assert summed == prom.values(f"kafka_consumergroup_lag_sum{sel}", "group") != {}
                for record in ("kafka_consumergroup:lag_growth_since_rebalance_start:offsets",
                               "kafka_consumergroup:lag_sum:deriv1m", "kafka_consumergroup:lag_seconds:max"):
                    assert prom.query(f"{record}{sel}" if "max" not in record else record), (level, record)
            broken = [r["name"] for g in prom.api("rules")["groups"] for r in g["rules"] if r["health"] == "err"]
            assert broken == []
    finally:
        for exp in exporters.values():
            exp.stop()
