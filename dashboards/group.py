"""Group drill-down: one consumer group's generations, rebalance durations and causes, members, assignment
quality, a streams group's tasks, and lag, with rebalances, storms and member timeouts as annotations."""
from __future__ import annotations

from grafana_foundation_sdk.models import common as cm

from .common import (ONE, UID_GROUP, base_dashboard, cluster_var, datasource_var, group_var, heatmap_panel,
                     help_of, metric, pie_panel, prometheus_annotation, q, render, row, sel, stat_panel,
                     table_panel, timeline_panel, ts_panel, value_map)

TITLE = "Kafka rebalances: consumer group"

# What the lag panels show at each lag.granularity (the exporter's setting, metrics/lag_levels.py): their queries
# sum by the labels that exist at every level; only these two panels show less than at "partition".
GRANULARITY_NOTE = {
    "Lag (offsets)": "One line per topic; with the monitor's lag.granularity at group, the total alone.",
    "Lag by topic and partition": "Needs lag.granularity partition for a row per partition: at topic, a row per "
                                  "topic (offsets summed over its partitions); at group, one row for the whole "
                                  "group and no log-end offset.",
}


def _bucket_sel() -> str:
    return sel(metric("kafka_consumergroup_rebalance_duration_seconds_bucket"), ONE)


def build() -> str:
    generation = sel("kafka_consumergroup_generation", ONE)
    state = sel("kafka_consumergroup_state", ONE)
    members = sel("kafka_consumergroup_members", ONE)
    protocol = sel("kafka_consumergroup_protocol_info", ONE)
    in_progress = sel("kafka_consumergroup_rebalance_in_progress", ONE)
    last_ts = sel("kafka_consumergroup_last_rebalance_timestamp_seconds", ONE)
    storm = sel("kafka_consumergroup_storm", ONE)
    storms = sel("kafka_consumergroup_storms_total", ONE)
    disagreements = sel("kafka_consumergroup_broker_view_disagreements_total", ONE)
    storm_pattern = sel("kafka_consumergroup_storm_pattern", ONE)
    coordinator = sel("kafka_consumergroup_coordinator_info", ONE)
    rebalances = sel("kafka_consumergroup_rebalances_total", ONE)
    gens = sel("kafka_consumergroup_generations_total", ONE)
    dur_sum = sel(metric("kafka_consumergroup_rebalance_duration_seconds_sum"), ONE)
    dur_count = sel(metric("kafka_consumergroup_rebalance_duration_seconds_count"), ONE)
    timeouts = sel("kafka_consumergroup_member_timeouts_total", ONE)
    gap = sel("kafka_consumergroup_heartbeat_gap_ratio", ONE)
    poll_gap = sel("kafka_consumergroup_poll_gap_ratio", ONE)
    at_risk = sel("kafka_consumergroup_member_at_risk_deadline_timestamp_seconds", ONE)
    client_lat_avg = sel("kafka_consumergroup_client_rebalance_latency_avg_seconds", ONE)
    client_lat_max = sel("kafka_consumergroup_client_rebalance_latency_max_seconds", ONE)
    client_idle = sel("kafka_consumergroup_client_poll_idle_ratio", ONE)
    client_rebalances = sel("kafka_consumergroup_client_rebalances_total", ONE)
    client_lat_total = sel("kafka_consumergroup_client_rebalance_latency_seconds_total", ONE)
    mismatched = sel("kafka_consumergroup_assignment_mismatched_partitions", ONE)
    unassigned = sel("kafka_consumergroup_unassigned_partitions", ONE)
    imbalance = sel("kafka_consumergroup_assignment_imbalance", ONE)
    needless = sel("kafka_consumergroup_needless_moves", ONE)
    moved = sel("kafka_consumergroup_partitions_moved_total", ONE)
    lag = sel("kafka_consumergroup_lag", ONE)
    member_tasks = sel("kafka_streamsgroup_member_tasks", ONE)
    tasks_moved = sel("kafka_streamsgroup_tasks_moved_total", ONE)
    mismatched_tasks = sel("kafka_streamsgroup_assignment_mismatched_tasks", ONE)
    lag_sum = sel("kafka_consumergroup_lag_sum", ONE)
    lag_s = sel("kafka_consumergroup_lag_seconds", ONE)
    lag_at_start = sel("kafka_consumergroup_lag_sum_at_rebalance_start", ONE)
    committed = sel("kafka_consumergroup_committed_offset", ONE)
    end_offset = sel("kafka_topic_partition_end_offset")
    started_ts = sel("kafka_consumergroup_last_rebalance_start_timestamp_seconds", ONE)

    annotations = {}
    rebal_ann, extra = prometheus_annotation(
        "Rebalances", f"max({generation}) and on () max(changes({generation}[1m])) > 0", "orange",
        title="Rebalance", text="New generation of $group", step="60s")
    annotations.update(extra)
    storm_ann, extra = prometheus_annotation(
        "Storm", f"max by (pattern) ({storm_pattern}) == 1 or (max({storm}) == 1 unless on () max({storm_pattern}))",
        "red", title="Rebalance storm", text="$group is in a rebalance storm: {{pattern}}", tag_keys="pattern")
    annotations.update(extra)
    timeout_ann, extra = prometheus_annotation(
        "Member timeouts", f"sum by (timeout, client_id, host) (changes({timeouts}[1m])) > 0", "purple",
        title="{{timeout}} timeout", text="{{client_id}} on {{host}}", tag_keys="timeout,client_id,host",
        step="60s")
    annotations.update(extra)

    d = (base_dashboard(TITLE, UID_GROUP,
                        "One consumer group: generations, rebalance durations and causes, members and their "
                        "timeouts, assignment quality and lag. Annotations mark rebalances, storms and "
                        "member timeouts.")
         .with_variable(datasource_var()).with_variable(cluster_var()).with_variable(group_var(multi=False))
         .annotation(rebal_ann).annotation(storm_ann).annotation(timeout_ann))

    d = d.with_row(row("Now"))
    d = d.with_panel(stat_panel(
        "State", help_of("kafka_consumergroup_state"),
        [q(f"max by (state) ({state}) == 1", "{{state}}", instant=True)],
        text_mode=cm.BigValueTextMode.NAME, w=3))
    d = d.with_panel(stat_panel(
        "Type", "The group's type: classic, consumer (KIP-848), streams (KIP-1071) or share (KIP-932), from its "
        "members (the group_type label of every group series).",
        [q(f"max by (group_type) ({generation})", "{{group_type}}", instant=True)],
        text_mode=cm.BigValueTextMode.NAME, w=3))
    d = d.with_panel(stat_panel(
        "Generation", help_of("kafka_consumergroup_generation"), [q(f"max({generation})")], w=3, graph=True))
    d = d.with_panel(stat_panel(
        "Members", help_of("kafka_consumergroup_members"), [q(f"max({members})")], w=3, graph=True))
    d = d.with_panel(stat_panel(
        "Assignor", help_of("kafka_consumergroup_protocol_info"),
        [q(f"max by (protocol) ({protocol})", "{{protocol}}", instant=True)],
        text_mode=cm.BigValueTextMode.NAME, w=3))
    d = d.with_panel(stat_panel(
        "Storm", help_of("kafka_consumergroup_storm"), [q(f"max({storm})", instant=True)], w=3,
        mappings=value_map({"0": ("no", "green"), "1": ("STORM", "red")})))
    d = d.with_panel(stat_panel(
        "Storm looks like", help_of("kafka_consumergroup_storm_pattern"),
        [q(f"max by (pattern) ({storm_pattern}) == 1", "{{pattern}}", instant=True)],
        text_mode=cm.BigValueTextMode.NAME, w=3).no_value("no storm"))
    d = d.with_panel(stat_panel(
        "Rebalancing for", "Time since the current rebalance started (empty when the group is not rebalancing). "
        + help_of("kafka_consumergroup_last_rebalance_start_timestamp_seconds"),
        [q(f"(time() - max({started_ts})) and on () (max({in_progress}) == 1)", instant=True)], unit="s", w=3,
        thresholds=[(None, "green"), (30, "orange"), (300, "red")]).no_value("not rebalancing"))
    d = d.with_panel(stat_panel(
        "Last rebalance", help_of("kafka_consumergroup_last_rebalance_timestamp_seconds"),
        [q(f"max({last_ts}) * 1000", instant=True)], unit="dateTimeFromNow", w=3))
    d = d.with_panel(stat_panel(
        "Coordinator", help_of("kafka_consumergroup_coordinator_info"),
        [q(f"max by (partition, broker) ({coordinator})", "partition {{partition}}, broker {{broker}}",
           instant=True)],
        text_mode=cm.BigValueTextMode.NAME, w=3))

    d = d.with_row(row("Generations"))
    d = d.with_panel(ts_panel(
        "Generation timeline", "The group's generation id; each step is a completed rebalance.",
        [q(f"max({generation})", "generation")], step=True, min_val=None, w=12, h=7))
    d = d.with_panel(timeline_panel(
        "Rebalancing and storms", "Periods in a rebalance (PreparingRebalance/CompletingRebalance) and in a storm.",
        [q(f"max({in_progress})", "rebalancing"), q(f"max({storm})", "storm")],
        mappings=value_map({"0": ("no", "transparent"), "1": ("yes", "red")}), w=12, h=7))
    d = d.with_panel(ts_panel(
        "Rebalance duration", help_of("kafka_consumergroup_rebalance_duration_seconds"),
        [q(f"histogram_quantile(0.5, sum by (le) (rate({_bucket_sel()}[$__rate_interval])))", "p50"),
         q(f"histogram_quantile(0.99, sum by (le) (rate({_bucket_sel()}[$__rate_interval])))", "p99"),
         q(f"sum(rate({dur_sum}[$__rate_interval])) / sum(rate({dur_count}[$__rate_interval]))", "mean")],
        unit="s", w=12, h=8))
    d = d.with_panel(heatmap_panel(
        "Rebalance duration distribution", "Completed rebalances per duration bucket.",
        [q(f"sum by (le) (increase({_bucket_sel()}[$__rate_interval]))", "{{le}}", fmt="heatmap")],
        w=12, h=8))

    d = d.with_row(row("Causes"))
    d = d.with_panel(ts_panel(
        "Rebalances by cause", help_of("kafka_consumergroup_rebalances_total"),
        [q(f"sum by (cause) (increase({rebalances}[$__rate_interval]))", "{{cause}}")],
        bars=True, stack=True, w=10, h=8))
    d = d.with_panel(pie_panel(
        "Causes over the range", "Share of each cause among the rebalances of the dashboard's time range.",
        [q(f"sum by (cause) (increase({rebalances}[$__range])) > 0", "{{cause}}", instant=True)],
        w=6, h=8))
    d = d.with_panel(stat_panel(
        "Rebalances and storms over the range", "Generations completed and storms started in the time range.",
        [q(f"round(sum(increase({gens}[$__range])))", "rebalances", instant=True),
         q(f"round(sum(increase({storms}[$__range]))) or vector(0)", "storms", instant=True),
         q(f"round(sum(increase({disagreements}[$__range]))) or vector(0)", "broker disagrees", instant=True)],
        text_mode=cm.BigValueTextMode.VALUE_AND_NAME, w=8, h=8))
    d = d.with_panel(table_panel(
        "Timeouts by member and host, over the range", help_of("kafka_consumergroup_member_timeouts_total"),
        [q(f"sum by (client_id, host, timeout) (increase({timeouts}[$__range])) > 0", instant=True, fmt="table")],
        rename={"Value": "timeouts"}, sort_by="timeouts", w=12, h=8,
        thresholds=[(None, "green"), (1, "orange"), (3, "red")]))
    d = d.with_panel(ts_panel(
        "Member timeouts", "Members removed for missing their session timeout or max.poll.interval.ms.",
        [q(f"sum by (timeout, client_id, host) (increase({timeouts}[$__rate_interval]))",
           "{{timeout}}: {{client_id}} on {{host}}")],
        bars=True, stack=True, w=12, h=8))

    d = d.with_row(row("Members"))
    d = d.with_panel(ts_panel(
        "Members", help_of("kafka_consumergroup_members"), [q(f"max({members})", "members")], step=True, w=12,
        h=8))
    d = d.with_panel(ts_panel(
        "Heartbeat-gap ratio", help_of("kafka_consumergroup_heartbeat_gap_ratio") +
        " The alert KafkaConsumerGroupHeartbeatGapHigh fires above 0.8.",
        [q(f"max({gap})", "largest gap / session timeout")], unit="percentunit", max_val=1.2, w=12, h=8,
        thresholds=[(None, "green"), (0.8, "orange"), (1, "red")]))
    d = d.with_panel(ts_panel(
        "Poll-gap ratio", help_of("kafka_consumergroup_poll_gap_ratio") +
        " Members whose polls are known: instrumented consumers, and Java consumers through the broker plugin or "
        "the client reporter.",
        [q(f"max({poll_gap})", "time since last poll / max.poll.interval.ms")], unit="percentunit", max_val=1.2,
        w=12, h=8, thresholds=[(None, "green"), (0.8, "orange"), (1, "red")]))
    d = d.with_panel(table_panel(
        "Members at risk", help_of("kafka_consumergroup_member_at_risk_deadline_timestamp_seconds") +
        " Seconds left: to the deadline (below 0: past it, the timeout not seen yet); the nearest first.",
        [q(f"max by (member_id, client_id, host, risk) ({at_risk}) - time()", instant=True, fmt="table")],
        unit="s", rename={"Value": "seconds left"}, sort_by="seconds left", ascending=True, w=12, h=8,
        thresholds=[(None, "red"), (5, "orange"), (15, "green")]))
    own = (" As each client reports itself (KIP-714's standard metrics, e.g. confluent-kafka's): not evidence of "
           "a member's heartbeats or polls.")
    d = d.with_panel(ts_panel(
        "Clients' own rebalance latency", help_of("kafka_consumergroup_client_rebalance_latency_max_seconds") + own,
        [q(f"max by (client_id) ({client_lat_max})", "{{client_id}} max"),
         q(f"max by (client_id) ({client_lat_avg})", "{{client_id}} avg")], unit="s", w=12, h=8))
    d = d.with_panel(ts_panel(
        "Clients' own rebalances", help_of("kafka_consumergroup_client_rebalances_total") + " Time: " +
        help_of("kafka_consumergroup_client_rebalance_latency_seconds_total") + own,
        [q(f"sum by (client_id) (increase({client_rebalances}[$__rate_interval]))", "{{client_id}} rebalances"),
         q(f"sum by (client_id) (increase({client_lat_total}[$__rate_interval]))", "{{client_id}} seconds")],
        bars=True, w=12, h=8))
    d = d.with_panel(ts_panel(
        "Clients' own poll idle ratio", help_of("kafka_consumergroup_client_poll_idle_ratio") + own,
        [q(f"min by (client_id) ({client_idle})", "{{client_id}}")], unit="percentunit", max_val=1, w=12, h=8))

    d = d.with_row(row("Assignment"))
    d = d.with_panel(ts_panel(
        "Expected vs actual assignment",
        "Partitions assigned differently from what the group's assignor computes, and partitions no member "
        "owns (latest generation).",
        [q(f"max({mismatched})", "mismatched"), q(f"max({unassigned})", "unassigned")], step=True, w=8, h=8))
    d = d.with_panel(ts_panel(
        "Partitions moved", help_of("kafka_consumergroup_partitions_moved_total"),
        [q(f"sum(increase({moved}[$__rate_interval]))", "moved")], bars=True, w=8, h=8))
    d = d.with_panel(ts_panel(
        "Needless moves and imbalance",
        help_of("kafka_consumergroup_needless_moves") + " Imbalance: " +
        help_of("kafka_consumergroup_assignment_imbalance"),
        [q(f"max({needless})", "needless moves"), q(f"max({imbalance})", "imbalance")], step=True, w=8, h=8))

    d = d.with_row(row("Streams group tasks"))
    d = d.with_panel(ts_panel(
        "Tasks per member", help_of("kafka_streamsgroup_member_tasks") + " Empty for a group that is no streams group.",
        [q(f"max by (client_id, kind) ({member_tasks})", "{{client_id}} {{kind}}")], step=True, w=8, h=8))
    d = d.with_panel(ts_panel(
        "Tasks moved", help_of("kafka_streamsgroup_tasks_moved_total"),
        [q(f"sum by (scope) (increase({tasks_moved}[$__rate_interval]))", "{{scope}}")], bars=True, stack=True,
        w=8, h=8))
    d = d.with_panel(ts_panel(
        "Mismatched tasks", help_of("kafka_streamsgroup_assignment_mismatched_tasks"),
        [q(f"max({mismatched_tasks})", "mismatched")], step=True, w=8, h=8))

    d = d.with_row(row("Lag"))
    d = d.with_panel(ts_panel(
        "Lag (offsets)", help_of("kafka_consumergroup_lag") + " " + GRANULARITY_NOTE["Lag (offsets)"],
        [q(f"sum by (topic) ({lag})", "topic {{topic}}"), q(f"max({lag_sum})", "total")], w=8, h=8))
    d = d.with_panel(ts_panel(
        "Lag (seconds)", help_of("kafka_consumergroup_lag_seconds"), [q(f"max({lag_s})", "time lag")],
        unit="s", w=8, h=8))
    d = d.with_panel(ts_panel(
        "Lag growth since the last rebalance started", help_of("kafka_consumergroup_lag_sum_at_rebalance_start"),
        [q(f"max({lag_sum}) - max({lag_at_start})", "growth")], min_val=None, w=8, h=8))
    d = d.with_panel(table_panel(
        "Lag by topic and partition", "Current lag, committed offset and log-end offset of each partition of the "
        "group. " + GRANULARITY_NOTE["Lag by topic and partition"],
        [q(f"max by (topic, partition) ({lag})", instant=True, fmt="table"),
         q(f"max by (topic, partition) ({committed})", instant=True, fmt="table"),
         q(f"max by (topic, partition) ({end_offset}) and on (topic, partition) max by (topic, partition) ({lag})",
           instant=True, fmt="table")],
        rename={"Value #A": "lag", "Value #B": "committed offset", "Value #C": "log-end offset"}, sort_by="lag",
        w=24, h=9))
    return render(d, annotations)
