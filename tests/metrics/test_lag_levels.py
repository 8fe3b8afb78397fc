"""lag.granularity: the per-partition offset families summed per topic or per group, with the catalogue's labels."""
from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rebalance_monitor.metrics.catalogue import CATALOGUE, LAG_GRANULARITIES, by_name
from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter
from rebalance_monitor.metrics.updater import MetricsUpdater

T0 = 1_700_000_000_000
ROLLED = [m for m in CATALOGUE if m.rollup]


def _records(round_: int = 0) -> list[dict]:
    """Group "orders" on two topics (3 + 2 partitions; payments-1 has no end offset yet), group "audit" on one."""
    bump = 100 * round_
    return [
        {"kind": "end_offsets", "group": "", "ts": T0 - 30_000 + round_,
         "offsets": [["orders", 0, 1000 + bump], ["orders", 1, 500 + bump], ["orders", 2, 70 + bump],
                     ["payments", 0, 40 + bump], ["audit-log", 0, 10 + bump]]},
        {"kind": "offsets_committed", "group": "orders", "ts": T0 - 20_000,
         "offsets": [["orders", 0, 990], ["orders", 1, 500], ["orders", 2, 80], ["payments", 0, 30],
                     ["payments", 1, 7]]},
        {"kind": "offsets_committed", "group": "audit", "ts": T0 - 20_000, "offsets": [["audit-log", 0, 4]]},
        {"kind": "generation", "group": "orders", "generation": 3, "completed_ms": T0 - 10_000},
        {"kind": "end_offsets", "group": "", "ts": T0 + round_,
         "offsets": [["orders", 0, 1100 + bump], ["orders", 1, 500 + bump], ["orders", 2, 70 + bump],
                     ["payments", 0, 45 + bump], ["audit-log", 0, 10 + bump]]},
    ]


def _samples(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        out.setdefault(fam.name, []).extend(fam.samples)
    return out


def _exposition(granularity: str, records=None) -> dict[str, list]:
    u = MetricsUpdater(clock=lambda: T0 / 1000, lag_granularity=granularity)
    u.apply(records or _records(), now_ms=T0)
    return _samples(u.render())


def _values(samples, *labels) -> dict[tuple, float]:
    return {tuple(s.labels.get(lb) for lb in labels): s.value for s in samples}


@pytest.mark.parametrize("granularity", LAG_GRANULARITIES)
def test_each_level_exports_the_catalogues_labels(granularity):
    fams = _exposition(granularity)
    for spec in ROLLED:
        samples = fams.get(spec.name, [])
        if not spec.exported_at(granularity):
            assert samples == [], f"{spec.name} is not exported at {granularity}"
            continue
        assert samples, spec.name
        assert {tuple(s.labels) for s in samples} == {spec.labels_at(granularity)}, spec.name


def test_topic_and_group_levels_are_the_sums_of_the_partition_level():
    part, topic, group = (_exposition(g) for g in LAG_GRANULARITIES)
    lag = _values(part["kafka_consumergroup_lag"], "group", "topic", "partition")
    # max(0, end - committed); payments-1 has no end offset: no lag line
    assert lag == {("orders", "orders", "0"): 110, ("orders", "orders", "1"): 0, ("orders", "orders", "2"): 0,
                   ("orders", "payments", "0"): 15, ("audit", "audit-log", "0"): 6}
    assert _values(topic["kafka_consumergroup_lag"], "group", "topic") == {
        ("orders", "orders"): 110, ("orders", "payments"): 15, ("audit", "audit-log"): 6}
    assert _values(group["kafka_consumergroup_lag"], "group") == {("orders",): 125, ("audit",): 6}
    assert _values(topic["kafka_consumergroup_committed_offset"], "group", "topic") == {
        ("orders", "orders"): 990 + 500 + 80, ("orders", "payments"): 37, ("audit", "audit-log"): 4}
    assert _values(group["kafka_consumergroup_committed_offset"], "group") == {
        ("orders",): 990 + 500 + 80 + 37, ("audit",): 4}
    assert _values(topic["kafka_topic_partition_end_offset"], "topic") == {
        ("orders",): 1100 + 500 + 70, ("payments",): 45, ("audit-log",): 10}
    # the per-group families do not depend on the level
    for name in ("kafka_consumergroup_lag_sum", "kafka_consumergroup_lag_seconds"):
        assert _values(part[name], "group") == _values(topic[name], "group") == _values(group[name], "group")
    assert _values(group["kafka_consumergroup_lag_sum"], "group") == {("orders",): 125, ("audit",): 6}
    # fewer series at each coarser level
    counts = [sum(len(f.get(spec.name, [])) for spec in ROLLED) for f in (part, topic, group)]
    assert counts == [5 + 6 + 5, 3 + 3 + 3, 2 + 2 + 0]


@pytest.mark.parametrize("granularity", ("topic", "group"))
def test_summed_lines_follow_new_end_offsets_and_commits(granularity):
    u = MetricsUpdater(clock=lambda: T0 / 1000, lag_granularity=granularity)
    u.apply(_records(), now_ms=T0)
    u.render()  # cache the groups' lines
    u.apply([{"kind": "end_offsets", "group": "", "ts": T0 + 1000, "offsets": [["orders", 1, 650]]}], now_ms=T0 + 1000)
    u.apply([{"kind": "offsets_committed", "group": "audit", "ts": T0 + 1000, "offsets": [["audit-log", 0, 9]]}],
            now_ms=T0 + 1000)
    fams = _samples(u.render())
    lag = {k[0]: v for k, v in _values(fams["kafka_consumergroup_lag"], "group").items() if k[0] == "audit"}
    assert lag == {"audit": 1}
    if granularity == "topic":
        assert _values(fams["kafka_consumergroup_lag"], "group", "topic")[("orders", "orders")] == 110 + 150
        assert _values(fams["kafka_topic_partition_end_offset"], "topic")[("orders",)] == 1100 + 650 + 70
    else:
        assert _values(fams["kafka_consumergroup_lag"], "group")[("orders",)] == 125 + 150
        assert "kafka_topic_partition_end_offset" not in fams or not fams["kafka_topic_partition_end_offset"]


def test_unknown_granularity_fails_naming_the_allowed_values():
    with pytest.raises(ValueError, match="allowed values: partition, topic, group"):
        MetricsUpdater(lag_granularity="broker")
    with pytest.raises(ValueError, match="allowed values: partition, topic, group"):
        by_name("kafka_consumergroup_lag").labels_at("cluster")


def test_the_exporter_serves_the_configured_level():
    exp = MetricsExporter(ExporterSettings(port=0, lag_granularity="topic")).start()
    try:
        exp.updater.apply(_records())  # now: the exporter expires groups by the wall clock
        with urllib.request.urlopen(exp.url + "/metrics", timeout=10) as r:
            fams = _samples(r.read().decode())
    finally:
        exp.stop()
    assert {tuple(s.labels) for s in fams["kafka_consumergroup_lag"]} == {("kafka_cluster", "group", "group_type", "topic")}
