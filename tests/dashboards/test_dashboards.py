"""The Grafana dashboards: generated from the catalogue, committed JSON identical to what the generator gives
(drift check), every query valid PromQL (parsed by promtool) over metrics the catalogue defines, the
variables and panels the operations guide promises, and every query kept to the selected Kafka clusters with
each group named with its cluster (a group name on two clusters is two groups)."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

# the `dashboards` generator package lives at the repository root (on the path: pythonpath in pyproject.toml)
from dashboards import artifacts
from dashboards.promql import check_syntax, label_values_selector, metric_names, promtool, substitute

ROOT = Path(__file__).resolve().parents[2]

GENERATED = ROOT / "dashboards" / "generated"


@pytest.fixture(scope="module")
def models() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(GENERATED.glob("*.json"))}


def _panels(model: dict) -> list[dict]:
    out = []
    for p in model["panels"]:
        out.append(p)
        out.extend(p.get("panels") or [])
    return out


def _queries(model: dict) -> dict[str, str]:
    """label -> PromQL expression, for panel targets, annotations and variable queries."""
    out = {}
    for p in _panels(model):
        for t in p.get("targets") or []:
            out[f"{model['uid']} / {p['title']} / {t['refId']}"] = t["expr"]
    for a in model["annotations"]["list"]:
        if a.get("expr"):
            out[f"{model['uid']} / annotation {a['name']}"] = a["expr"]
    for v in model["templating"]["list"]:
        if v["type"] == "query":
            sel = label_values_selector(v["query"])
            assert sel, f"{v['name']}: not a label_values() query: {v['query']}"
            out[f"{model['uid']} / variable {v['name']}"] = sel
    return out


def test_committed_files_match_the_generator():
    stale = [str(p.relative_to(ROOT)) for p in artifacts.drift()]
    assert stale == [], f"out of date: {stale}; run `make dashboards` (python scripts/gen_dashboards.py)"


def test_generation_is_deterministic():
    assert artifacts.expected() == artifacts.expected()


def test_the_three_dashboards(models):
    assert set(models) == {"fleet", "group", "monitor"}
    uids = [m["uid"] for m in models.values()]
    assert len(set(uids)) == 3
    for m in models.values():
        assert "kafka-rebalance" in m["tags"]
        names = [v["name"] for v in m["templating"]["list"]]
        assert names[:3] == ["datasource", "cluster", "kafka_cluster"], m["uid"]
        ds = m["templating"]["list"][0]
        assert ds["type"] == "datasource" and ds["query"] == "prometheus"
        kc = m["templating"]["list"][2]
        assert kc["multi"] is True and kc["includeAll"] is True and kc["allValue"] == ".*", m["uid"]
        assert label_values_selector(kc["query"]).startswith("rebalance_monitor_up{") and \
            kc["query"].endswith(", kafka_cluster)"), kc["query"]
    assert "group" in [v["name"] for v in models["fleet"]["templating"]["list"]]
    group_var = {v["name"]: v for v in models["group"]["templating"]["list"]}["group"]
    assert group_var["multi"] is False and group_var["includeAll"] is False
    assert "instance" in [v["name"] for v in models["monitor"]["templating"]["list"]]


def test_panels_are_well_formed(models):
    for m in models.values():
        ids = [p["id"] for p in _panels(m)]
        assert len(ids) == len(set(ids)) and 0 not in ids, m["uid"]
        for p in _panels(m):
            g = p["gridPos"]
            assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, (m["uid"], p["title"])
            if p["type"] == "row":
                continue
            assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
            assert p.get("description"), f"{p['title']}: every panel explains itself"
            refs = [t["refId"] for t in p["targets"]]
            assert refs and len(refs) == len(set(refs)) and "" not in refs, p["title"]
            for t in p["targets"]:
                assert 'cluster=~"$cluster"' in t["expr"], (p["title"], t["expr"])


_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^{}]*)\}")
_CLAUSE = re.compile(r"\b(by|without|on|ignoring)\s*\(([^()]*)\)")
KAFKA_CLUSTER = 'kafka_cluster=~"$kafka_cluster"'


def _legends(model: dict) -> dict[str, str]:
    return {f"{model['uid']} / {p['title']} / {t['refId']}": t["legendFormat"]
            for p in _panels(model) for t in p.get("targets") or [] if t.get("legendFormat")}


def test_every_selector_keeps_to_the_selected_kafka_clusters(models):
    """Every series a panel, an annotation or a variable reads is filtered by the kafka_cluster variable (but the
    queries of the variables before it: the target's `cluster`, and the Kafka clusters themselves)."""
    for m in models.values():
        for where, expr in _queries(m).items():
            if where.endswith(("/ variable cluster", "/ variable kafka_cluster")):
                continue
            selectors = _SELECTOR.findall(expr)
            assert selectors, (where, expr)
            for name, matchers in selectors:
                assert KAFKA_CLUSTER in matchers, f"{where}: {name}{{{matchers}}} reads every Kafka cluster"


def test_a_group_is_named_with_its_kafka_cluster(models):
    """Where an aggregation keeps a group (the overview) it keeps the group's cluster; in the drill-down every
    aggregation keeps it (the heatmap of all selected clusters' buckets aside); a legend that names a group names
    its cluster, and every drill-down legend starts with the cluster."""
    for m in models.values():
        for where, expr in _queries(m).items():
            for kind, labels in _CLAUSE.findall(expr):
                kept = {lb.strip() for lb in labels.split(",")}
                if "group" in kept or m["uid"] == models["group"]["uid"] and kept != {"le"}:
                    assert "kafka_cluster" in kept, f"{where}: {kind} ({labels}) drops kafka_cluster: {expr}"
        for where, text in _legends(m).items():
            if "{{group}}" in text:
                assert "{{kafka_cluster}}" in text, (where, text)
    for where, text in _legends(models["group"]).items():
        assert text.startswith("{{kafka_cluster}}") or text == "{{le}}", (where, text)
    fleet = {a["name"]: a for a in models["fleet"]["annotations"]["list"]}
    for a in fleet.values():
        if a.get("expr"):
            assert "kafka_cluster" in a["tagKeys"].split(",") and "{{kafka_cluster}}" in a["titleFormat"], a["name"]


def test_the_fleet_ranking_spans_the_kafka_clusters(models):
    """The busiest groups are ranked over all selected clusters, a row per group and cluster."""
    table = next(p for p in _panels(models["fleet"]) if p["title"] == "Groups by rebalance rate")
    ranking = table["targets"][0]["expr"]
    assert ranking.startswith("topk(25, sum by (cluster, kafka_cluster, group) "), ranking
    assert KAFKA_CLUSTER in ranking and "kafka_cluster" in table["description"]


def test_the_monitor_dashboard_shows_each_kafka_cluster(monkeypatch):
    """A reachable panel and the age of the last read, per Kafka cluster, from the two per-cluster families (built
    here with them in the catalogue, whether or not the installed catalogue has them yet: without them the row is
    left out, and the drift check then says to regenerate once they arrive)."""
    from dashboards import common, monitor
    from rebalance_monitor.metrics.catalogue import MetricSpec, by_name

    up, last_read = ("rebalance_monitor_kafka_cluster_up",
                     "rebalance_monitor_kafka_cluster_last_read_timestamp_seconds")
    families = {up: MetricSpec(up, "gauge", "1 while the monitor reaches the Kafka cluster.", ("kafka_cluster",)),
                last_read: MetricSpec(last_read, "gauge", "When the monitor last read from the Kafka cluster.",
                                      ("kafka_cluster",), unit="seconds")}

    def known(name):
        return families[name] if name in families else by_name(name)

    monkeypatch.setattr(common, "by_name", known)
    model = json.loads(monitor.build())
    q = {p["title"]: [t["expr"] for t in p["targets"]] for p in _panels(model) if p["type"] != "row"}
    assert [e for e in q["Kafka cluster reachable"] if e.startswith(f"min by (kafka_cluster) ({up}{{")]
    assert [e for e in q["Age of the last read"] if e.startswith(f"time() - max by (kafka_cluster) ({last_read}{{")]
    exprs = {f"monitor / {t}": substitute(e) for t in ("Kafka cluster reachable", "Age of the last read")
             for e in q[t]}
    assert all(KAFKA_CLUSTER in e for t in ("Kafka cluster reachable", "Age of the last read") for e in q[t])
    check_syntax(exprs)


def test_every_query_is_valid_promql(models):
    try:
        promtool()
    except FileNotFoundError as exc:
        pytest.fail(str(exc))
    exprs = {}
    for m in models.values():
        exprs.update({k: substitute(e) for k, e in _queries(m).items()})
    assert len(exprs) > 60
    check_syntax(exprs)  # raises with promtool's message on the first invalid expression


def test_the_syntax_check_can_fail():
    with pytest.raises(ValueError):
        check_syntax({"broken": "sum by (group (kafka_consumergroup_storm)"})


def _known_series() -> set[str]:
    from rebalance_monitor.metrics.catalogue import CATALOGUE

    known = {m.name for m in CATALOGUE}
    known |= {m.name + s for m in CATALOGUE if m.type == "histogram" for s in ("_bucket", "_sum", "_count")}
    return known


def _recorded() -> dict[str, str]:
    out = {}
    for path in sorted((ROOT / "conf" / "rules").glob("*.yml")):
        for g in yaml.safe_load(path.read_text())["groups"]:
            out.update({r["record"]: r["expr"] for r in g["rules"] if "record" in r})
    return out


def test_queries_read_only_catalogue_metrics(models):
    known, recorded = _known_series(), _recorded()
    for m in models.values():
        for where, expr in _queries(m).items():
            for name in metric_names(expr):
                if name in recorded:
                    # a recorded series: it must itself be computed from catalogue metrics
                    assert metric_names(recorded[name]) <= known, (where, name)
                else:
                    assert name in known, f"{where}: {name} is not in the metric catalogue"


def test_every_catalogue_metric_is_on_a_dashboard(models):
    from rebalance_monitor.metrics.catalogue import CATALOGUE

    read = set()
    for m in models.values():
        for expr in _queries(m).values():
            read |= metric_names(expr)
    recorded = _recorded()
    for name in list(read):
        if name in recorded:
            read |= metric_names(recorded[name])
    bases = {n[: -len(s)] for n in read for s in ("_bucket", "_sum", "_count") if n.endswith(s)}
    missing = sorted(m.name for m in CATALOGUE if m.name not in read | bases)
    assert missing == [], f"catalogue metrics shown on no dashboard: {missing}"


def test_drilldown_has_what_an_operator_needs(models):
    g = models["group"]
    q = "\n".join(_queries(g).values())
    assert "sum by (kafka_cluster, client_id, host, timeout) (increase(kafka_consumergroup_member_timeouts_total" in q
    for metric in ("kafka_consumergroup_heartbeat_gap_ratio", "kafka_consumergroup_assignment_mismatched_partitions",
                   "kafka_consumergroup_partitions_moved_total", "kafka_consumergroup_needless_moves",
                   "kafka_consumergroup_lag_seconds", "kafka_consumergroup_rebalance_duration_seconds_bucket",
                   "kafka_consumergroup_generation"):
        assert metric in q, metric
    anns = {a["name"]: a for a in g["annotations"]["list"]}
    assert "kafka_consumergroup_generation" in anns["Rebalances"]["expr"]
    assert anns["Rebalances"]["step"] and anns["Member timeouts"]["titleFormat"]
    assert all('group="$group"' in t["expr"] for p in _panels(g) if p["type"] != "row" for t in p["targets"]
               if "kafka_consumergroup" in t["expr"] and "kafka_topic_partition_end_offset" not in t["expr"])


def test_rebalances_and_storms_are_annotations_on_both_dashboards(models):
    """Storm annotations say what the storm looks like (kafka_consumergroup_storm_pattern's label)."""
    for name in ("fleet", "group"):
        anns = {a["name"]: a for a in models[name]["annotations"]["list"]}
        storm = anns["Storms" if name == "fleet" else "Storm"]
        assert "kafka_consumergroup_storm_pattern" in storm["expr"] and "pattern" in storm["tagKeys"]
        assert "{{pattern}}" in storm["textFormat"]
        assert "kafka_consumergroup_generation" in anns["Rebalances"]["expr"]
    fleet = {a["name"]: a for a in models["fleet"]["annotations"]["list"]}
    assert "{{group}}" in fleet["Rebalances"]["titleFormat"] and 'group=~"$group"' in fleet["Storms"]["expr"]
    # each dashboard's annotations follow its group variable: the drill-down marks its one group's rebalances,
    # storms and timeouts only, the overview the selected groups'
    for name, selector in (("fleet", 'group=~"$group"'), ("group", 'group="$group"')):
        queried = [a for a in models[name]["annotations"]["list"] if a.get("expr")]
        assert len(queried) >= 2 and all(a["enable"] and a["step"] for a in queried), name
        for a in queried:
            for series in re.findall(r"kafka_consumergroup_\w+\{[^}]*\}", a["expr"]):
                assert selector in series, (name, a["name"], series)


def test_fleet_tables_link_to_the_drilldown(models):
    links = []
    for p in _panels(models["fleet"]):
        for o in (p.get("fieldConfig") or {}).get("overrides") or []:
            for prop in o["properties"]:
                if prop["id"] == "links":
                    links += [link["url"] for link in prop["value"]]
    assert links and all(u.startswith(f"/d/{models['group']['uid']}/") and "var-group=" in u for u in links)
    # the drill-down opens on the clicked group's own cluster: the same name on another cluster is another group
    assert all("var-kafka_cluster=${__data.fields.kafka_cluster}" in u for u in links)


def test_configmap_carries_the_dashboards():
    doc = yaml.safe_load((ROOT / "deploy" / "k8s" / "dashboards-configmap.yaml").read_text())
    assert doc["kind"] == "ConfigMap" and doc["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert {json.loads(v)["uid"] for v in doc["data"].values()} == {
        json.loads(p.read_text())["uid"] for p in GENERATED.glob("*.json")}


def test_check_command_reports_drift(monkeypatch, capsys):
    import subprocess

    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_dashboards.py"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    real = artifacts.expected()
    target = ROOT / "docs" / "alerts.md"
    monkeypatch.setattr(artifacts, "expected", lambda: {**real, target: real[target] + "changed\n"})
    from dashboards.__main__ import main

    assert main(["--check"]) == 1
    assert "out of date: docs/alerts.md" in capsys.readouterr().err


def test_alerts_doc_lists_every_alert():
    text = (ROOT / "docs" / "alerts.md").read_text()
    rules = yaml.safe_load((ROOT / "conf" / "rules" / "alerts.yml").read_text())
    for g in rules["groups"]:
        for r in g["rules"]:
            assert f"\n## {r['alert']}\n" in text
            assert r["annotations"]["runbook"].split()[0] in text
