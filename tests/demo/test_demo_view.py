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
    assert lag[("default", "orders-service")][0] == 450
    assert lag[("default", "orders-service")][1] is not None and lag[("default", "orders-service")][1] > 0
    assert lag[("default", "fresh")][0] == 10


def test_the_same_group_on_two_clusters_is_two_rows_and_its_lines_name_the_other_cluster():
    from rebalance_monitor.demo.view import GroupBoard, render

    board = GroupBoard(home="main")
    records = [r for r in sample_records() if r.get("group") == "orders-service"]
    board.on_records(0, [dict(r, kafka_cluster="main") for r in records], [])
    board.on_records(1, [dict(r, kafka_cluster="second") for r in records], [])
    assert sorted(board.groups) == [("main", "orders-service"), ("second", "orders-service")]
    lines = board.take_new()
    assert any(" of orders-service:" in line for line in lines)
    assert any(" of orders-service@second:" in line for line in lines)
    board.set_lag({("second", "orders-service"): (7, 1.5)})
    assert board.groups[("second", "orders-service")]["lag"] == (7, 1.5)
    assert board.groups[("main", "orders-service")]["lag"] is None
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(render(board, "http://x", "steady"))
    rows = [line for line in console.export_text().splitlines() if line.startswith("│ orders-service ")]
    assert len(rows) == 2 and any("second" in r for r in rows) and any("main" in r for r in rows)
