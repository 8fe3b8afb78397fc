"""Shared pieces of the dashboards: metric look-ups in the catalogue, selectors, variables, panel builders.

Every metric a panel reads goes through :func:`metric` (or a recorded series through :func:`recorded`), so a
dashboard cannot name a metric the catalogue (or conf/rules/recording.yml) does not define: building fails.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import yaml
from grafana_foundation_sdk.builders import bargauge, dashboard as db, heatmap, piechart, prometheus, stat
from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.builders import statetimeline, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as cm
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models import heatmap as hm
from grafana_foundation_sdk.models import piechart as pc
from grafana_foundation_sdk.models import prometheus as pm

from rebalance_monitor.metrics.catalogue import by_name

ROOT = Path(__file__).resolve().parent.parent
RECORDING_RULES = ROOT / "conf" / "rules" / "recording.yml"

TAG = "kafka-rebalance"
UID_FLEET = "kafka-rebalance-fleet"
UID_GROUP = "kafka-rebalance-group"
UID_MONITOR = "kafka-rebalance-monitor"

DS = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")

# Catalogue units -> Grafana unit ids.
_UNITS = {"seconds": "s", "bytes": "bytes", "": "short", "offsets": "short", "partitions": "short",
          "members": "short", "records": "short", "rows": "short", "groups": "short"}

_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def metric(name: str) -> str:
    """``name`` checked against the catalogue (histogram series may carry _bucket/_sum/_count)."""
    try:
        by_name(name)
        return name
    except KeyError:
        pass
    for suffix in _HISTOGRAM_SUFFIXES:
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            try:
                spec = by_name(base)
            except KeyError:
                break
            if spec.type != "histogram":
                raise KeyError(f"{name}: {base} is a {spec.type}, not a histogram")
            return name
    raise KeyError(f"{name} is not in the metric catalogue")


@lru_cache(maxsize=1)
def recorded_names() -> frozenset[str]:
    doc = yaml.safe_load(RECORDING_RULES.read_text(encoding="utf-8"))
    return frozenset(r["record"] for g in doc["groups"] for r in g["rules"] if "record" in r)


def recorded(name: str) -> str:
    """A series recorded by conf/rules/recording.yml."""
    if name not in recorded_names():
        raise KeyError(f"{name} is not recorded by {RECORDING_RULES.name}")
    return name


def unit_of(name: str) -> str:
    return _UNITS.get(by_name(name).unit, "short")


def help_of(name: str) -> str:
    return by_name(name).help


# ---- selectors ------------------------------------------------------------------------------------------------
def in_catalogue(name: str) -> bool:
    """Whether the catalogue defines ``name`` (a panel of a family still to come is left out until it does)."""
    try:
        metric(name)
        return True
    except KeyError:
        return False


# The Kafka clusters: one monitor may watch several, and puts the cluster's name (as its configuration spells it;
# "default" for a monitor of one cluster) first on every series. A group name on two clusters is two groups, so
# every selector filters on the variable and every aggregation that keeps a group keeps its cluster too.
KAFKA_CLUSTER = 'kafka_cluster=~"$kafka_cluster"'


def sel(name: str, *matchers: str) -> str:
    """``name{cluster=~"$cluster", kafka_cluster=~"$kafka_cluster", <matchers>}``; ``name`` must be in the
    catalogue or recorded."""
    if name not in recorded_names():
        metric(name)
    return name + "{" + ", ".join(('cluster=~"$cluster"', KAFKA_CLUSTER) + matchers) + "}"


FLEET = 'group_type=~"$group_type", group=~"$group"'   # fleet overview: multi-value type and group variables
FLEET_GROUP = 'group=~"$group"'   # the recorded series (by cluster, Kafka cluster and group: no type; typed())
ONE = 'group="$group"'         # drill-down: exactly one group
INST = 'instance=~"$instance"'  # monitor health


# ---- variables ------------------------------------------------------------------------------------------------
def datasource_var() -> db.DatasourceVariable:
    return db.DatasourceVariable("datasource").label("Data source").type("prometheus")


def _all_of(v: db.QueryVariable) -> db.QueryVariable:
    """Several values may be picked, "All" (the regex .*, which also matches series without the label) first."""
    return (v.multi(True).include_all(True).all_value(".*")
            .current(dm.VariableOption(selected=True, text="All", value="$__all")))


def _query_var(name: str, label: str, query: str, sort=dm.VariableSort.ALPHABETICAL_ASC) -> db.QueryVariable:
    return (db.QueryVariable(name).label(label).datasource(DS).query(query)
            .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED).sort(sort))


def cluster_var() -> db.QueryVariable:
    # `cluster` is a target label set by Prometheus (relabelling), not by the monitor: see docs/operations.md.
    return _all_of(_query_var("cluster", "Cluster", f"label_values({metric('rebalance_monitor_up')}, cluster)"))


def kafka_cluster_var() -> db.QueryVariable:
    # `kafka_cluster` is the monitor's own label: the name of the Kafka cluster a series comes from, on every series
    # of every family (rebalance_monitor_up too: every cluster a monitor watches has one).
    up = metric("rebalance_monitor_up")
    return _all_of(_query_var("kafka_cluster", "Kafka cluster",
                              f'label_values({up}{{cluster=~"$cluster"}}, kafka_cluster)'))


def group_var(multi: bool) -> db.QueryVariable:
    """The group variable: of the fleet (`multi`: several groups, narrowed by the group-type variable), or of a
    drill-down (one group, any type)."""
    generation = metric("kafka_consumergroup_generation")
    where = (f'cluster=~"$cluster", {KAFKA_CLUSTER}, group_type=~"$group_type"' if multi
             else f'cluster=~"$cluster", {KAFKA_CLUSTER}')
    v = _query_var("group", "Consumer group", f"label_values({generation}{{{where}}}, group)",
                   dm.VariableSort.ALPHABETICAL_CASE_INSENSITIVE_ASC)
    return _all_of(v) if multi else v


def group_type_var() -> db.QueryVariable:
    # classic, consumer, streams, share (unknown: a group known by its commits alone), as the monitor labels them
    generation = metric("kafka_consumergroup_generation")
    return _all_of(_query_var("group_type", "Group type",
                              f'label_values({generation}{{cluster=~"$cluster", {KAFKA_CLUSTER}}}, group_type)'))


def typed(recorded_selector: str) -> str:
    """A recorded series (kept by cluster, Kafka cluster and group) narrowed to the groups of the selected types."""
    generation = sel("kafka_consumergroup_generation", FLEET)
    return f"({recorded_selector} and on (cluster, kafka_cluster, group) {generation})"


def instance_var() -> db.QueryVariable:
    return _all_of(_query_var("instance", "Monitor instance",
                              f'label_values({metric("rebalance_monitor_up")}{{cluster=~"$cluster", {KAFKA_CLUSTER}}}, '
                              'instance)'))


# ---- queries --------------------------------------------------------------------------------------------------
def q(expr: str, legend: str | None = None, *, instant: bool = False, fmt: str | None = None,
      interval: str | None = None) -> prometheus.Dataquery:
    b = prometheus.Dataquery().expr(expr).editor_mode(pm.QueryEditorMode.CODE)
    b = b.instant() if instant else b.range()
    if legend is not None:
        b = b.legend_format(legend)
    if fmt == "table":
        b = b.format(pm.PromQueryFormat.TABLE)
    elif fmt == "heatmap":
        b = b.format(pm.PromQueryFormat.HEATMAP)
    if interval:
        b = b.interval(interval)
    return b


def _with_targets(panel, targets: list[prometheus.Dataquery]):
    for i, t in enumerate(targets):
        panel = panel.with_target(t.ref_id(chr(ord("A") + i)))
    return panel


def _thresholds(steps: list[tuple[float | None, str]]) -> db.ThresholdsConfig:
    return (db.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE)
            .steps([dm.Threshold(value=v, color=c) for v, c in steps]))


GREEN_ONLY = [(None, "green")]


def _base(panel, title: str, description: str, targets, w: int, h: int, unit: str | None):
    panel = panel.title(title).description(description).datasource(DS).span(w).height(h)
    if unit:
        panel = panel.unit(unit)
    return _with_targets(panel, targets)


def value_map(mapping: dict[str, tuple[str, str]]) -> list[dm.ValueMap]:
    """``{"0": ("no", "green"), ...}`` as one value-to-text mapping."""
    return [dm.ValueMap(options={k: dm.ValueMappingResult(text=t, color=c, index=i)
                                 for i, (k, (t, c)) in enumerate(mapping.items())})]


def ts_panel(title: str, description: str, targets, *, unit: str | None = "short", w: int = 12, h: int = 8,
             bars: bool = False, stack: bool = False, step: bool = False, min_val: float | None = 0,
             max_val: float | None = None, thresholds: list[tuple[float | None, str]] | None = None,
             legend_table: bool = False) -> timeseries.Panel:
    p = _base(timeseries.Panel(), title, description, targets, w, h, unit)
    if bars:
        p = p.draw_style(cm.GraphDrawStyle.BARS).fill_opacity(80).line_width(1)
    else:
        p = p.draw_style(cm.GraphDrawStyle.LINE).fill_opacity(10).line_width(1)
    if step:
        p = p.line_interpolation(cm.LineInterpolation.STEP_AFTER)
    if stack:
        p = p.stacking(cb.StackingConfig().mode(cm.StackingMode.NORMAL))
    if min_val is not None:
        p = p.min(min_val)
    if max_val is not None:
        p = p.max(max_val)
    if thresholds:
        p = (p.thresholds(_thresholds(thresholds))
             .thresholds_style(cb.GraphThresholdsStyleConfig().mode(cm.GraphTresholdsStyleMode.DASHED)))
    legend = cb.VizLegendOptions().show_legend(True).placement(cm.LegendPlacement.BOTTOM)
    if legend_table:
        legend = legend.display_mode(cm.LegendDisplayMode.TABLE).calcs(["max", "lastNotNull"])
    else:
        legend = legend.display_mode(cm.LegendDisplayMode.LIST)
    return p.legend(legend).tooltip(cb.VizTooltipOptions().mode(cm.TooltipDisplayMode.MULTI)
                                    .sort(cm.SortOrder.DESCENDING))


def stat_panel(title: str, description: str, targets, *, unit: str | None = "short", w: int = 4, h: int = 4,
               thresholds: list[tuple[float | None, str]] | None = None, mappings=None,
               text_mode: cm.BigValueTextMode = cm.BigValueTextMode.AUTO, graph: bool = False) -> stat.Panel:
    p = _base(stat.Panel(), title, description, targets, w, h, unit)
    p = (p.thresholds(_thresholds(thresholds or GREEN_ONLY)).color_mode(cm.BigValueColorMode.VALUE)
         .graph_mode(cm.BigValueGraphMode.AREA if graph else cm.BigValueGraphMode.NONE).text_mode(text_mode)
         .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False)))
    if mappings:
        p = p.mappings(mappings)
    return p


def table_panel(title: str, description: str, targets, *, unit: str | None = "short", w: int = 12, h: int = 8,
                sort_by: str | None = None, hide: tuple[str, ...] = ("Time",),
                rename: dict[str, str] | None = None, group_link: bool = False,
                thresholds: list[tuple[float | None, str]] | None = None, ascending: bool = False) -> table.Panel:
    """A table of instant queries (merged on their labels), sorted by ``sort_by`` descending (``ascending``: the
    smallest first)."""
    p = _base(table.Panel(), title, description, targets, w, h, unit)
    p = p.with_transformation(dm.DataTransformerConfig(id_val="merge", options={}))
    p = p.with_transformation(dm.DataTransformerConfig(id_val="organize", options={
        "excludeByName": {k: True for k in hide}, "renameByName": dict(rename or {}),
    }))
    if sort_by:
        p = p.sort_by([cb.TableSortByFieldState().display_name(sort_by).desc(not ascending)])
    if thresholds:
        p = p.thresholds(_thresholds(thresholds))
    if group_link:
        p = p.override_by_name("group", [dm.DynamicConfigValue(id_val="links", value=[group_drilldown_link()])])
    return p


def bargauge_panel(title: str, description: str, targets, *, unit: str | None = "short", w: int = 12,
                   h: int = 8, min_val: float | None = 0, max_val: float | None = None,
                   thresholds: list[tuple[float | None, str]] | None = None) -> bargauge.Panel:
    p = _base(bargauge.Panel(), title, description, targets, w, h, unit)
    p = (p.display_mode(cm.BarGaugeDisplayMode.GRADIENT).orientation(cm.VizOrientation.HORIZONTAL)
         .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
         .thresholds(_thresholds(thresholds or GREEN_ONLY)))
    if min_val is not None:
        p = p.min(min_val)
    if max_val is not None:
        p = p.max(max_val)
    return p


def pie_panel(title: str, description: str, targets, *, unit: str | None = "short", w: int = 8,
              h: int = 8) -> piechart.Panel:
    p = _base(piechart.Panel(), title, description, targets, w, h, unit)
    return (p.pie_type(pc.PieChartType.DONUT)
            .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
            .legend(piechart.PieChartLegendOptions().show_legend(True).display_mode(cm.LegendDisplayMode.TABLE)
                    .placement(cm.LegendPlacement.RIGHT).values(["value", "percent"])))


def heatmap_panel(title: str, description: str, targets, *, unit: str = "s", w: int = 12,
                  h: int = 8) -> heatmap.Panel:
    p = _base(heatmap.Panel(), title, description, targets, w, h, None)
    return (p.calculate(False)
            .y_axis(heatmap.YAxisConfig().unit(unit))
            .color(heatmap.HeatmapColorOptions().mode(hm.HeatmapColorMode.SCHEME).scheme("Oranges")
                   .fill("dark-orange").scale(hm.HeatmapColorScale.EXPONENTIAL).exponent(0.5).steps(64)
                   .reverse(False))
            .cell_gap(1).show_value(cm.VisibilityMode.AUTO).show_legend().show_tooltip())


def timeline_panel(title: str, description: str, targets, *, w: int = 12, h: int = 6,
                   mappings=None) -> statetimeline.Panel:
    p = _base(statetimeline.Panel(), title, description, targets, w, h, None)
    p = p.show_value(cm.VisibilityMode.NEVER).merge_values(True).row_height(0.8).fill_opacity(80)
    if mappings:
        p = p.mappings(mappings)
    return p


def row(title: str) -> db.Row:
    return db.Row(title)


# ---- links ----------------------------------------------------------------------------------------------------
def group_drilldown_link() -> dict:
    """A data link from a table cell with ``kafka_cluster`` and ``group`` labels to the group drill-down, on that
    group's Kafka cluster (a group name on two clusters is two groups)."""
    return {
        "title": "Open ${__data.fields.group} on ${__data.fields.kafka_cluster} in the group drill-down",
        "url": f"/d/{UID_GROUP}/?${{datasource:queryparam}}&${{cluster:queryparam}}"
               "&var-kafka_cluster=${__data.fields.kafka_cluster}&var-group=${__data.fields.group}"
               "&${__url_time_range}",
    }


def dashboards_link() -> db.DashboardLink:
    return (db.DashboardLink("Rebalance dashboards").type(dm.DashboardLinkType.DASHBOARDS).tags([TAG])
            .as_dropdown(True).include_vars(True).keep_time(True))


def base_dashboard(title: str, uid: str, description: str) -> db.Dashboard:
    return (db.Dashboard(title).uid(uid).description(description).tags(["kafka", TAG])
            .time("now-6h", "now").refresh("30s").timezone("browser").editable()
            .tooltip(dm.DashboardCursorSync.CROSSHAIR).link(dashboards_link()))


def prometheus_annotation(name: str, expr: str, color: str, *, title: str, text: str = "",
                          tag_keys: str = "", step: str = "60s") -> tuple[db.AnnotationQuery, dict]:
    """An annotation from a PromQL query. The SDK's AnnotationQuery has no field for the Prometheus-specific
    keys (step, titleFormat, textFormat, tagKeys), so they are returned apart and merged by :func:`render`."""
    a = db.AnnotationQuery().name(name).datasource(DS).enable(True).hide(False).icon_color(color).expr(expr)
    extra = {"step": step, "titleFormat": title, "textFormat": text, "tagKeys": tag_keys,
             "useValueForTime": False}
    return a, {name: extra}


BUILTIN_ANNOTATION = {
    "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True, "hide": True,
    "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard",
}


def render(d: db.Dashboard, annotation_extras: dict[str, dict] | None = None) -> str:
    """The dashboard as stable, pretty JSON (keys sorted, panel ids assigned in order)."""
    model = json.loads(json.dumps(d.build(), cls=JSONEncoder))
    for i, panel in enumerate(model.get("panels") or [], start=1):
        panel["id"] = i
    annotations = (model.get("annotations") or {}).get("list") or []
    for ann in annotations:
        ann.update((annotation_extras or {}).get(ann.get("name"), {}))
    # Grafana's own annotations (alert state changes, manual notes), as every dashboard Grafana saves has.
    model["annotations"] = {"list": [BUILTIN_ANNOTATION, *annotations]}
    for var in (model.get("templating") or {}).get("list") or []:
        var["id"] = var["name"]
    return json.dumps(model, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
