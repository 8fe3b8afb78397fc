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


def _streams_group():
    """A streams group at epoch 2 (as __consumer_offsets gives it): members a (process p-1: active tasks 0_0, 0_1,
    standby 1_0) and b (process p-2: active 1_0, 1_1)."""
    out = [ev("join", 1000, "g", member_id=mid, client_id=f"c-{mid}", host="/127.0.0.1", protocols=["sticky"],
              topics=[], rebalance_timeout_ms=300_000, group_protocol="streams", process_id=process,
              topology_epoch=0, client_tags={}) for mid, process in (("a", "p-1"), ("b", "p-2"))]
    out += [ev("rebalance_started", 1000, "g", generation=1, reason="streams group epoch bumped to 2"),
            ev("generation_completed", 1000, "g", generation=2, protocol="sticky", leader=None,
               protocol_type="streams")]
    for mid, active, standby in (("a", [["0", 0], ["0", 1]], [["1", 0]]), ("b", [["1", 0], ["1", 1]], [])):
        out.append(ev("sync", 1000, "g", member_id=mid, generation=2, protocol="sticky", leader=None, assignment=[],
                      member_state="stable", active_tasks=active, standby_tasks=standby, warmup_tasks=[]))
    return out


def streams_described(epoch, members, ts=5000):
    """StreamsGroupDescribe's event (broker_facts/poller.described_event): {member: (process, active, standby)}."""
    return ev("group_described", ts, "g", group_type="streams", state="Stable", protocol="sticky", group_epoch=epoch,
              assignment_epoch=epoch, topology_epoch=0, members=[
                  {"member_id": mid, "client_id": f"c-{mid}", "client_host": "/127.0.0.1", "member_epoch": epoch,
                   "assignment": None, "target_assignment": None, "process_id": process, "active_tasks": active,
                   "standby_tasks": standby, "warmup_tasks": [], "target_active_tasks": active,
                   "target_standby_tasks": standby, "target_warmup_tasks": []}
                  for mid, (process, active, standby) in members.items()])


def test_a_streams_groups_description_is_compared_at_its_epoch():
    """A streams group described by StreamsGroupDescribe: compared at the same group epoch, its members, each
    member's process and current active and standby tasks against the reconstruction's."""
    same = {"a": ("p-1", [["0", 1], ["0", 0]], [["1", 0]]), "b": ("p-2", [["1", 0], ["1", 1]], [])}
    (view,) = views(run(_streams_group() + [streams_described(2, same)]))
    assert (view["agrees"], view["differences"], view["group_type"], view["broker_epoch"], view["monitor_epoch"],
            view["protocol"]) == (True, [], "streams", 2, 2, "sticky"), view
    other = {"a": ("p-9", [["0", 0]], []), "c": ("p-2", [["1", 0], ["1", 1]], [])}
    (view,) = views(run(_streams_group() + [streams_described(2, other)]))
    assert view["agrees"] is False and view["differences"] == [
        "member c: the broker has it, the monitor does not", "member b: the monitor has it, the broker does not",
        "member a: the broker names its process p-9, the monitor p-1",
        "member a: the broker gives it active tasks [0_0], the monitor [0_0, 0_1]",
        "member a: the broker gives it standby tasks [], the monitor [1_0]"], view
    (view,) = views(run(_streams_group() + [streams_described(3, same)]))
    assert (view["agrees"], view["reason"]) == (None, "the broker is at epoch 3, the monitor at 2: not read yet")


def test_a_streams_group_described_by_describe_groups_is_not_compared():
    """A broker without StreamsGroupDescribe: DescribeGroups names the group's type only (no epoch, no tasks)."""
    desc = ev("group_described", 5000, "g", group_type="streams", state=None, protocol=None, members=[])
    (view,) = views(run(_streams_group() + [desc]))
    assert (view["agrees"], view["differences"], view["reason"]) == (
        None, [], "a streams group's description without its epoch (DescribeGroups) is not compared"), view
