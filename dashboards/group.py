"""Group drill-down: one consumer group's generations, rebalance durations and causes, members, assignment
quality, a streams group's tasks, and lag, with rebalances, storms and member timeouts as annotations.

A group is a name on a Kafka cluster: with several clusters selected, a name found on two is two groups, so every
query keeps the Kafka cluster (:func:`by`) and every legend names it (:func:`legend`)."""
from __future__ import annotations

from grafana_foundation_sdk.models import common as cm

from .common import (ONE, UID_GROUP, base_dashboard, cluster_var, datasource_var, group_var, heatmap_panel,
                     help_of, kafka_cluster_var, metric, pie_panel, prometheus_annotation, q, render, row, sel,
                     stat_panel, table_panel, timeline_panel, ts_panel, value_map)

TITLE = "Kafka rebalances: consumer group"

# What the lag panels show at each lag.granularity (the exporter's setting, metrics/lag_levels.py): their queries
# sum by the labels that exist at every level; only these two panels show less than at "partition".
GRANULARITY_NOTE = {
    "Lag (offsets)": "One line per topic; with the monitor's lag.granularity at group, the total alone.",
    "Lag by topic and partition": "Needs lag.granularity partition for a row per partition: at topic, a row per "
                                  "topic (offsets summed over its partitions); at group, one row for the whole "
                                  "group and no log-end offset.",
}


def by(*labels: str) -> str:
    """A grouping clause that keeps the group's Kafka cluster: ``by (kafka_cluster, <labels>)``."""
    return f"by ({', '.join(('kafka_cluster',) + labels)})"


def legend(text: str = "") -> str:
    """A legend naming the series' Kafka cluster first."""
    return "{{kafka_cluster}}: " + text if text else "{{kafka_cluster}}"


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

    on_kc = "on (kafka_cluster)"
    annotations = {}
    rebal_ann, extra = prometheus_annotation(
        "Rebalances", f"max {by()} ({generation}) and {on_kc} max {by()} (changes({generation}[1m])) > 0", "orange",
        title="Rebalance", text="New generation of $group on {{kafka_cluster}}", tag_keys="kafka_cluster", step="60s")
    annotations.update(extra)
    storm_ann, extra = prometheus_annotation(
        "Storm", f"max {by('pattern')} ({storm_pattern}) == 1"
                 f" or (max {by()} ({storm}) == 1 unless {on_kc} max {by()} ({storm_pattern}))",
        "red", title="Rebalance storm", text="$group on {{kafka_cluster}} is in a rebalance storm: {{pattern}}",
        tag_keys="kafka_cluster,pattern")
    annotations.update(extra)
    timeout_ann, extra = prometheus_annotation(
        "Member timeouts", f"sum {by('timeout', 'client_id', 'host')} (changes({timeouts}[1m])) > 0", "purple",
        title="{{timeout}} timeout", text="{{client_id}} on {{host}} ({{kafka_cluster}})",
        tag_keys="kafka_cluster,timeout,client_id,host", step="60s")
    annotations.update(extra)

    d = (base_dashboard(TITLE, UID_GROUP,
                        "One consumer group: generations, rebalance durations and causes, members and their "
                        "timeouts, assignment quality and lag. Annotations mark rebalances, storms and "
                        "member timeouts. A group is a name on a Kafka cluster: every line names its cluster.")
         .with_variable(datasource_var()).with_variable(cluster_var()).with_variable(kafka_cluster_var())
         .with_variable(group_var(multi=False))
         .annotation(rebal_ann).annotation(storm_ann).annotation(timeout_ann))

    d = d.with_row(row("Now"))
    d = d.with_panel(stat_panel(
        "State", help_of("kafka_consumergroup_state"),
        [q(f"max {by('state')} ({state}) == 1", legend("{{state}}"), instant=True)],
        text_mode=cm.BigValueTextMode.NAME, w=3))
    d = d.with_panel(stat_panel(
        "Type", "The group's type: classic, consumer (KIP-848), streams (KIP-1071) or share (KIP-932), from its "
        "members (the group_type label of every group series).",
        [q(f"max {by('group_type')} ({generation})", legend("{{group_type}}"), instant=True)],
        text_mode=cm.BigValueTextMode.NAME, w=3))
    d = d.with_panel(stat_panel(
        "Generation", help_of("kafka_consumergroup_generation"), [q(f"max {by()} ({generation})", legend())], w=3,
        graph=True))
    d = d.with_panel(stat_panel(
        "Members", help_of("kafka_consumergroup_members"), [q(f"max {by()} ({members})", legend())], w=3, graph=True))
    d = d.with_panel(stat_panel(
        "Assignor", help_of("kafka_consumergroup_protocol_info"),
        [q(f"max {by('protocol')} ({protocol})", legend("{{protocol}}"), instant=True)],
        text_mode=cm.BigValueTextMode.NAME, w=3))
    d = d.with_panel(stat_panel(
        "Storm", help_of("kafka_consumergroup_storm"), [q(f"max {by()} ({storm})", legend(), instant=True)], w=3,
        mappings=value_map({"0": ("no", "green"), "1": ("STORM", "red")})))
    d = d.with_panel(stat_panel(
        "Storm looks like", help_of("kafka_consumergroup_storm_pattern"),
        [q(f"max {by('pattern')} ({storm_pattern}) == 1", legend("{{pattern}}"), instant=True)],
        text_mode=cm.BigValueTextMode.NAME, w=3).no_value("no storm"))
    d = d.with_panel(stat_panel(
        "Rebalancing for", "Time since the current rebalance started (empty when the group is not rebalancing). "
        + help_of("kafka_consumergroup_last_rebalance_start_timestamp_seconds"),
        [q(f"(time() - max {by()} ({started_ts})) and {on_kc} (max {by()} ({in_progress}) == 1)", legend(),
           instant=True)], unit="s", w=3,
        thresholds=[(None, "green"), (30, "orange"), (300, "red")]).no_value("not rebalancing"))
    d = d.with_panel(stat_panel(
        "Last rebalance", help_of("kafka_consumergroup_last_rebalance_timestamp_seconds"),
        [q(f"max {by()} ({last_ts}) * 1000", legend(), instant=True)], unit="dateTimeFromNow", w=3))
    d = d.with_panel(stat_panel(
        "Coordinator", help_of("kafka_consumergroup_coordinator_info"),
        [q(f"max {by('partition', 'broker')} ({coordinator})", legend("partition {{partition}}, broker {{broker}}"),
           instant=True)],
        text_mode=cm.BigValueTextMode.NAME, w=3))

    d = d.with_row(row("Generations"))
    d = d.with_panel(ts_panel(
        "Generation timeline", "The group's generation id; each step is a completed rebalance.",
        [q(f"max {by()} ({generation})", legend("generation"))], step=True, min_val=None, w=12, h=7))
    d = d.with_panel(timeline_panel(
        "Rebalancing and storms", "Periods in a rebalance (PreparingRebalance/CompletingRebalance) and in a storm.",
        [q(f"max {by()} ({in_progress})", legend("rebalancing")), q(f"max {by()} ({storm})", legend("storm"))],
        mappings=value_map({"0": ("no", "transparent"), "1": ("yes", "red")}), w=12, h=7))
    d = d.with_panel(ts_panel(
        "Rebalance duration", help_of("kafka_consumergroup_rebalance_duration_seconds"),
        [q(f"histogram_quantile(0.5, sum {by('le')} (rate({_bucket_sel()}[$__rate_interval])))", legend("p50")),
         q(f"histogram_quantile(0.99, sum {by('le')} (rate({_bucket_sel()}[$__rate_interval])))", legend("p99")),
         q(f"sum {by()} (rate({dur_sum}[$__rate_interval])) / sum {by()} (rate({dur_count}[$__rate_interval]))",
           legend("mean"))],
        unit="s", w=12, h=8))
    d = d.with_panel(heatmap_panel(
        "Rebalance duration distribution", "Completed rebalances per duration bucket (of the selected Kafka "
        "clusters together: pick one cluster to see one group's).",
        [q(f"sum by (le) (increase({_bucket_sel()}[$__rate_interval]))", "{{le}}", fmt="heatmap")],
        w=12, h=8))

    d = d.with_row(row("Causes"))
    d = d.with_panel(ts_panel(
        "Rebalances by cause", help_of("kafka_consumergroup_rebalances_total"),
        [q(f"sum {by('cause')} (increase({rebalances}[$__rate_interval]))", legend("{{cause}}"))],
        bars=True, stack=True, w=10, h=8))
    d = d.with_panel(pie_panel(
        "Causes over the range", "Share of each cause among the rebalances of the dashboard's time range.",
        [q(f"sum {by('cause')} (increase({rebalances}[$__range])) > 0", legend("{{cause}}"), instant=True)],
        w=6, h=8))
    d = d.with_panel(stat_panel(
        "Rebalances and storms over the range", "Generations completed and storms started in the time range.",
        [q(f"round(sum {by()} (increase({gens}[$__range])))", legend("rebalances"), instant=True),
         q(f"round(sum {by()} (increase({storms}[$__range]))) or vector(0)", legend("storms"), instant=True),
         q(f"round(sum {by()} (increase({disagreements}[$__range]))) or vector(0)", legend("broker disagrees"),
           instant=True)],
        text_mode=cm.BigValueTextMode.VALUE_AND_NAME, w=8, h=8))
    d = d.with_panel(table_panel(
        "Timeouts by member and host, over the range", help_of("kafka_consumergroup_member_timeouts_total"),
        [q(f"sum {by('client_id', 'host', 'timeout')} (increase({timeouts}[$__range])) > 0", instant=True,
           fmt="table")],
        rename={"Value": "timeouts"}, sort_by="timeouts", w=12, h=8,
        thresholds=[(None, "green"), (1, "orange"), (3, "red")]))
    d = d.with_panel(ts_panel(
        "Member timeouts", "Members removed for missing their session timeout or max.poll.interval.ms.",
        [q(f"sum {by('timeout', 'client_id', 'host')} (increase({timeouts}[$__rate_interval]))",
           legend("{{timeout}}: {{client_id}} on {{host}}"))],
        bars=True, stack=True, w=12, h=8))

    d = d.with_row(row("Members"))
    d = d.with_panel(ts_panel(
        "Members", help_of("kafka_consumergroup_members"), [q(f"max {by()} ({members})", legend("members"))],
        step=True, w=12, h=8))
    d = d.with_panel(ts_panel(
        "Heartbeat-gap ratio", help_of("kafka_consumergroup_heartbeat_gap_ratio") +
        " The alert KafkaConsumerGroupHeartbeatGapHigh fires above 0.8.",
        [q(f"max {by()} ({gap})", legend("largest gap / session timeout"))], unit="percentunit", max_val=1.2,
        w=12, h=8, thresholds=[(None, "green"), (0.8, "orange"), (1, "red")]))
    d = d.with_panel(ts_panel(
        "Poll-gap ratio", help_of("kafka_consumergroup_poll_gap_ratio") +
        " Members whose polls are known: instrumented consumers, and Java consumers through the broker plugin or "
        "the client reporter.",
        [q(f"max {by()} ({poll_gap})", legend("time since last poll / max.poll.interval.ms"))], unit="percentunit",
        max_val=1.2, w=12, h=8, thresholds=[(None, "green"), (0.8, "orange"), (1, "red")]))
    d = d.with_panel(table_panel(
        "Members at risk", help_of("kafka_consumergroup_member_at_risk_deadline_timestamp_seconds") +
        " Seconds left: to the deadline (below 0: past it, the timeout not seen yet); the nearest first.",
        [q(f"max {by('member_id', 'client_id', 'host', 'risk')} ({at_risk}) - time()", instant=True, fmt="table")],
        unit="s", rename={"Value": "seconds left"}, sort_by="seconds left", ascending=True, w=12, h=8,
        thresholds=[(None, "red"), (5, "orange"), (15, "green")]))
    own = (" As each client reports itself (KIP-714's standard metrics, e.g. confluent-kafka's): not evidence of "
           "a member's heartbeats or polls.")
    d = d.with_panel(ts_panel(
        "Clients' own rebalance latency", help_of("kafka_consumergroup_client_rebalance_latency_max_seconds") + own,
        [q(f"max {by('client_id')} ({client_lat_max})", legend("{{client_id}} max")),
         q(f"max {by('client_id')} ({client_lat_avg})", legend("{{client_id}} avg"))], unit="s", w=12, h=8))
    d = d.with_panel(ts_panel(
        "Clients' own rebalances", help_of("kafka_consumergroup_client_rebalances_total") + " Time: " +
        help_of("kafka_consumergroup_client_rebalance_latency_seconds_total") + own,
        [q(f"sum {by('client_id')} (increase({client_rebalances}[$__rate_interval]))",
           legend("{{client_id}} rebalances")),
         q(f"sum {by('client_id')} (increase({client_lat_total}[$__rate_interval]))", legend("{{client_id}} seconds"))],
        bars=True, w=12, h=8))
    d = d.with_panel(ts_panel(
        "Clients' own poll idle ratio", help_of("kafka_consumergroup_client_poll_idle_ratio") + own,
        [q(f"min {by('client_id')} ({client_idle})", legend("{{client_id}}"))], unit="percentunit", max_val=1, w=12,
        h=8))

    d = d.with_row(row("Assignment"))
    d = d.with_panel(ts_panel(
        "Expected vs actual assignment",
        "Partitions assigned differently from what the group's assignor computes, and partitions no member "
        "owns (latest generation).",
        [q(f"max {by()} ({mismatched})", legend("mismatched")), q(f"max {by()} ({unassigned})", legend("unassigned"))],
        step=True, w=8, h=8))
    d = d.with_panel(ts_panel(
        "Partitions moved", help_of("kafka_consumergroup_partitions_moved_total"),
        [q(f"sum {by()} (increase({moved}[$__rate_interval]))", legend("moved"))], bars=True, w=8, h=8))
    d = d.with_panel(ts_panel(
        "Needless moves and imbalance",
        help_of("kafka_consumergroup_needless_moves") + " Imbalance: " +
        help_of("kafka_consumergroup_assignment_imbalance"),
        [q(f"max {by()} ({needless})", legend("needless moves")), q(f"max {by()} ({imbalance})", legend("imbalance"))],
        step=True, w=8, h=8))

    d = d.with_row(row("Streams group tasks"))
    d = d.with_panel(ts_panel(
        "Tasks per member", help_of("kafka_streamsgroup_member_tasks") + " Empty for a group that is no streams group.",
        [q(f"max {by('client_id', 'kind')} ({member_tasks})", legend("{{client_id}} {{kind}}"))], step=True, w=8,
        h=8))
    d = d.with_panel(ts_panel(
        "Tasks moved", help_of("kafka_streamsgroup_tasks_moved_total"),
        [q(f"sum {by('scope')} (increase({tasks_moved}[$__rate_interval]))", legend("{{scope}}"))], bars=True,
        stack=True, w=8, h=8))
    d = d.with_panel(ts_panel(
        "Mismatched tasks", help_of("kafka_streamsgroup_assignment_mismatched_tasks"),
        [q(f"max {by()} ({mismatched_tasks})", legend("mismatched"))], step=True, w=8, h=8))

    d = d.with_row(row("Lag"))
    d = d.with_panel(ts_panel(
        "Lag (offsets)", help_of("kafka_consumergroup_lag") + " " + GRANULARITY_NOTE["Lag (offsets)"],
        [q(f"sum {by('topic')} ({lag})", legend("topic {{topic}}")), q(f"max {by()} ({lag_sum})", legend("total"))],
        w=8, h=8))
    d = d.with_panel(ts_panel(
        "Lag (seconds)", help_of("kafka_consumergroup_lag_seconds"), [q(f"max {by()} ({lag_s})", legend("time lag"))],
        unit="s", w=8, h=8))
    d = d.with_panel(ts_panel(
        "Lag growth since the last rebalance started", help_of("kafka_consumergroup_lag_sum_at_rebalance_start"),
        [q(f"max {by()} ({lag_sum}) - max {by()} ({lag_at_start})", legend("growth"))], min_val=None, w=8, h=8))
    tp = by("topic", "partition")
    d = d.with_panel(table_panel(
        "Lag by topic and partition", "Current lag, committed offset and log-end offset of each partition of the "
        "group. " + GRANULARITY_NOTE["Lag by topic and partition"],
        [q(f"max {tp} ({lag})", instant=True, fmt="table"),
         q(f"max {tp} ({committed})", instant=True, fmt="table"),
         q(f"max {tp} ({end_offset}) and on (kafka_cluster, topic, partition) max {tp} ({lag})",
           instant=True, fmt="table")],
        rename={"Value #A": "lag", "Value #B": "committed offset", "Value #C": "log-end offset"}, sort_by="lag",
        w=24, h=9))
    return render(d, annotations)
