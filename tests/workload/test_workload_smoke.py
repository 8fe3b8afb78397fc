"""Smoke tests of a few workload scenarios on the real broker: the events they make must contain the
triggers they declare (the checks through the monitor itself are the end-to-end tests)."""
from __future__ import annotations

import pytest

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.instrument import read_events
from rebalance_monitor.workload import SCENARIOS, missing_triggers, run_scenario

pytestmark = pytest.mark.integration


def _run(broker, unique, name):
    events_topic = f"{unique}-events"
    result = run_scenario(name, broker.bootstrap, events_topic, group=unique, topic=unique)
    assert result.emitter_stats["dropped"] == 0 and result.emitter_stats["sent"] > 0
    events = read_events(broker.bootstrap, events_topic, group=unique, timeout_s=20, idle_s=2)
    assert events and not [e for e in events if isinstance(parse_event(e), Rejected)]
    before_teardown = [e for e in events if e["ts"] < result.cleanup_ms]
    return result, events, before_teardown


def test_registry_declares_expectations():
    assert {"steady", "scale_out", "scale_in", "crash", "slow_consumer", "rolling_restart", "static_restart",
            "storm", "partition_change", "mixed_assignors"} <= set(SCENARIOS)
    for sc in SCENARIOS.values():
        assert sc.expect.get("generations_min", 0) >= 1 and isinstance(sc.expect.get("storm"), bool)


def test_scale_in_events_show_joins_and_graceful_leaves(broker, unique):
    result, events, window = _run(broker, unique, "scale_in")
    assert missing_triggers(result.expect, window) == []
    stopped = [a["member_id"] for a in result.actions if a["action"] == "stop_member"]
    assert len(stopped) == 2
    for member_id in stopped:
        leaves = [e for e in window if e["type"] == "leave" and e["member_id"] == member_id]
        assert [e["reason"] for e in leaves] == ["the consumer is being closed"]


def test_crash_events_show_a_silent_member_and_a_later_generation(broker, unique):
    result, events, window = _run(broker, unique, "crash")
    assert missing_triggers(result.expect, window) == []
    kill = next(a for a in result.actions if a["action"] == "kill_member")
    victim = [e for e in events if e.get("member_id") == kill["member_id"]]
    assert victim and not [e for e in victim if e["type"] == "leave"]  # SIGKILL: no LeaveGroup
    assert max(e["ts"] for e in victim) <= kill["ts"] + 1000  # nothing from it after the kill
    last_gen = max(e["generation"] for e in victim if e["type"] == "sync")
    survivor_syncs = [e for e in window if e["type"] == "sync" and e["member_id"] != kill["member_id"]
                      and e["generation"] > last_gen]
    assert survivor_syncs and survivor_syncs[0]["ts"] > kill["ts"]
    assert sorted(tuple(tp) for tp in survivor_syncs[-1]["assignment"]) == [(unique, p) for p in range(6)]


def test_slow_consumer_leaves_with_the_poll_timeout_reason_and_rejoins(broker, unique):
    result, events, window = _run(broker, unique, "slow_consumer")
    assert missing_triggers(result.expect, window) == []
    slow = [e for e in window if e.get("client_id") == "slow-slow"]
    leave = next(e for e in slow if e["type"] == "leave")
    assert leave["reason"] == "consumer poll timeout has expired."
    rejoin = [e for e in slow if e["type"] == "sync" and e["ts"] > leave["ts"]]
    assert rejoin and rejoin[-1]["assignment"]
    assert [e for e in slow if e["type"] == "join" and e["ts"] > leave["ts"]]
