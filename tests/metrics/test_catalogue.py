import re

import pytest

from rebalance_monitor.metrics.catalogue import (CATALOGUE, CLUSTER_LABEL, GROUP_KEY, MetricSpec,
                                                 REBALANCE_DURATION_BUCKETS, by_name)

FIXED = """kafka_consumergroup_rebalances_total kafka_cluster,group,group_type,cause counter
kafka_consumergroup_generations_total kafka_cluster,group,group_type counter
kafka_consumergroup_rebalance_duration_seconds kafka_cluster,group,group_type histogram
kafka_consumergroup_generation kafka_cluster,group,group_type gauge
kafka_consumergroup_state kafka_cluster,group,group_type,state gauge
kafka_consumergroup_members kafka_cluster,group,group_type gauge
kafka_consumergroup_protocol_info kafka_cluster,group,group_type,protocol info
kafka_consumergroup_rebalance_in_progress kafka_cluster,group,group_type gauge
kafka_consumergroup_last_rebalance_timestamp_seconds kafka_cluster,group,group_type gauge
kafka_consumergroup_partitions_moved_total kafka_cluster,group,group_type counter
kafka_consumergroup_assignment_mismatched_partitions kafka_cluster,group,group_type gauge
kafka_consumergroup_unassigned_partitions kafka_cluster,group,group_type gauge
kafka_consumergroup_assignment_imbalance kafka_cluster,group,group_type gauge
kafka_consumergroup_needless_moves kafka_cluster,group,group_type gauge
kafka_consumergroup_member_timeouts_total kafka_cluster,group,group_type,timeout,client_id,host counter
kafka_consumergroup_heartbeat_gap_ratio kafka_cluster,group,group_type gauge
kafka_consumergroup_poll_gap_ratio kafka_cluster,group,group_type gauge
kafka_consumergroup_storm kafka_cluster,group,group_type gauge
kafka_consumergroup_storms_total kafka_cluster,group,group_type counter
kafka_consumergroup_lag kafka_cluster,group,group_type,topic,partition gauge
kafka_consumergroup_lag_sum kafka_cluster,group,group_type gauge
kafka_consumergroup_lag_seconds kafka_cluster,group,group_type gauge
kafka_consumergroup_committed_offset kafka_cluster,group,group_type,topic,partition gauge
kafka_topic_partition_end_offset kafka_cluster,topic,partition gauge
kafka_consumergroup_coordinator_info kafka_cluster,group,group_type,partition,broker info
rebalance_monitor_up kafka_cluster gauge
rebalance_monitor_ready kafka_cluster gauge
rebalance_monitor_kafka_cluster_up kafka_cluster gauge
rebalance_monitor_kafka_cluster_last_read_timestamp_seconds kafka_cluster gauge
rebalance_monitor_events_read_total kafka_cluster,source counter
rebalance_monitor_rejects_total kafka_cluster,reason counter
rebalance_monitor_input_notes_total kafka_cluster,reason counter
rebalance_monitor_batches_total kafka_cluster counter
rebalance_monitor_batch_duration_seconds kafka_cluster histogram
rebalance_monitor_state_rows kafka_cluster gauge
rebalance_monitor_watermark_delay_seconds kafka_cluster gauge
rebalance_monitor_last_batch_timestamp_seconds kafka_cluster gauge
rebalance_monitor_groups_tracked kafka_cluster gauge
rebalance_monitor_groups_dropped_total kafka_cluster,reason counter
rebalance_monitor_output_records_total kafka_cluster,kind counter
rebalance_monitor_sink_errors_total kafka_cluster,sink counter"""


@pytest.mark.parametrize("line", FIXED.splitlines())
def test_fixed_names_labels_and_types(line):
    name, labels, type_ = line.split()
    spec = by_name(name)
    assert spec.type == type_
    assert spec.labels == tuple(labels.split(","))


def test_catalogue_is_well_formed():
    names = [m.name for m in CATALOGUE]
    assert len(names) == len(set(names))
    for m in CATALOGUE:
        assert re.fullmatch(r"[a-z_][a-z0-9_]*", m.name)
        assert m.help and "\n" not in m.help
        if m.type == "histogram":
            assert list(m.buckets) == sorted(m.buckets)
        assert m.labels[0] == "kafka_cluster", m.name          # every family is of a Kafka cluster
        if m.name.startswith("kafka_consumergroup_"):
            assert m.labels[:3] == ("kafka_cluster", "group", "group_type"), m.name


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


def test_every_family_starts_with_the_kafka_cluster_label():
    assert CLUSTER_LABEL == "kafka_cluster" and GROUP_KEY == ("kafka_cluster", "group", "group_type")
    assert all(m.labels[0] == CLUSTER_LABEL for m in CATALOGUE)
    MetricSpec("x", "gauge", "h", (CLUSTER_LABEL, "topic"))
    with pytest.raises(ValueError, match="starts with the label kafka_cluster"):
        MetricSpec("x", "gauge", "h")
    with pytest.raises(ValueError, match="starts with the label kafka_cluster"):
        MetricSpec("x", "gauge", "h", ("topic", CLUSTER_LABEL))
    with pytest.raises(ValueError, match="a group's family starts with"):
        MetricSpec("x", "gauge", "h", (CLUSTER_LABEL, "group"))
