"""The broker poller stamps what it publishes with the job's event time (the newest record time the job wrote),
so that a setting never runs ahead of the input it applies to; before the job's first event it waits, and an idle
input's groups get the wall clock after a minute, once the job says the input is idle (never while it is still
reading a backlog). Only what changed is published again. (The brokers' answers are
stand-ins here, in the shape the real broker gives: tests/broker_facts/test_broker_group_configs.py.)"""
from __future__ import annotations

import json

import pytest

from rebalance_monitor.broker_facts.poller import WALL_CLOCK_AFTER_S, BrokerFactsPoller


class _Admin:
    """What the poller asks (its module's `ask_*` functions are replaced by this one's answers)."""

    def __init__(self):
        self.session = "10000"

    def broker(self, admin):
        return {"group.consumer.session.timeout.ms": {"value": self.session},
                "group.consumer.assignors": {"value": "uniform,range"}}

    def groups(self, admin, groups):
        return {g: {"consumer.session.timeout.ms": {"value": "20000", "config_source": "DYNAMIC_GROUP_CONFIG"}}
                for g in groups}

    def list_groups(self):
        return [{"group_id": "orders"}]


@pytest.fixture(autouse=True)
def _answers(monkeypatch):
    from rebalance_monitor.broker_facts import poller

    monkeypatch.setattr(poller, "ask_broker_configs", lambda admin: admin.broker(admin))
    monkeypatch.setattr(poller, "ask_group_configs", lambda admin, groups: admin.groups(admin, groups))


class _Clock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


def _poller(clock, input_idle=lambda: True):
    out = []
    p = BrokerFactsPoller(_Admin(), lambda key, value: out.append(json.loads(value)), clock=clock,
                          input_idle=input_idle)
    return p, out


def test_it_waits_for_the_jobs_event_time_and_stamps_with_it():
    clock = _Clock(1_000_000.0)
    p, out = _poller(clock)
    assert p.poll_once() == 0 and out == []  # nothing written by the job yet
    p.note_batch([{"kind": "generation", "group": "payments", "ts": 500_000}, {"kind": "x", "group": "g", "ts": 7}])
    assert p.poll_once() >= 2
    assert {e["ts"] for e in out} == {500_000}  # the input's time, not the wall clock's 1,000,000,000
    assert {(e["group"], e.get("session_timeout_ms")) for e in out if e["type"] == "group_config"
            and e["group_type"] == "consumer"} >= {("", 10_000), ("orders", 20_000), ("payments", 20_000)}


def test_an_idle_input_gets_the_wall_clock_after_a_while_and_only_changes_are_published_again():
    clock = _Clock(1_000.0)
    p, out = _poller(clock)
    assert p.poll_once() == 0
    clock.t += WALL_CLOCK_AFTER_S
    assert p.poll_once() > 0 and {e["ts"] for e in out} == {int(clock.t * 1000)}
    n = len(out)
    assert p.poll_once() == 0 and len(out) == n  # nothing changed
    p.admin.session = "15000"
    assert p.poll_once() > 0
    assert [e["session_timeout_ms"] for e in out[n:] if e["group"] == "" and e["group_type"] == "consumer"] == [15_000]


def test_a_job_slow_to_read_its_backlog_never_gets_the_wall_clock_and_a_batch_without_records_gives_its_event_time():
    """A restarted job whose first batch of a backlog takes longer than the wait is not idle: the wall clock
    (minutes past the backlog's events) would move every group past its backlog and time its members out (the
    kill-restart test's flake). A batch that read events but wrote no record still gives their time."""
    clock = _Clock(1_000.0)
    idle = {"now": False}
    p, out = _poller(clock, input_idle=lambda: idle["now"])
    clock.t += 10 * WALL_CLOCK_AFTER_S
    assert p.poll_once() == 0 and out == []  # still reading: no stamp
    p.note_batch([], event_time_ms=400_000)  # a batch of heartbeats: no record, but the events' time
    assert p.poll_once() > 0 and {e["ts"] for e in out} == {400_000}


def test_without_the_jobs_word_an_idle_input_is_not_assumed():
    clock = _Clock(1_000.0)
    p, out = _poller(clock, input_idle=None)
    clock.t += 10 * WALL_CLOCK_AFTER_S
    assert p.poll_once() == 0 and out == []
    p.input_idle = lambda: True
    assert p.poll_once() > 0 and {e["ts"] for e in out} == {int(clock.t * 1000)}
