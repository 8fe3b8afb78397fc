"""A group's type (core/group/group_type.py): classic, consumer, streams or share, from what its members say of
themselves; kept while the group is empty; the broker's description names it for a group with no member; every
`group_status` and `generation` record carries it, and the group's snapshot keeps it."""
from __future__ import annotations

from helpers.events import ev, join, kinds, leave, run, stable_group
from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.group import GroupMonitor


def _types(records, kind="group_status"):
    return [r["group_type"] for r in kinds(records, kind)]


def test_a_group_of_classic_members_is_classic():
    out = run(stable_group(), status=True)
    assert _types(out, "generation") and set(_types(out, "generation")) == {"classic"}
    assert set(_types(out)) == {"classic"}


def test_a_kip848_member_makes_the_group_a_consumer_group_even_beside_classic_members():
    # Kafka 4 converts a classic group into a consumer group when its first KIP-848 member joins (an upgrade in
    # progress): the classic members stay until they rejoin, and the group is a consumer group from then on
    events = [join(1000, "a"), join(2000, "b", protocols=("uniform",), group_protocol="consumer")]
    out = run(events, status=True)
    assert _types(out)[-1] == "consumer"
    assert _types(run(events[:1], status=True))[-1] == "classic"


def test_share_and_streams_members_name_their_group():
    share = run([join(1000, "a", protocols=("simple",), group_protocol="share")], status=True)
    assert set(_types(share)) == {"share"}
    streams = run([join(1000, "a", protocols=("sticky",), topics=(), group_protocol="streams", process_id="p-1",
                        topology_epoch=0)], status=True)
    assert set(_types(streams)) == {"streams"}


def test_an_empty_group_keeps_its_type():
    out = run([join(1000, "a", protocols=("uniform",), group_protocol="consumer"),
               leave(5000, "a")], status=True)
    statuses = kinds(out, "group_status")
    assert statuses[-1]["members"] == 0 and statuses[-1]["group_type"] == "consumer"


def test_the_brokers_description_names_a_group_no_member_has_named():
    described = ev("group_described", 1000, "g", group_type="streams", state="Stable", group_epoch=3,
                   assignment_epoch=3, members=[])
    assert _types(run([described], status=True))[-1] == "streams"
    # a member's word wins over the description while the group has members
    out = run([join(500, "a"), described], status=True)
    assert _types(out)[-1] == "classic"


def test_a_group_with_nothing_said_is_unknown_and_the_snapshot_keeps_the_type():
    g = GroupMonitor("g")
    assert g.status(0)["group_type"] == "unknown"
    g.process(parse_event(join(1000, "a", protocols=("simple",), group_protocol="share")))
    assert g.status()["group_type"] == "share"
    state = g.to_state()
    assert state["gt"] == "share"
    back = GroupMonitor.from_state(state)
    back.members.clear()                    # only the snapshot's word is left
    assert back.status()["group_type"] == "share"
    older = dict(state)
    del older["gt"]                         # a snapshot written before the type was kept
    assert GroupMonitor.from_state(older).status()["group_type"] == "share"   # its members say it again
