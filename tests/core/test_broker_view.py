"""The coordinator's description of a group (`group_described`, the describe APIs) held against the monitor's own
reconstruction: a `broker_view` record that agrees, names what differs, or says why it could not compare; and a
KIP-848 group's assignor, as the description names it, judges the group's later generations."""
from __future__ import annotations

from helpers.events import ev, run
from rebalance_monitor.core.settings import CoreSettings


def _member(ts, mid, owned):
    return [ev("join", ts, "g", member_id=mid, topics=["t"], protocols=[], group_protocol="consumer",
               client_id=f"c-{mid}", host="/127.0.0.1", rebalance_timeout_ms=300_000)]


def _sync(ts, mid, gen, parts):
    return ev("sync", ts, "g", member_id=mid, generation=gen, protocol=None, leader=None,
              assignment=[["t", p] for p in parts])


def described(ts, epoch, members, protocol="range", state="Stable"):
    return ev("group_described", ts, "g", group_type="consumer", state=state, protocol=protocol, group_epoch=epoch,
              assignment_epoch=epoch,
              members=[{"member_id": mid, "client_id": f"c-{mid}", "client_host": "/127.0.0.1", "member_epoch": epoch,
                        "assignment": [["t", p] for p in parts], "target_assignment": [["t", p] for p in parts]}
                       for mid, parts in members.items()])


def _group():
    """Two KIP-848 members at epoch 2, a owning t-0, t-1 and b t-2, t-3 (their syncs name no assignor)."""
    return (_member(1000, "a", ()) + [_sync(1100, "a", 1, [0, 1, 2, 3])] + _member(2000, "b", ())
            + [_sync(2100, "a", 2, [0, 1]), _sync(2200, "b", 2, [2, 3]),
               ev("topic_partitions", 500, "", topics={"t": 4})])


def views(out):
    return [r for r in out if r["kind"] == "broker_view"]


def test_a_description_that_matches_agrees_and_names_the_assignor():
    out = run(sorted(_group() + [described(5000, 2, {"a": [0, 1], "b": [2, 3]})], key=lambda e: e["ts"]))
    (view,) = views(out)
    assert (view["agrees"], view["differences"], view["broker_epoch"], view["monitor_epoch"]) == (True, [], 2, 2)
    assert view["protocol"] == "range"


def test_a_disagreement_is_named_not_overwritten():
    out = run(sorted(_group() + [described(5000, 2, {"a": [0, 1, 2], "c": [3]})], key=lambda e: e["ts"]))
    (view,) = views(out)
    assert view["agrees"] is False
    assert view["differences"] == ["member c: the broker has it, the monitor does not",
                                   "member b: the monitor has it, the broker does not",
                                   "member a: the broker assigns [t-0, t-1, t-2], the monitor [t-0, t-1]"]


def test_descriptions_at_other_epochs_are_not_compared():
    out = run(sorted(_group() + [described(5000, 3, {"a": [0]}), described(5100, 1, {"a": [0, 1, 2, 3]})],
                     key=lambda e: e["ts"]))
    assert [(v["agrees"], v["reason"]) for v in views(out)] == [
        (None, "the broker is at epoch 3, the monitor at 2: not read yet"),
        (None, "the broker is at epoch 1, the monitor at 2: the description is older")]


def test_the_described_assignor_judges_later_generations():
    """Members that name no assignor: unchecked until the coordinator's description names `range`; the next
    epoch is then judged with it (a range split of 4 partitions over 3 members)."""
    later = _member(6000, "c", ()) + [_sync(6100, "a", 3, [0, 1]), _sync(6200, "b", 3, [2]), _sync(6300, "c", 3, [3])]
    events = sorted(_group() + [described(5000, 2, {"a": [0, 1], "b": [2, 3]})] + later, key=lambda e: e["ts"])
    gens = [r for r in run(events, CoreSettings()) if r["kind"] == "generation"]
    assert gens[-1]["generation"] == 3 and gens[-1]["protocol"] == "range"
    assert gens[-1]["mismatched_partitions"] == 0, gens[-1]
    before = [r for r in gens if r["generation"] == 2]
    assert before and before[0]["protocol"] is None


def test_a_share_groups_description_is_compared_at_its_epoch():
    """A share group (from __consumer_offsets: members of group_protocol `share`) described by ShareGroupDescribe:
    compared at the same group epoch, members and their current partitions (a share description has no target);
    a classic describe's answer (no epoch) is not compared."""
    share = [ev("join", 1000, "g", member_id="a", topics=["t"], protocols=["simple"], group_protocol="share",
                client_id="c-a", host="/127.0.0.1"),
             ev("rebalance_started", 1000, "g", generation=0, reason="share group epoch bumped to 1"),
             ev("generation_completed", 1000, "g", generation=1, protocol="simple", leader=None, protocol_type="share"),
             _sync(1000, "a", 1, [0, 1])]

    def share_described(parts):
        return ev("group_described", 5000, "g", group_type="share", state="Stable", protocol="simple", group_epoch=1,
                  assignment_epoch=1, members=[{"member_id": "a", "client_id": "c-a", "client_host": "/127.0.0.1",
                                                "member_epoch": 1, "assignment": [["t", p] for p in parts],
                                                "target_assignment": None}])
    (view,) = views(run(share + [share_described([0, 1])]))
    assert (view["agrees"], view["differences"], view["group_type"]) == (True, [], "share"), view
    (view,) = views(run(share + [share_described([1])]))
    assert view["agrees"] is False and view["differences"] == ["member a: the broker assigns [t-1], the monitor "
                                                               "[t-0, t-1]"], view
    desc = ev("group_described", 5000, "g", group_type="share", state="Empty", protocol="", members=[])
    (view,) = views(run(share + [desc]))
    assert (view["agrees"], view["reason"]) == (None, "no epoch to compare"), view
