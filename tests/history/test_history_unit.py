"""`rebalance-monitor history`'s timeline, fleet ranking, renderers and time parsing (pure, no job)."""
from __future__ import annotations

import io
import json

import pytest

from rebalance_monitor.history.row_formats import parse_when, render
from rebalance_monitor.history.timeline import FLEET_COLUMNS, TIMELINE_COLUMNS, fleet_rows, timeline_rows

GEN = {"kind": "generation", "group": "orders", "ts": 1_700_000_060_000, "generation": 7, "duration_ms": 1500,
       "members": ["a", "b"], "partitions_moved": 3, "mismatched_partitions": 0,
       "causes": [{"cause": "member_left", "member_id": "a-1", "client_id": "orders-3", "host": "/10.0.0.7"}]}
TIMEOUT = {"kind": "member_timeout", "group": "orders", "ts": 1_700_000_070_000, "timeout": "session",
           "member_id": "b-1", "client_id": "orders-4", "host": "/10.0.0.8"}


def test_parse_when():
    now = 1_700_000_000_000
    assert parse_when("12h", now) == now - 12 * 3_600_000
    assert parse_when("7d", now) == now - 7 * 86_400_000
    assert parse_when("2023-11-14T22:13:20Z") == 1_700_000_000_000
    assert parse_when("2023-11-14T22:13:20") == 1_700_000_000_000  # no zone: UTC
    assert parse_when("1700000000000") == 1_700_000_000_000
    with pytest.raises(ValueError, match="not a time"):
        parse_when("yesterday")


def test_timeline_names_the_cause_the_client_and_the_host():
    rows = timeline_rows([GEN, TIMEOUT, {"kind": "offsets_committed", "group": "orders", "ts": 1}])
    assert [r["event"] for r in rows] == ["generation", "session timeout"]
    assert rows[0]["detail"] == "member_left (orders-3@/10.0.0.7)" and rows[0]["duration_s"] == 1.5
    assert rows[0]["moved"] == 3 and rows[0]["members"] == 2
    assert rows[1]["detail"] == "orders-4@/10.0.0.8"


def test_timeline_shows_a_member_at_risk_before_its_timeout():
    risk = {"kind": "member_at_risk", "group": "orders", "ts": 1_700_000_066_000, "risk": "poll",
            "member_id": "b-1", "client_id": "orders-4", "host": "/10.0.0.8", "last_seen_ms": 1_700_000_000_000,
            "warn_ms": 1_700_000_150_000, "deadline_ms": 1_700_000_300_000, "limit_ms": 300_000}
    rows = timeline_rows([risk, TIMEOUT])
    assert [r["event"] for r in rows] == ["poll at risk", "session timeout"]
    assert rows[0]["time"] == risk["warn_ms"]  # when it was at risk, not when a driver noticed
    assert rows[0]["detail"] == "orders-4@/10.0.0.8: no poll for 150.0 s of its 300 s max.poll.interval.ms"


def test_fleet_ranks_by_rebalances_and_names_the_usual_suspect():
    recs = [dict(GEN, ts=GEN["ts"] + i) for i in range(3)] + [dict(GEN, group="payments")]
    recs.append({"kind": "storm", "group": "orders", "ts": 1_700_000_100_000, "ended_ms": None, "rebalances": 4})
    rows = fleet_rows(recs, top=1)
    assert len(rows) == 1 and rows[0]["group"] == "orders" and rows[0]["rebalances"] == 3
    assert rows[0]["storms"] == 1 and rows[0]["top_cause"] == "member_left"
    assert rows[0]["top_member"] == "orders-3@/10.0.0.7"


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_renderers(fmt):
    out = io.StringIO()
    render(timeline_rows([GEN]), TIMELINE_COLUMNS, fmt, out, title="group orders")
    text = out.getvalue()
    if fmt == "json":
        row = json.loads(text.splitlines()[0])
        assert row["time"] == "2023-11-14T22:14:20.000+00:00" and row["generation"] == 7
    elif fmt == "csv":
        assert text.splitlines()[0].split(",") == list(TIMELINE_COLUMNS)
    else:
        assert text.splitlines()[0] == "group orders" and "member_left (orders-3@/10.0.0.7)" in text
    out = io.StringIO()
    render([], FLEET_COLUMNS, "table", out)
    assert "(nothing in this range)" in out.getvalue()


def test_a_history_directory_without_a_batch_yet_has_no_records(tmp_path):
    """The job creates the history directory before its first batch writes there: `history` reads nothing then,
    where it failed on the missing columns (seen while a newcomer's first job started)."""
    from rebalance_monitor.history.reader import Query, read_parquet

    (tmp_path / "h" / "_spark_metadata").mkdir(parents=True)
    (tmp_path / "h" / "_SUCCESS").write_text("")
    assert list(read_parquet(str(tmp_path / "h"), Query(group="g", since_ms=0))) == []


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_an_unchecked_assignment_says_why_in_every_format(fmt):
    why = "protocol unknown: the members' votes tie between range and roundrobin"
    unchecked = dict(GEN, mismatched_partitions=None, expected_assignment=None, expected_reason=why)
    rows = timeline_rows([GEN, unchecked])
    assert [r["unchecked_reason"] for r in rows] == [None, why]
    out = io.StringIO()
    render(rows, TIMELINE_COLUMNS, fmt, out)
    text = out.getvalue()
    if fmt == "json":
        assert [json.loads(line)["unchecked_reason"] for line in text.splitlines()] == [None, why]
    elif fmt == "csv":
        import csv

        got = list(csv.DictReader(io.StringIO(text)))
        assert [r["unchecked_reason"] for r in got] == ["", why] and [r["mismatched"] for r in got] == ["0", ""]
    else:
        assert text.count(why) == 1 and "unchecked_reason" in text.splitlines()[0]


def test_a_group_going_empty_is_a_timeline_row_naming_who_left():
    from rebalance_monitor.history.timeline import timeline_rows

    rec = {"kind": "generation", "group": "g", "ts": 5000, "generation": 2, "duration_ms": 0, "members": [],
           "causes": [{"cause": "member_left", "member_id": "a-1", "client_id": "orders-1", "host": "/10.0.0.1"}],
           "assignment": {}, "expected_assignment": {}, "mismatched_partitions": 0, "partitions_moved": None,
           "expected_reason": "no members: the group went empty"}
    row = timeline_rows([rec])[0]
    assert (row["event"], row["generation"], row["members"], row["detail"], row["unchecked_reason"]) == (
        "generation", 2, 0, "member_left (orders-1@/10.0.0.1)", None)


def test_the_brokers_description_is_a_timeline_row():
    from rebalance_monitor.history.timeline import timeline_rows

    recs = [{"kind": "broker_view", "group": "g", "ts": 9000, "broker_epoch": 7, "monitor_epoch": 7, "agrees": False,
             "differences": ["member c: the broker has it, the monitor does not"]},
            {"kind": "broker_view", "group": "g", "ts": 9500, "broker_epoch": 8, "monitor_epoch": 7, "agrees": None,
             "differences": [], "reason": "the broker is at epoch 8, the monitor at 7: not read yet"}]
    assert [(r["event"], r["generation"], r["detail"]) for r in timeline_rows(recs)] == [
        ("broker disagrees", 7, "member c: the broker has it, the monitor does not"),
        ("broker not compared", 8, "the broker is at epoch 8, the monitor at 7: not read yet")]


def test_a_streams_groups_generation_names_its_processes_threads_and_tasks():
    rec = {"kind": "generation", "group": "app", "ts": 7000, "generation": 4, "duration_ms": 800,
           "members": ["m1", "m2", "m3"], "group_type": "streams", "partitions_moved": None,
           "mismatched_partitions": None, "expected_assignment": None, "mismatched_tasks": 0, "tasks_moved": 3,
           "tasks_moved_between_processes": 1, "tasks_moved_within_process": 2, "expected_reason": None,
           "causes": [{"cause": "member_joined", "member_id": "m3", "client_id": "app-1-StreamThread-2-consumer"}],
           "tasks": {
               "m1": {"process_id": "p1", "client_id": "app-1-StreamThread-1-consumer", "epoch": 4,
                      "active": [["0", 0]], "standby": [["0", 2]], "warmup": []},
               "m2": {"process_id": "p2", "client_id": "app-2-StreamThread-1-consumer", "epoch": 4,
                      "active": [["0", 2], ["1", 0]], "standby": [], "warmup": [["0", 0]]},
               "m3": {"process_id": "p1", "client_id": "app-1-StreamThread-2-consumer", "epoch": 4,
                      "active": [], "standby": [], "warmup": []}}}
    unchecked = {**rec, "generation": 5, "mismatched_tasks": None, "tasks_moved": None,
                 "expected_reason": "tasks of epoch 5 not known for 1 member(s) (not reconciled yet)"}
    rows = timeline_rows([rec, unchecked])
    assert (rows[0]["moved"], rows[0]["mismatched"], rows[0]["unchecked_reason"]) == ("1/2 tasks", 0, None)
    assert rows[0]["tasks"] == ("process p1: app-1-StreamThread-1 [0_0 standby 0_2], app-1-StreamThread-2 [none]; "
                                "process p2: app-2-StreamThread-1 [0_2,1_0 warm-up 0_0]")
    assert (rows[1]["mismatched"], rows[1]["unchecked_reason"]) == (None, unchecked["expected_reason"])
    assert rows[1]["moved"] is None
    out = io.StringIO()
    render(rows, TIMELINE_COLUMNS, "table", out, title="group app")
    assert "app-1-StreamThread-2 [none]" in out.getvalue()
