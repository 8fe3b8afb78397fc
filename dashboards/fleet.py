"""Fleet overview: which consumer groups rebalance, storm, time out and lag, across the selected clusters.

A group is a name on a Kafka cluster: the rankings span the selected Kafka clusters and name each group's (the
`kafka_cluster` column of the tables, "group on cluster" in the legends)."""
from __future__ import annotations

from .common import (FLEET, FLEET_GROUP, KAFKA_CLUSTER, UID_FLEET, bargauge_panel, base_dashboard, cluster_var,
                     datasource_var, group_type_var, group_var, help_of, kafka_cluster_var, pie_panel,
                     prometheus_annotation, q, recorded, render, row, sel, stat_panel, table_panel, ts_panel, typed)

TITLE = "Kafka rebalances: fleet overview"

# What names a group across the fleet: its name on its Kafka cluster (and the deployment's `cluster` target label).
GROUP_KEY = "cluster, kafka_cluster, group"


def build() -> str:
    rate5m = recorded("cluster_group:kafka_consumergroup_generations:rate5m")
    causes1h = recorded("cluster_group_cause:kafka_consumergroup_rebalances:increase1h")
    rate5m_typed = typed(f'{rate5m}{{cluster=~"$cluster", {KAFKA_CLUSTER}, {FLEET_GROUP}}}')
    causes1h_typed = typed(f'{causes1h}{{cluster=~"$cluster", {KAFKA_CLUSTER}, {FLEET_GROUP}}}')
    storm = sel("kafka_consumergroup_storm", FLEET)
    gens = sel("kafka_consumergroup_generations_total", FLEET)
    rebalances = sel("kafka_consumergroup_rebalances_total", FLEET)
    timeouts = sel("kafka_consumergroup_member_timeouts_total", FLEET)
    lag_sum = sel("kafka_consumergroup_lag_sum", FLEET)
    lag_s = sel("kafka_consumergroup_lag_seconds", FLEET)
    in_progress = sel("kafka_consumergroup_rebalance_in_progress", FLEET)
    generation = sel("kafka_consumergroup_generation", FLEET)
    storm_pattern = sel("kafka_consumergroup_storm_pattern", FLEET)
    annotations = {}
    rebal_ann, extra = prometheus_annotation(
        "Rebalances", f"max by ({GROUP_KEY}) (changes({generation}[1m])) > 0", "orange",
        title="Rebalance of {{group}} on {{kafka_cluster}}", text="new generation",
        tag_keys="cluster,kafka_cluster,group", step="60s")
    annotations.update(extra)
    storm_ann, extra = prometheus_annotation(
        "Storms", f"max by ({GROUP_KEY}, pattern) ({storm_pattern}) == 1", "red",
        title="Storm in {{group}} on {{kafka_cluster}}", text="looks like {{pattern}}",
        tag_keys="cluster,kafka_cluster,group,pattern", step="60s")
    annotations.update(extra)
    mismatched = sel("kafka_consumergroup_assignment_mismatched_partitions", FLEET)
    unassigned = sel("kafka_consumergroup_unassigned_partitions", FLEET)
    gap = sel("kafka_consumergroup_heartbeat_gap_ratio", FLEET)
    at_risk = sel("kafka_consumergroup_member_at_risk_deadline_timestamp_seconds", FLEET)

    d = (base_dashboard(TITLE, UID_FLEET,
                        "Consumer groups by rebalance rate, storms, causes, member timeouts and lag, over the "
                        "selected Kafka clusters (a group is a name on a cluster). "
                        "Click a group in a table to open its drill-down. Annotations mark rebalances and storms "
                        "(with what each storm looks like).")
         .with_variable(datasource_var()).with_variable(cluster_var()).with_variable(kafka_cluster_var())
         .with_variable(group_type_var()).with_variable(group_var(multi=True))
         .annotation(rebal_ann).annotation(storm_ann))

    d = d.with_row(row("Now"))
    d = d.with_panel(stat_panel(
        "Groups in a storm", help_of("kafka_consumergroup_storm"),
        [q(f"count(max by ({GROUP_KEY}) ({storm}) == 1) or vector(0)", instant=True)],
        thresholds=[(None, "green"), (1, "red")]))
    d = d.with_panel(stat_panel(
        "Groups rebalancing now", help_of("kafka_consumergroup_rebalance_in_progress"),
        [q(f"count(max by ({GROUP_KEY}) ({in_progress}) == 1) or vector(0)", instant=True)],
        thresholds=[(None, "green"), (1, "orange")]))
    d = d.with_panel(stat_panel(
        "Groups watched", "Consumer groups with a known generation.",
        [q(f"count(max by ({GROUP_KEY}) ({generation}))", instant=True)]))
    d = d.with_panel(stat_panel(
        "Rebalances in range", "Generations completed over the dashboard's time range, all selected groups.",
        [q(f"round(sum(increase({gens}[$__range])))", instant=True)],
        thresholds=[(None, "green")]))
    d = d.with_panel(stat_panel(
        "Member timeouts in range", help_of("kafka_consumergroup_member_timeouts_total"),
        [q(f"round(sum(increase({timeouts}[$__range]))) or vector(0)", instant=True)],
        thresholds=[(None, "green"), (1, "orange")]))
    d = d.with_panel(stat_panel(
        "Total lag", help_of("kafka_consumergroup_lag_sum"),
        [q(f"sum(max by ({GROUP_KEY}) ({lag_sum}))")], graph=True))

    d = d.with_panel(pie_panel(
        "Groups by type", "The selected groups by type: classic, consumer (KIP-848), streams (KIP-1071), share "
        "(KIP-932); unknown while nothing has said it.",
        [q(f"count by (group_type) (max by ({GROUP_KEY}, group_type) ({generation}))", "{{group_type}}",
           instant=True)], w=6, h=6))

    d = d.with_row(row("Rebalances"))
    d = d.with_panel(table_panel(
        "Groups by rebalance rate",
        "Rebalances per hour (rate over 5 minutes), storm flag and members, busiest first, ranked over all the "
        "selected Kafka clusters: kafka_cluster names each group's cluster (the same name on two clusters is two "
        "rows).",
        [q(f"topk(25, sum by ({GROUP_KEY}) {rate5m_typed} * 3600)",
           instant=True, fmt="table"),
         q(f"max by ({GROUP_KEY}) ({storm})", instant=True, fmt="table"),
         q(f"max by ({GROUP_KEY}) ({sel('kafka_consumergroup_members', FLEET)})", instant=True,
           fmt="table")],
        sort_by="rebalances/h", group_link=True, w=12, h=9,
        rename={"Value #A": "rebalances/h", "Value #B": "storm", "Value #C": "members"}))
    d = d.with_panel(ts_panel(
        "Rebalance rate, top 10 groups", "Completed generations per minute (rate over 5 minutes).",
        [q(f"topk(10, sum by ({GROUP_KEY}) {rate5m_typed} * 60)",
           "{{group}} on {{kafka_cluster}} ({{cluster}})")],
        unit="short", w=12, h=9))
    d = d.with_panel(table_panel(
        "Storms now", "Groups whose storm flag is up: storm.min_rebalances generations inside storm.window.",
        [q(f"max by ({GROUP_KEY}) ({storm}) == 1", instant=True, fmt="table"),
         q(f"sum by ({GROUP_KEY}) (increase({gens}[1h]))", instant=True, fmt="table")],
        hide=("Time", "Value #A"), rename={"Value #B": "generations in the last hour"}, group_link=True,
        sort_by="generations in the last hour", w=8, h=8))
    d = d.with_panel(ts_panel(
        "Groups in a storm", "Number of selected groups in a storm over time.",
        [q(f"sum(max by ({GROUP_KEY}) ({storm}))", "groups in a storm")],
        unit="short", w=8, h=8, step=True))
    d = d.with_panel(pie_panel(
        "Top causes, last hour", help_of("kafka_consumergroup_rebalances_total"),
        [q(f"topk(10, sum by (cause) {causes1h_typed})", "{{cause}}",
           instant=True)],
        w=8, h=8))
    d = d.with_panel(ts_panel(
        "Rebalances by cause", "Rebalances per minute, by cause (a generation with several causes counts for each).",
        [q(f"sum by (cause) (rate({rebalances}[$__rate_interval])) * 60", "{{cause}}")],
        unit="short", w=12, h=8, bars=True, stack=True))
    d = d.with_panel(table_panel(
        "Member timeouts by host, over the range", help_of("kafka_consumergroup_member_timeouts_total"),
        [q(f"topk(25, sum by (cluster, kafka_cluster, host, timeout) (increase({timeouts}[$__range]))) > 0",
           instant=True, fmt="table")],
        rename={"Value": "timeouts"}, sort_by="timeouts", w=12, h=8,
        thresholds=[(None, "green"), (1, "orange"), (3, "red")]))

    d = d.with_row(row("Lag"))
    d = d.with_panel(table_panel(
        "Top lag", "Groups with the largest lag, in offsets and in seconds.",
        [q(f"topk(15, max by ({GROUP_KEY}) ({lag_sum}))", instant=True, fmt="table"),
         q(f"max by ({GROUP_KEY}) ({lag_s})", instant=True, fmt="table")],
        rename={"Value #A": "lag (offsets)", "Value #B": "lag (seconds)"}, sort_by="lag (offsets)",
        group_link=True, w=12, h=8))
    d = d.with_panel(ts_panel(
        "Time lag, top 10 groups", help_of("kafka_consumergroup_lag_seconds"),
        [q(f"topk(10, max by ({GROUP_KEY}) ({lag_s}))", "{{group}} on {{kafka_cluster}} ({{cluster}})")],
        unit="s", w=12, h=8))

    d = d.with_row(row("Assignments and liveness"))
    d = d.with_panel(bargauge_panel(
        "Mismatched partitions", help_of("kafka_consumergroup_assignment_mismatched_partitions"),
        [q(f"topk(10, max by ({GROUP_KEY}) ({mismatched}) > 0)", "{{group}} on {{kafka_cluster}}", instant=True)],
        w=8, h=8, thresholds=[(None, "orange")]))
    d = d.with_panel(bargauge_panel(
        "Unassigned partitions", help_of("kafka_consumergroup_unassigned_partitions"),
        [q(f"topk(10, max by ({GROUP_KEY}) ({unassigned}) > 0)", "{{group}} on {{kafka_cluster}}", instant=True)],
        w=8, h=8, thresholds=[(None, "red")]))
    d = d.with_panel(bargauge_panel(
        "Heartbeat-gap ratio, top 10", help_of("kafka_consumergroup_heartbeat_gap_ratio"),
        [q(f"topk(10, max by ({GROUP_KEY}) ({gap}))", "{{group}} on {{kafka_cluster}}", instant=True)],
        unit="percentunit", w=8, h=8, max_val=1, thresholds=[(None, "green"), (0.5, "orange"), (0.8, "red")]))
    d = d.with_panel(table_panel(
        "Members at risk now", help_of("kafka_consumergroup_member_at_risk_deadline_timestamp_seconds") +
        " Seconds left: to the deadline (below 0: past it, the timeout not seen yet); the 25 nearest first.",
        [q(f"bottomk(25, max by ({GROUP_KEY}, member_id, client_id, host, risk) ({at_risk}) - time())",
           instant=True, fmt="table")],
        unit="s", rename={"Value": "seconds left"}, sort_by="seconds left", ascending=True, group_link=True, w=24,
        h=8, thresholds=[(None, "red"), (5, "orange"), (15, "green")]))
    return render(d, annotations)
