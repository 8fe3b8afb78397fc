"""The rebalance monitor's own health: liveness, the Kafka clusters it watches, input, micro-batches, state, output
and sinks. Every series carries the Kafka cluster it belongs to (kafka_cluster); the per-cluster panels break the
input down by it."""
from __future__ import annotations

from .common import (INST, UID_MONITOR, base_dashboard, cluster_var, datasource_var, help_of, in_catalogue,
                     instance_var, kafka_cluster_var, metric, q, render, row, sel, stat_panel, timeline_panel, ts_panel,
                     value_map)

TITLE = "Kafka rebalances: monitor health"


def build() -> str:
    up = sel("rebalance_monitor_up", INST)
    ready = sel("rebalance_monitor_ready", INST)
    read = sel("rebalance_monitor_events_read_total", INST)
    rejects = sel("rebalance_monitor_rejects_total", INST)
    notes = sel("rebalance_monitor_input_notes_total", INST)
    batches = sel("rebalance_monitor_batches_total", INST)
    bucket = sel(metric("rebalance_monitor_batch_duration_seconds_bucket"), INST)
    rows = sel("rebalance_monitor_state_rows", INST)
    wm = sel("rebalance_monitor_watermark_delay_seconds", INST)
    last = sel("rebalance_monitor_last_batch_timestamp_seconds", INST)
    tracked = sel("rebalance_monitor_groups_tracked", INST)
    dropped = sel("rebalance_monitor_groups_dropped_total", INST)
    out = sel("rebalance_monitor_output_records_total", INST)
    sink_errors = sel("rebalance_monitor_sink_errors_total", INST)
    broker_facts = sel("rebalance_monitor_broker_facts_errors_total", INST)
    yes_no = value_map({"0": ("no", "red"), "1": ("yes", "green")})

    d = (base_dashboard(TITLE, UID_MONITOR,
                        "Health of the rebalance monitor (the Spark streaming job and its exporter): is it up, "
                        "is it keeping up with its input, what does it reject and emit.")
         .with_variable(datasource_var()).with_variable(cluster_var()).with_variable(kafka_cluster_var())
         .with_variable(instance_var()))

    d = d.with_row(row("Status"))
    d = d.with_panel(stat_panel("Up", help_of("rebalance_monitor_up"), [q(f"min({up})", instant=True)],
                                mappings=yes_no, w=3))
    d = d.with_panel(stat_panel("Ready", help_of("rebalance_monitor_ready"), [q(f"min({ready})", instant=True)],
                                mappings=yes_no, w=3))
    d = d.with_panel(stat_panel(
        "Last batch age", "Seconds since the last micro-batch ended (alert RebalanceMonitorStalled: 10 minutes).",
        [q(f"time() - max({last})", instant=True)], unit="s", w=4,
        thresholds=[(None, "green"), (120, "orange"), (600, "red")]))
    d = d.with_panel(stat_panel("Groups tracked", help_of("rebalance_monitor_groups_tracked"),
                                [q(f"sum({tracked})")], w=4, graph=True))
    d = d.with_panel(stat_panel("State rows", help_of("rebalance_monitor_state_rows"), [q(f"sum({rows})")],
                                w=5, graph=True))
    d = d.with_panel(stat_panel("Watermark delay", help_of("rebalance_monitor_watermark_delay_seconds"),
                                [q(f"max({wm})")], unit="s", w=5, graph=True))

    d = _kafka_clusters(d)

    d = d.with_row(row("Input"))
    d = d.with_panel(ts_panel("Records read", help_of("rebalance_monitor_events_read_total") + " Per second.",
                              [q(f"sum by (kafka_cluster, source) (rate({read}[$__rate_interval]))",
                                 "{{kafka_cluster}}: {{source}}")],
                              unit="rps", w=12, h=8))
    d = d.with_panel(ts_panel("Rejected records", help_of("rebalance_monitor_rejects_total") + " Per second.",
                              [q(f"sum by (kafka_cluster, reason) (rate({rejects}[$__rate_interval]))",
                                 "{{kafka_cluster}}: {{reason}}")],
                              unit="rps", w=12, h=8, bars=True, stack=True))
    d = d.with_panel(ts_panel("Records used with a caveat", help_of("rebalance_monitor_input_notes_total") +
                              " Per second.",
                              [q(f"sum by (kafka_cluster, reason) (rate({notes}[$__rate_interval]))",
                                 "{{kafka_cluster}}: {{reason}}")],
                              unit="rps", w=12, h=8, bars=True, stack=True))

    d = d.with_row(row("Micro-batches"))
    d = d.with_panel(ts_panel("Batches per minute", help_of("rebalance_monitor_batches_total"),
                              [q(f"sum(rate({batches}[$__rate_interval])) * 60", "batches/min")], w=8, h=8))
    d = d.with_panel(ts_panel(
        "Batch duration", help_of("rebalance_monitor_batch_duration_seconds"),
        [q(f"histogram_quantile(0.5, sum by (le) (rate({bucket}[$__rate_interval])))", "p50"),
         q(f"histogram_quantile(0.99, sum by (le) (rate({bucket}[$__rate_interval])))", "p99")],
        unit="s", w=8, h=8))
    d = d.with_panel(ts_panel("Watermark delay", help_of("rebalance_monitor_watermark_delay_seconds"),
                              [q(f"max by (instance) ({wm})", "{{instance}}")], unit="s", w=8, h=8))

    d = d.with_row(row("State and output"))
    d = d.with_panel(ts_panel("State rows", help_of("rebalance_monitor_state_rows"),
                              [q(f"sum by (instance) ({rows})", "{{instance}}")], w=8, h=8))
    d = d.with_panel(ts_panel(
        "Groups tracked and dropped", help_of("rebalance_monitor_groups_dropped_total"),
        [q(f"sum by (kafka_cluster) ({tracked})", "{{kafka_cluster}}: tracked"),
         q(f"sum by (kafka_cluster, reason) (increase({dropped}[$__rate_interval]))",
           "{{kafka_cluster}}: dropped: {{reason}}")], w=8, h=8))
    d = d.with_panel(ts_panel("Output records", help_of("rebalance_monitor_output_records_total") + " Per second.",
                              [q(f"sum by (kind) (rate({out}[$__rate_interval]))", "{{kind}}")],
                              unit="rps", w=8, h=8, stack=True))
    d = d.with_panel(ts_panel("Sink errors", help_of("rebalance_monitor_sink_errors_total"),
                              [q(f"sum by (sink) (increase({sink_errors}[$__rate_interval]))", "{{sink}}")],
                              w=12, h=6, bars=True, thresholds=[(None, "green"), (1, "red")]))
    d = d.with_panel(ts_panel("Asking the brokers", help_of("rebalance_monitor_broker_facts_errors_total"),
                              [q(f"sum by (reason) (increase({broker_facts}[$__rate_interval]))", "{{reason}}")],
                              w=12, h=6, bars=True, thresholds=[(None, "green"), (1, "orange")]))
    return render(d)


def _kafka_clusters(d):
    """Per Kafka cluster: can the monitor reach it, and how long ago did it last read from it. The two families
    come with the exporter's clusters (issue 43); a catalogue without them leaves the row out."""
    up_name = "rebalance_monitor_kafka_cluster_up"
    read_name = "rebalance_monitor_kafka_cluster_last_read_timestamp_seconds"
    if not (in_catalogue(up_name) and in_catalogue(read_name)):
        return d
    up, last_read = sel(up_name, INST), sel(read_name, INST)
    d = d.with_row(row("Kafka clusters"))
    d = d.with_panel(timeline_panel(
        "Kafka cluster reachable", help_of(up_name) + " Alert RebalanceMonitorKafkaClusterDown: unreachable for 5 "
        "minutes.",
        [q(f"min by (kafka_cluster) ({up})", "{{kafka_cluster}}")],
        mappings=value_map({"0": ("unreachable", "red"), "1": ("reachable", "green")}), w=12, h=8))
    d = d.with_panel(ts_panel(
        "Age of the last read", help_of(read_name) + " Seconds since then, per cluster (alert "
        "RebalanceMonitorKafkaClusterReadStale: over 10 minutes while the cluster is reachable).",
        [q(f"time() - max by (kafka_cluster) ({last_read})", "{{kafka_cluster}}")], unit="s", w=12, h=8,
        thresholds=[(None, "green"), (120, "orange"), (600, "red")]))
    return d
