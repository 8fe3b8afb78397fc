"""The fleet bench's schedule (bench/fleet_schedule.py), stepped without a clock, broker or Spark: the members'
cadence, the frozen and stalled members' last heartbeat/poll and deadlines, the churn and the rejoin after a
deadline."""
from __future__ import annotations

import os
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from fleet_schedule import Fleet  # noqa: E402

T0 = 1_800_000_000_000


def run(fleet: Fleet, seconds: int, step_ms: int = 500) -> list[dict]:
    out = []
    for t in range(0, seconds * 1000 + 1, step_ms):
        batch = fleet.due(T0 + t)
        assert all(e["ts"] <= T0 + t + 200 for e in batch)  # due (a rebalance's syncs: at most 100 ms + n ahead)
        out += batch
    return out


def test_cadence_matches_the_clients():
    fleet = Fleet(200, 10, T0, frozen=0, stalled=0, churn_every_ms=0)
    events = run(fleet, 60)
    steady = [e for e in events if e["ts"] >= T0 + 10_000 and e["ts"] < T0 + 58_000]
    kinds = Counter(e["type"] for e in steady)
    secs, members = 48, 2000
    assert abs(kinds["heartbeat"] / secs - members / 3) < 0.03 * members / 3  # members/3 a second
    assert abs(kinds["poll"] / secs - members / 3) < 0.03 * members / 3
    assert abs(kinds["commit"] / secs - members / 5) < 0.03 * members / 5
    assert kinds["join"] == kinds["sync"] == 0  # no churn asked: the first joins only, all before 10 s
    # each member heartbeats every 3 s exactly, in its own generation (the first)
    beats = sorted(e["ts"] for e in events if e["type"] == "heartbeat" and e["member_id"] == "fleet-00007-m3")
    assert {b - a for a, b in zip(beats, beats[1:])} == {3000}
    assert {e["generation"] for e in events if e["type"] == "heartbeat"} == {1}
    assert all(e["v"] == 1 and e["group"] and e["member_id"] for e in events)


def test_frozen_and_stalled_members_are_as_scheduled():
    fleet = Fleet(20, 5, T0, frozen=2, stalled=1, session_ms=45_000, max_poll_ms=60_000, stop_at_ms=30_000,
                  stop_spread_ms=9_000, churn_every_ms=0)
    events = run(fleet, 120)
    ws = list(fleet.watched.values())
    assert [w.kind for w in ws] == ["session", "session", "poll"]
    assert [w.stop_ms - T0 for w in ws] == [30_000, 33_000, 36_000]
    for w in ws:
        mine = [e for e in events if e["member_id"] == w.member_id]
        beats = [e["ts"] for e in mine if e["type"] == "heartbeat"]
        polls = [e["ts"] for e in mine if e["type"] == "poll"]
        if w.kind == "session":  # a stopped process: nothing at all from its stop on
            assert max(e["ts"] for e in mine) < w.stop_ms
            assert w.last_ms == max(beats) and w.stop_ms - 3000 <= w.last_ms < w.stop_ms
            assert w.deadline_ms == max(beats) + 45_000
        else:  # no poll from its stop on; heartbeats until max.poll.interval.ms after its last poll
            assert w.last_ms == max(polls) and w.stop_ms - 3000 <= w.last_ms < w.stop_ms
            assert w.deadline_ms == max(polls) + 60_000
            assert w.deadline_ms - 3000 <= max(beats) < w.deadline_ms
        # the rest of its group rejoin (generation 2) after its deadline, without it
        joins = [e for e in events if e["group"] == w.group and e["type"] == "join" and e["ts"] > T0 + 10_000]
        assert joins and min(e["ts"] for e in joins) > w.deadline_ms
        assert w.member_id not in {e["member_id"] for e in joins} and len(joins) == 4
        syncs = [e for e in events if e["group"] == w.group and e["type"] == "sync" and e["generation"] == 2]
        assert len(syncs) == 4
    # the other groups go on: their members' heartbeats do not stop
    late = {e["member_id"] for e in events if e["type"] == "heartbeat" and e["ts"] > T0 + 115_000}
    assert len(late) == 20 * 5 - 3


def test_churn_rebalances_the_groups_and_keeps_their_size():
    fleet = Fleet(100, 10, T0, frozen=0, stalled=0, churn_every_ms=20_000, session_ms=10_000)
    events = run(fleet, 200)
    churned = sum(fleet.churned.values())
    assert 100 * 200 / 20 * 0.7 < churned < 100 * 200 / 20 * 1.3  # one a group every 20 s on average
    assert min(fleet.churned.values()) > churned / 6  # joins, leaves and crashes all happen
    leaves = [e for e in events if e["type"] == "leave"]
    assert len(leaves) == fleet.churned["leave"] and all(e["reason"] for e in leaves)
    assert all(7 <= len(g.members) <= 13 for g in fleet.groups.values())
    # every generation a rebalance formed is synced by all its members, their ids known from their joins
    joined = {e["member_id"] for e in events if e["type"] == "join"}
    gens = Counter((e["group"], e["generation"]) for e in events if e["type"] == "sync")
    assert set(gens) == set(fleet.generations)
    assert all(e["member_id"] in joined for e in events if e["type"] == "sync")
    # a crashed member sends nothing once silent
    for mid, since in fleet.silent.items():
        assert all(e["ts"] < since for e in events if e["member_id"] == mid and e["type"] != "join")
