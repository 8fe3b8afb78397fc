"""The demo's line mode (`rebalance-monitor demo --no-live`, what a pipe or CI log shows): one line per generation
with its cause, per member timeout and per storm, and one per lag change; at clock times, never epoch
milliseconds. The whole demo on Apache Kafka (broker, Spark, workloads, Ctrl-C leaving nothing running) runs
once, in a real terminal: tests/demo/test_demo_terminal.py."""
from __future__ import annotations

import re

from rebalance_monitor.demo_view import GroupBoard, lag_by_group
from rebalance_monitor.metrics.docs import T0, sample_records
from rebalance_monitor.metrics.updater import MetricsUpdater


def test_line_mode_says_each_generation_with_its_cause_each_timeout_storm_and_lag_change():
    records = sample_records()
    board = GroupBoard()
    board.on_records(0, records, [])
    gens = [r for r in records if r["kind"] == "generation"]
    timeouts = [r for r in records if r["kind"] == "member_timeout"]
    storms = [r for r in records if r["kind"] == "storm"]
    assert gens and timeouts and storms  # the sample holds every kind the line mode speaks of
    assert board.generations == len(gens)
    said = [line for line in board.log if re.search(r"generation \d+ of \S+: \d+ members, .* caused by \w+", line)]
    assert len(said) == len(gens), board.log
    for r, line in zip(gens, said):
        assert f"generation {r['generation']} of {r['group']}:" in line and r["causes"][0]["cause"] in line
    assert sum(" timeout of " in line for line in board.log) == len(timeouts), board.log
    assert sum(line.split(" ", 1)[1].startswith("storm ") for line in board.log) == len(storms), board.log
    assert all(re.match(r"\d\d:\d\d:\d\d(\.\d{3})? ", line) for line in board.log), board.log
    assert not any(re.search(r"\b1[0-9]{12}\b", line) for line in board.log), "epoch milliseconds in a line"

    updater = MetricsUpdater(clock=lambda: T0 / 1000)
    updater.apply(records, now_ms=T0)
    board.set_lag(lag_by_group(updater))
    first = board.lag_changes()
    assert any(re.search(r"lag of orders-service: 450 records", line) for line in first), first
    assert board.lag_changes() == []  # said once, until it changes
