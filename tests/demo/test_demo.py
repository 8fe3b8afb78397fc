"""The demo's line mode (`rebalance-monitor demo --no-live`, what a pipe or CI log shows): one line per generation
with its cause, per member timeout and per storm, and one per lag change; at clock times, never epoch
milliseconds. The whole demo on Apache Kafka (broker, Spark, workloads, Ctrl-C leaving nothing running) runs
once, in a real terminal: tests/demo/test_demo_terminal.py."""
from __future__ import annotations

import re

from rebalance_monitor.demo.view import GroupBoard, clock, lag_by_group
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


def test_the_line_mode_says_each_line_once_however_many_ticks_pass():
    records = sample_records()
    now = [0.0]
    board = GroupBoard(clock=lambda: now[0])
    board.on_records(0, records, [])
    updater = MetricsUpdater(clock=lambda: T0 / 1000)
    updater.apply(records, now_ms=T0)
    first = board.take_new()
    board.set_lag(lag_by_group(updater))
    first += board.lag_changes()
    assert len(first) >= 5, first  # a generation, a timeout, a storm, a state, a lag
    for _ in range(50):  # the demo's ticks, twice a second, over a state that does not change
        now[0] += 0.5
        board.set_lag(lag_by_group(updater))
        assert board.take_new() + board.lag_changes() == []
    # the same records again (a group's status every batch, a running storm's record): nothing new either
    status = [r for r in records if r["kind"] in ("group_status", "storm")]
    board.on_records(1, status, [])
    assert board.take_new() == []
    # what does change is said, once
    board.on_records(2, [dict(r, state="PreparingRebalance") for r in records if r["kind"] == "group_status"], [])
    said = board.take_new()
    assert len(said) == 1 and "orders-service is PreparingRebalance (was Stable)" in said[0], said
    storm = next(r for r in records if r["kind"] == "storm")
    board.on_records(3, [dict(storm, pattern="scaling"), dict(storm, pattern="scaling", ended_ms=T0)], [])
    said = board.take_new()
    assert [line.split(" ", 1)[1].split(":")[0] for line in said] == ["storm goes on in orders-service",
                                                                       "storm ended in orders-service"], said
    assert board.take_new() == []


def test_a_generation_whose_assignment_was_not_checked_says_why():
    gen = next(r for r in sample_records() if r["kind"] == "generation")
    why = "protocol unknown: the members' votes tie between range and roundrobin"
    board = GroupBoard()
    board.on_records(0, [dict(gen, mismatched_partitions=None, expected_assignment=None, expected_reason=why)], [])
    [line] = board.take_new()
    assert line.endswith(f"mismatched unknown ({why})"), line
    assert "None" not in line


def test_a_member_the_core_reports_at_risk_gets_an_early_warning_line():
    risk = {"kind": "member_at_risk", "group": "orders-service", "ts": 1_700_000_031_000, "member_id": "java-stall-1",
            "risk": "poll", "last_seen_ms": 1_700_000_000_000, "warn_ms": 1_700_000_010_000,
            "deadline_ms": 1_700_000_020_000, "limit_ms": 20_000, "detected_ms": 1_700_000_031_000}
    board = GroupBoard()
    board.on_records(0, [risk], [])
    [line] = board.take_new()
    assert re.match(r"\d\d:\d\d:\d\d\.\d{3} poll early warning in orders-service: java-stall-1 has not polled for "
                    r"50% of its max\.poll\.interval\.ms$", line), line
    assert line.startswith(clock(risk["warn_ms"]))  # when it was at risk, not when the job noticed
    # a member a generation's cause named: the warning says who it is, as a timeout does
    gen = next(r for r in sample_records() if r["kind"] == "generation")
    board.on_records(1, [dict(gen, group="orders-service", causes=[
        {"cause": "member_joined", "member_id": "java-ok-2", "client_id": "java-ok", "host": "10.0.0.7"}])], [])
    board.take_new()
    board.on_records(2, [dict(risk, member_id="java-ok-2", risk="session", limit_ms=10_000,
                              warn_ms=risk["last_seen_ms"] + 6_000)], [])
    [line] = board.take_new()
    assert line.endswith("session early warning in orders-service: java-ok@10.0.0.7 (member java-ok-2) has not sent "
                         "a heartbeat for 60% of its session timeout"), line
    # the record's own identity wins
    board.on_records(3, [dict(risk, client_id="java-stall", host="10.0.0.9")], [])
    [line] = board.take_new()
    assert "java-stall@10.0.0.9 (member java-stall-1) has not polled" in line, line


def test_the_demo_board_keeps_its_own_groups_only():
    status = next(r for r in sample_records() if r["kind"] == "group_status")
    board = GroupBoard(prefix="demo-")
    board.on_records(0, [dict(status, group="demo-java"), dict(status, group="rmkafka-8e2644ef72c8")], [])
    assert list(board.groups) == [("default", "demo-java")]
    assert all("rmkafka" not in line for line in board.take_new())
