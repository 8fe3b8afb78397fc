"""Early warning: a member silent for core.early_warning_percent of its session timeout (no heartbeat) or of its
max.poll.interval.ms (no poll) gives one `member_at_risk` record per silence, on event time, before the timeout
itself; a member heard from again before its deadline gives no timeout."""
from __future__ import annotations

import pytest
from helpers.events import POLL, SESSION, heartbeats, hb, join, kinds, poll, run, stable_group

from rebalance_monitor.config import ConfigError, load_config
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.settings import CoreSettings


def test_a_silent_member_is_at_risk_at_half_its_session_then_times_out():
    events = stable_group(("a", "b")) + heartbeats(("a", "b"), 1, 3000, 12000)
    # b's last heartbeat at 12001; a keeps going
    events += heartbeats(("a",), 1, 15000, 40000)
    out = run(events)
    risks = kinds(out, "member_at_risk")
    assert [(r["member_id"], r["risk"]) for r in risks] == [("b", "session")]
    r = risks[0]
    assert r["last_seen_ms"] == 12001 and r["warn_ms"] == 12001 + SESSION // 2
    assert r["deadline_ms"] == 12001 + SESSION and r["limit_ms"] == SESSION
    assert r["client_id"] == "client-b" and r["host"].startswith("/10.0.0.")
    timeouts = kinds(out, "member_timeout")
    assert [(t["member_id"], t["timeout"]) for t in timeouts] == [("b", "session")]
    assert out.index(r) < out.index(timeouts[0])


def test_a_member_that_stops_polling_is_at_risk_at_half_its_poll_interval():
    events = stable_group(("a",))
    events += [poll(2000, "a")]
    events += heartbeats(("a",), 1, 3000, 3000 + POLL + 9000)  # the heartbeat thread goes on
    out = run(events)
    risks = kinds(out, "member_at_risk")
    assert [(r["risk"], r["warn_ms"], r["deadline_ms"]) for r in risks] == [("poll", 2000 + POLL // 2, 2000 + POLL)]
    assert [t["timeout"] for t in kinds(out, "member_timeout")] == ["poll"]


def test_one_warning_per_silence_and_none_for_a_member_that_recovers():
    events = stable_group(("a",)) + [hb(3000, "a", 1), hb(9000, "a", 1)]  # 6 s silent: at risk, not gone
    events += heartbeats(("a",), 1, 12000, 20000)
    events += [hb(27000, "a", 1)]  # silent again for 9 s (the last beat above: 18000)
    events += heartbeats(("a",), 1, 30000, 36000)
    out = run(events)
    risks = kinds(out, "member_at_risk")
    assert [(r["risk"], r["warn_ms"]) for r in risks] == [("session", 3000 + SESSION // 2),
                                                         ("session", 18000 + SESSION // 2)]
    assert kinds(out, "member_timeout") == []


def test_no_warning_when_turned_off_or_when_beats_come_often():
    silent = stable_group(("a", "b")) + heartbeats(("a", "b"), 1, 3000, 12000) + heartbeats(("a",), 1, 15000, 40000)
    assert kinds(run(silent, CoreSettings(early_warning_pct=0)), "member_at_risk") == []
    assert kinds(run(silent, CoreSettings(early_warning_pct=0)), "member_timeout")
    steady = stable_group(("a", "b")) + heartbeats(("a", "b"), 1, 3000, 60000)
    assert kinds(run(steady), "member_at_risk") == []


def test_a_snapshot_in_the_middle_of_a_silence_changes_nothing():
    events = stable_group(("a", "b")) + heartbeats(("a", "b"), 1, 3000, 12000) + heartbeats(("a",), 1, 15000, 40000)
    straight = GroupMonitor("g")
    out_straight = []
    for e in events:
        out_straight.extend(straight.process(parse_event(e)))
    out_restored, g = [], GroupMonitor("g")
    for i, e in enumerate(events):
        if i % 7 == 0:  # the state store's round trip, now and then (the Spark job's batches)
            g = GroupMonitor.from_state(g.to_state())
        out_restored.extend(g.process(parse_event(e)))
    assert [r for r in out_restored if r["kind"] != "group_status"] == \
        [r for r in out_straight if r["kind"] != "group_status"]
    assert any(r["kind"] == "member_at_risk" for r in out_straight)


def test_the_percentage_is_configured_and_checked_at_start():
    assert load_config(env={}).core_settings().early_warning_pct == 50
    assert load_config(env={}, overrides={"core.early_warning_percent": 80}).core_settings().early_warning_pct == 80
    with pytest.raises(ConfigError) as err:
        load_config(env={}, overrides={"core.early_warning_percent": 100})
    assert "core.early_warning_percent" in str(err.value) and "1-99" in str(err.value)


def test_join_helper_gives_the_timeouts_the_warnings_use():
    # (the builders' defaults, so that the figures above mean what they say)
    j = join(0, "x")
    assert j["session_timeout_ms"] == SESSION and j["rebalance_timeout_ms"] == POLL


def test_the_group_status_lists_the_members_at_risk_until_heard_from_again():
    g = GroupMonitor("g")
    events = stable_group(("a", "b")) + heartbeats(("a", "b"), 1, 3000, 12000) + heartbeats(("a",), 1, 15000, 18000)
    out = []
    for e in events:
        out.extend(g.process(parse_event(e)))
    b_last = 12001
    assert g.status(b_last + SESSION // 2 - 1)["members_at_risk"] == []          # not yet at its warning point
    out += g.advance_to(b_last + SESSION // 2 + 100)
    assert [(r["member_id"], r["risk"]) for r in kinds(out, "member_at_risk")] == [("b", "session")]
    assert g.status(b_last + SESSION // 2 + 100)["members_at_risk"] == [["b", "session"]]
    g.process(parse_event(hb(b_last + SESSION // 2 + 200, "b", 1)))              # heard from again: recovered
    assert g.status(b_last + SESSION // 2 + 300)["members_at_risk"] == []
    off = GroupMonitor("g", CoreSettings(early_warning_pct=0))
    for e in events:
        off.process(parse_event(e))
    assert off.status(b_last + SESSION - 1)["members_at_risk"] == []             # no warnings: none at risk
