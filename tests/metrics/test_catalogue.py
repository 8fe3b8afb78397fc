import re

import pytest

from rebalance_monitor.metrics.catalogue import CATALOGUE, MetricSpec, REBALANCE_DURATION_BUCKETS, by_name

FIXED = """kafka_consumergroup_rebalances_total group,group_type,cause counter
kafka_consumergroup_generations_total group,group_type counter
kafka_consumergroup_rebalance_duration_seconds group,group_type histogram
kafka_consumergroup_generation group,group_type gauge
kafka_consumergroup_state group,group_type,state gauge
kafka_consumergroup_members group,group_type gauge
kafka_consumergroup_protocol_info group,group_type,protocol info
kafka_consumergroup_rebalance_in_progress group,group_type gauge
kafka_consumergroup_last_rebalance_timestamp_seconds group,group_type gauge
kafka_consumergroup_partitions_moved_total group,group_type counter
kafka_consumergroup_assignment_mismatched_partitions group,group_type gauge
kafka_consumergroup_unassigned_partitions group,group_type gauge
kafka_consumergroup_assignment_imbalance group,group_type gauge
kafka_consumergroup_needless_moves group,group_type gauge
kafka_consumergroup_member_timeouts_total group,group_type,timeout,client_id,host counter
kafka_consumergroup_heartbeat_gap_ratio group,group_type gauge
kafka_consumergroup_poll_gap_ratio group,group_type gauge
kafka_consumergroup_storm group,group_type gauge
kafka_consumergroup_storms_total group,group_type counter
kafka_consumergroup_lag group,group_type,topic,partition gauge
kafka_consumergroup_lag_sum group,group_type gauge
kafka_consumergroup_lag_seconds group,group_type gauge
kafka_consumergroup_committed_offset group,group_type,topic,partition gauge
kafka_topic_partition_end_offset topic,partition gauge
kafka_consumergroup_coordinator_info group,group_type,partition,broker info
rebalance_monitor_up - gauge
rebalance_monitor_ready - gauge
rebalance_monitor_events_read_total source counter
rebalance_monitor_rejects_total reason counter
rebalance_monitor_input_notes_total reason counter
rebalance_monitor_batches_total - counter
rebalance_monitor_batch_duration_seconds - histogram
rebalance_monitor_state_rows - gauge
rebalance_monitor_watermark_delay_seconds - gauge
rebalance_monitor_last_batch_timestamp_seconds - gauge
rebalance_monitor_groups_tracked - gauge
rebalance_monitor_groups_dropped_total reason counter
rebalance_monitor_output_records_total kind counter
rebalance_monitor_sink_errors_total sink counter"""


@pytest.mark.parametrize("line", FIXED.splitlines())
def test_fixed_names_labels_and_types(line):
    name, labels, type_ = line.split()
    spec = by_name(name)
    assert spec.type == type_
    assert spec.labels == (() if labels == "-" else tuple(labels.split(",")))


def test_catalogue_is_well_formed():
    names = [m.name for m in CATALOGUE]
    assert len(names) == len(set(names))
    for m in CATALOGUE:
        assert re.fullmatch(r"[a-z_][a-z0-9_]*", m.name)
        assert m.help and "\n" not in m.help
        if m.type == "histogram":
            assert list(m.buckets) == sorted(m.buckets)
        if m.name.startswith("kafka_consumergroup_"):
            assert m.labels[0] == "group"


def test_rebalance_buckets_span_100ms_to_10min():
    assert REBALANCE_DURATION_BUCKETS[0] == 0.1 and REBALANCE_DURATION_BUCKETS[-1] == 600.0
    assert by_name("kafka_consumergroup_rebalance_duration_seconds").buckets == REBALANCE_DURATION_BUCKETS


def test_spec_validation():
    with pytest.raises(ValueError):
        MetricSpec("x_count", "counter", "h")
    with pytest.raises(ValueError):
        MetricSpec("x", "histogram", "h")
    with pytest.raises(ValueError):
        MetricSpec("x", "summary", "h")
    with pytest.raises(KeyError):
        by_name("no_such_metric")
