"""The group snapshot (core/group/codec.py): versioned, complete, and refused rather than misread when it is not
the format this build writes."""
from __future__ import annotations

import json

import pytest
from helpers.events import heartbeats, join, leave, stable_group, sync, tps

from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.group import GroupMonitor, codec
from rebalance_monitor.core.members import Member
from rebalance_monitor.core.settings import CoreSettings

SETTINGS = CoreSettings(settle_ms=5000, storm_window_ms=60_000, storm_min_rebalances=2)


def _busy_group() -> GroupMonitor:
    """A group with members, a rebalance under way, owners, a storm running, removed members and counters."""
    events = stable_group(("a", "b")) + heartbeats(["a", "b"], 1, 3000, 6000)
    events += [leave(6500, "b"), join(6600, "a", owned=tps("t", 0, 1)), sync(6700, "a", 2, tps("t", 0, 1, 2, 3), "a"),
               join(7000, "c"), join(7100, "a", owned=tps("t", 0, 1, 2, 3))]
    g = GroupMonitor("g", SETTINGS)
    for e in sorted(events, key=lambda e: e["ts"]):
        g.process(parse_event(e))
    assert g.members and g.rebalance is not None and g.owners and g.removed and g.storm.in_storm
    return g


def test_a_snapshot_carries_its_version_and_round_trips_through_json():
    g = _busy_group()
    state = json.loads(json.dumps(g.to_state()))
    assert state["v"] == codec.STATE_VERSION
    again = GroupMonitor.from_state(state, SETTINGS)
    assert json.loads(json.dumps(again.to_state())) == state
    # the restored group goes on exactly as the original
    tail = [parse_event(e) for e in [sync(7300, "a", 3, tps("t", 0, 1), "a"), sync(7310, "c", 3, tps("t", 2, 3), "a")]]
    assert [g.process(e) for e in tail] == [again.process(e) for e in tail]
    assert g.advance_to(10**9) == again.advance_to(10**9)


def test_every_member_field_is_in_the_snapshot_once():
    assert sorted(codec.MEMBER_FIELDS) == sorted(Member.__slots__)
    assert len(set(codec.MEMBER_FIELDS)) == len(codec.MEMBER_FIELDS)


@pytest.mark.parametrize("damage, message", [
    (lambda s: s.update(v=6), "version 6"),
    (lambda s: s.update(v=None), "version None"),
    (lambda s: s.update(m=[values[:-1] for values in s["m"]]), "member state with 29 fields"),
    (lambda s: s.update(rb=s["rb"][:-1]), "rebalance state with 13 fields"),
    (lambda s: s.update(s=s["s"][:4]), "storm state with 4 fields"),
])
def test_a_snapshot_of_another_format_is_refused(damage, message):
    state = json.loads(json.dumps(_busy_group().to_state()))
    damage(state)
    with pytest.raises(ValueError, match=message):
        GroupMonitor.from_state(state, SETTINGS)


def test_a_snapshot_without_a_version_is_version_1_and_reads_as_the_current_one():
    """Version 1 is the format the snapshots had before they carried the number; version 2 added the members'
    report delay (None for the members of version 1, whose evidence was their own events) and their last commit
    (None: none seen); version 3 the time their client said it closed (None: it did not); version 4 where their
    session timeout came from (None: unknown) and the group's settings as the broker said them ({}: not said);
    version 5 a streams group's member's process and tasks (None: not a streams group's member)."""
    group = _busy_group()
    for m in group.members.values():
        m.timeout_source = m.client_host = None  # (what a snapshot of version 3 reads as)
    current = json.loads(json.dumps(group.to_state()))
    assert all(values[-6:] == [None] * 6 for values in current["m"])
    assert current["gc"] == {}
    old = {k: v for k, v in current.items() if k not in ("gc", "bx")}
    state = dict(old, m=[values[:-6] for values in current["m"]])
    del state["v"]
    again = json.loads(json.dumps(GroupMonitor.from_state(state, SETTINGS).to_state()))
    assert again["v"] == 5 == codec.STATE_VERSION
    assert again == current
    v2 = dict(old, v=2, m=[values[:-4] for values in current["m"]])
    assert json.loads(json.dumps(GroupMonitor.from_state(v2, SETTINGS).to_state())) == current
    v3 = dict(old, v=3, m=[values[:-3] for values in current["m"]])
    assert json.loads(json.dumps(GroupMonitor.from_state(v3, SETTINGS).to_state())) == current
    v4 = dict(current, v=4, m=[values[:-1] for values in current["m"]])
    assert json.loads(json.dumps(GroupMonitor.from_state(v4, SETTINGS).to_state())) == current


@pytest.mark.parametrize("fingerprints", [
    list(range(100, 170)),  # more than the window: the newest 64 are kept
    list(range(10)),
    [],
    [5, 6, 5, 7] + list(range(100, 166)),  # repeated (no monitor writes that): one by one, as `remember` keeps them
])
def test_the_recent_fingerprints_come_back_as_remember_keeps_them(fingerprints):
    state = json.loads(json.dumps(_busy_group().to_state()))
    state["r"] = fingerprints
    again = GroupMonitor.from_state(state, SETTINGS)
    one_by_one = GroupMonitor("g", SETTINGS)
    for fp in fingerprints:
        one_by_one.remember(fp)
    assert list(again.recent) == list(one_by_one.recent) and again.recent_set == one_by_one.recent_set
    assert len(again.recent) == min(len(fingerprints), SETTINGS.dedupe_window)


def test_a_member_comes_back_with_its_tuples():
    g = _busy_group()
    state = json.loads(json.dumps(g.to_state()))
    again = GroupMonitor.from_state(state, SETTINGS)
    for mid, m in g.members.items():
        back = again.members[mid]
        assert [getattr(back, f) for f in codec.MEMBER_FIELDS] == [getattr(m, f) for f in codec.MEMBER_FIELDS]
        assert all(type(getattr(back, f)) is type(getattr(m, f)) for f in ("protocols", "topics", "owned", "assignment"))
