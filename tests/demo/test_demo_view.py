"""The demo's lag column reads the exporter's exposition (no broker needed)."""
from __future__ import annotations

from rebalance_monitor.demo.view import lag_by_group
from rebalance_monitor.metrics.docs import T0, sample_records
from rebalance_monitor.metrics.updater import MetricsUpdater


def test_lag_by_group_reads_the_lag_sum_and_time_lag_families():
    u = MetricsUpdater(clock=lambda: T0 / 1000)
    u.apply(sample_records(), now_ms=T0)
    u.apply([{"kind": "offsets_committed", "group": "fresh", "ts": T0, "offsets": [["orders", 0, 1590]]}], now_ms=T0)
    lag = lag_by_group(u)
    assert lag["orders-service"][0] == 450
    assert lag["orders-service"][1] is not None and lag["orders-service"][1] > 0
    assert lag["fresh"][0] == 10
