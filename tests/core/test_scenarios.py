"""Scenario tests of the reconstruction core, written as event lists."""
from __future__ import annotations

import json
import random

import pytest

from helpers.events import (
    ev, heartbeats, hb, join, kinds, leave, poll, run, stable_group, sync, tps, causes_of,
)
from rebalance_monitor.core.settings import CoreSettings


def test_steady_group_forms_one_generation_and_nothing_else():
    events = stable_group(("a", "b")) + heartbeats(["a", "b"], 1, 3000, 120_000)
    out = run(events)
    gens = kinds(out, "generation")
    assert len(gens) == 1
    g = gens[0]
    assert g["generation"] == 1 and g["members"] == ["a", "b"] and g["leader"] == "a"
    assert g["started_ms"] == 1000 and g["completed_ms"] == 1501 and g["duration_ms"] == 501
    assert causes_of(g) == ["member_joined", "member_joined"]
    assert g["assignment"] == {"a": [["t", 0], ["t", 1]], "b": [["t", 2], ["t", 3]]}
    assert g["partitions_moved"] == 0
    assert not kinds(out, "member_timeout") and not kinds(out, "storm")


def test_member_joining_starts_a_rebalance_caused_by_it():
    events = stable_group(("a", "b")) + heartbeats(["a", "b"], 1, 3000, 9000)
    events += [
        join(10_000, "c", client_id="scaler", host="/10.9.9.9"),
        hb(10_100, "a", 1, error="REBALANCE_IN_PROGRESS"),
        join(10_200, "a", owned=tps("t", 0, 1)),
        join(10_300, "b", owned=tps("t", 2, 3)),
        sync(10_600, "a", 2, tps("t", 0, 1), "a"),
        sync(10_610, "b", 2, tps("t", 2), "a"),
        sync(10_620, "c", 2, tps("t", 3), "a"),
    ] + heartbeats(["a", "b", "c"], 2, 12_000, 20_000)
    out = run(events)
    gens = kinds(out, "generation")
    assert [g["generation"] for g in gens] == [1, 2]
    g2 = gens[1]
    assert g2["causes"] == [{"cause": "member_joined", "member_id": "c", "client_id": "scaler", "host": "/10.9.9.9"}]
    assert g2["started_ms"] == 10_000 and g2["duration_ms"] == 620
    assert g2["members"] == ["a", "b", "c"]
    assert g2["partitions_moved"] == 1  # t-3 went from b to c
    assert g2["imbalance"] == 1
    started = kinds(out, "rebalance_started")
    assert [s["generation"] for s in started] == [None, 1]


def test_clean_leave_is_member_left_with_its_reason():
    events = stable_group(("a", "b")) + heartbeats(["a", "b"], 1, 3000, 9000)
    events += [leave(9500, "b"), join(9700, "a", owned=tps("t", 0, 1)),
               sync(9900, "a", 2, tps("t", 0, 1, 2, 3), "a")] + heartbeats(["a"], 2, 12_000, 30_000)
    out = run(events)
    g2 = kinds(out, "generation")[1]
    assert g2["causes"][0]["cause"] == "member_left"
    assert g2["causes"][0]["member_id"] == "b"
    assert g2["causes"][0]["reason"] == "the consumer is being closed"
    assert not kinds(out, "member_timeout")  # b left cleanly: its silence afterwards is no timeout


def test_crash_session_timeout_fires_without_further_events_from_that_member():
    # b crashes after its heartbeat at 6001; only a keeps heartbeating; nobody rejoins yet.
    events = stable_group(("a", "b")) + heartbeats(["a", "b"], 1, 3000, 6000) + heartbeats(["a"], 1, 9000, 30_000)
    out = run(events)
    timeouts = kinds(out, "member_timeout")
    assert len(timeouts) == 1
    t = timeouts[0]
    assert t["member_id"] == "b" and t["timeout"] == "session"
    assert t["last_seen_ms"] == 6001 and t["deadline_ms"] == 16_001
    assert t["detected_ms"] >= t["deadline_ms"]
    started = kinds(out, "rebalance_started")[-1]
    assert started["started_ms"] == 16_001 and started["causes"][0]["cause"] == "session_timeout"


def test_a_silent_group_gets_its_timeout_from_other_groups_event_time():
    # Group g goes completely silent; only group other keeps producing events.
    events = stable_group(("a",)) + heartbeats(["a"], 1, 3000, 6000)
    events += stable_group(("x",), group="other", start=6500) + heartbeats(["x"], 1, 9000, 40_000, group="other")
    events.sort(key=lambda e: e["ts"])
    out = run(events)
    t = [r for r in kinds(out, "member_timeout") if r["group"] == "g"]
    assert len(t) == 1 and t[0]["member_id"] == "a" and t[0]["deadline_ms"] == 16_000


def test_slow_consumer_poll_timeout_then_its_leave_is_reported_once():
    events = stable_group(("a", "b"))
    # both poll and heartbeat; b stops polling at 5000 but its heartbeat thread goes on
    for t in range(2000, 40_000, 1000):
        events.append(hb(t, "a", 1))
        events.append(hb(t + 1, "b", 1))
        events.append(poll(t + 2, "a"))
        if t <= 5000:
            events.append(poll(t + 3, "b"))
    events.append(leave(35_010, "b", reason="consumer poll timeout has expired."))
    events.sort(key=lambda e: e["ts"])
    out = run(events)
    timeouts = kinds(out, "member_timeout")
    assert len(timeouts) == 1
    t = timeouts[0]
    assert t["timeout"] == "poll" and t["member_id"] == "b"
    assert t["last_seen_ms"] == 5003 and t["deadline_ms"] == 35_003
    started = kinds(out, "rebalance_started")[-1]
    assert started["causes"][0]["cause"] == "poll_timeout"


def test_poll_timeout_leave_without_poll_events_still_counts_as_poll_timeout():
    events = stable_group(("a", "b")) + heartbeats(["a", "b"], 1, 3000, 9000)
    events += [leave(9500, "b", reason="consumer poll timeout has expired."), join(9600, "a"),
               sync(9700, "a", 2, tps("t", 0, 1, 2, 3), "a")]
    out = run(events)
    assert [t["timeout"] for t in kinds(out, "member_timeout")] == ["poll"]
    assert causes_of(kinds(out, "generation")[1]) == ["poll_timeout"]


def _leader_rejoin_loop(n, start, every=20_000):
    events = stable_group(("a", "b"), start=start)
    gen = 1
    t = start + 2000
    for _ in range(n):
        t += every
        gen += 1
        events += [join(t, "a", owned=tps("t", 0, 1)), join(t + 50, "b", owned=tps("t", 2, 3)),
                   sync(t + 100, "a", gen, tps("t", 0, 1), "a"), sync(t + 110, "b", gen, tps("t", 2, 3), "a")]
        events += heartbeats(["a", "b"], gen, t + 1000, t + every - 1000)
    return events, t


def test_leader_rejoin_loop_becomes_a_storm_and_then_ends():
    settings = CoreSettings(storm_window_ms=120_000, storm_min_rebalances=4)
    events, t = _leader_rejoin_loop(6, 1000)
    # then calm: heartbeats only, long enough for the window to pass
    events += heartbeats(["a", "b"], 7, t + 20_000, t + 200_000)
    out = run(events, settings)
    gens = kinds(out, "generation")
    assert len(gens) == 7
    assert all(causes_of(g) == ["leader_rejoin"] for g in gens[1:])
    storms = kinds(out, "storm")
    assert len(storms) == 2
    begin, end = storms
    assert begin["ended_ms"] is None and begin["rebalances"] == 4 and begin["window_ms"] == 120_000
    assert begin["started_ms"] == gens[3]["completed_ms"]
    assert end["started_ms"] == begin["started_ms"]
    completions = [g["completed_ms"] for g in gens]
    assert end["ended_ms"] == completions[-4] + 120_000
    assert end["rebalances"] == 7  # the four that started it and the three completed while it lasted


def test_static_member_restart_inside_session_timeout_is_not_a_rebalance():
    events = [join(1000, "s1-a", group_instance_id="s1"), join(1010, "s2-a", group_instance_id="s2"),
              sync(1500, "s1-a", 1, tps("t", 0, 1), "s1-a"), sync(1501, "s2-a", 1, tps("t", 2, 3), "s1-a")]
    events += heartbeats(["s1-a", "s2-a"], 1, 3000, 9000)
    # s2 restarts: its process goes away (static members send no LeaveGroup) and comes back with a new id
    events += heartbeats(["s1-a"], 1, 12_000, 14_000)
    events += [join(14_500, "s2-b", group_instance_id="s2"), sync(14_600, "s2-b", 1, tps("t", 2, 3), "s1-a")]
    events += heartbeats(["s1-a", "s2-b"], 1, 15_000, 60_000)
    out = run(events)
    assert len(kinds(out, "generation")) == 1
    assert not kinds(out, "member_timeout")
    assert not [r for r in kinds(out, "rebalance_started") if r["generation"] == 1]


def test_static_member_back_after_its_session_timeout_is_a_rebalance():
    events = [join(1000, "s1-a", group_instance_id="s1"), join(1010, "s2-a", group_instance_id="s2"),
              sync(1500, "s1-a", 1, tps("t", 0, 1), "s1-a"), sync(1501, "s2-a", 1, tps("t", 2, 3), "s1-a")]
    events += heartbeats(["s1-a", "s2-a"], 1, 3000, 6000) + heartbeats(["s1-a"], 1, 9000, 30_000)
    events += [join(30_500, "s2-b", group_instance_id="s2"), join(30_600, "s1-a", group_instance_id="s1"),
               sync(30_700, "s1-a", 2, tps("t", 0, 1), "s1-a"), sync(30_701, "s2-b", 2, tps("t", 2, 3), "s1-a")]
    out = run(events)
    assert [t["member_id"] for t in kinds(out, "member_timeout")] == ["s2-a"]
    g2 = kinds(out, "generation")[1]
    assert "session_timeout" in causes_of(g2)
    assert g2["partitions_moved"] == 0  # same instance id gets the same partitions back


def test_disorder_inside_the_bound_and_duplicates_give_the_ordered_output():
    events, _ = _leader_rejoin_loop(3, 1000)
    events += stable_group(("x", "y"), group="h", start=5000) + heartbeats(["x", "y"], 1, 7000, 60_000, group="h")
    events.sort(key=lambda e: e["ts"])
    ordered = run(events)
    rng = random.Random(7)
    shuffled = list(events)
    # local disorder: swap neighbours within 1.5 s, and duplicate every 10th event
    for i in range(len(shuffled) - 1):
        if abs(shuffled[i]["ts"] - shuffled[i + 1]["ts"]) < 1500 and rng.random() < 0.5:
            shuffled[i], shuffled[i + 1] = shuffled[i + 1], shuffled[i]
    noisy = []
    for i, e in enumerate(shuffled):
        noisy.append(e)
        if i % 10 == 0:
            noisy.append(dict(e))
    disordered = run(noisy)
    assert _stable(disordered) == _stable(ordered)


def _stable(records):
    """Records with the fields that depend on when the clock was observed removed."""
    out = []
    for r in records:
        r = dict(r)
        r.pop("detected_ms", None)
        if r["kind"] == "member_timeout":
            r.pop("ts", None)
        out.append(json.dumps(r, sort_keys=True))
    return sorted(out)


def test_late_events_beyond_the_bound_are_rejected_not_dropped():
    from rebalance_monitor.core.events import parse_event
    from rebalance_monitor.core.reconstruct import Reconstructor

    recon = Reconstructor(max_disorder_ms=1000)
    for e in stable_group(("a",)) + heartbeats(["a"], 1, 3000, 20_000):
        recon.feed(parse_event(e))
    recon.feed(parse_event(hb(2000, "a", 1)))
    assert recon.stats.rejected == {"late_event": 1}
    assert recon.rejects[-1].reason == "late_event"


def test_coordinator_only_events_reconstruct_generations_and_causes():
    members = [{"member_id": "m1", "client_id": "c1", "host": "/h1", "session_timeout_ms": 10_000,
                "topics": ["t"], "assignment": [["t", 0], ["t", 1]]},
               {"member_id": "m2", "client_id": "c2", "host": "/h2", "session_timeout_ms": 10_000,
                "topics": ["t"], "assignment": [["t", 2], ["t", 3]]}]
    events = [
        ev("rebalance_started", 1000, generation=0, reason="Adding new member m1"),
        ev("generation_completed", 1800, generation=1, protocol="range", leader="m1", members=members),
        ev("member_removed", 50_000, member_id="m2", cause="session_timeout",
           reason="removing member m2 on heartbeat expiration"),
        ev("rebalance_started", 50_001, generation=1, reason="removing member m2 on heartbeat expiration"),
        ev("generation_completed", 52_000, generation=2, protocol="range", leader="m1",
           members=[dict(members[0], assignment=[["t", 0], ["t", 1], ["t", 2], ["t", 3]])]),
    ]
    out = run(events)
    gens = kinds(out, "generation")
    assert [g["generation"] for g in gens] == [1, 2]
    assert gens[0]["duration_ms"] == 800 and gens[0]["members"] == ["m1", "m2"]
    g2 = gens[1]
    assert g2["causes"] == [{"cause": "session_timeout", "member_id": "m2", "client_id": "c2", "host": "/h2",
                             "reason": "removing member m2 on heartbeat expiration"}]
    assert g2["started_ms"] == 50_000 and g2["duration_ms"] == 2000
    assert g2["partitions_moved"] == 2
    assert [t["member_id"] for t in kinds(out, "member_timeout")] == ["m2"]


def test_coordinator_facts_win_over_client_events():
    events = stable_group(("a", "b"))
    # the coordinator reports generation 1 with the same members; both feeds present
    events.insert(0, ev("rebalance_started", 990, generation=0, reason="Adding new member a"))
    events.append(ev("generation_completed", 1600, generation=1, protocol="range", leader="a",
                     members=[{"member_id": "a"}, {"member_id": "b"}]))
    out = run(events)
    gens = kinds(out, "generation")
    assert len(gens) == 1
    g = gens[0]
    assert g["started_ms"] == 990 and g["completed_ms"] == 1600
    assert g["assignment"] == {"a": [["t", 0], ["t", 1]], "b": [["t", 2], ["t", 3]]}


def test_group_becomes_empty_when_the_last_member_leaves():
    events = stable_group(("a",)) + [leave(5000, "a")]
    out = run(events, status=True)
    status = kinds(out, "group_status")[-1]
    assert status["state"] == "Empty" and status["members"] == 0
    gens = kinds(out, "generation")
    # Kafka bumps the generation as the group goes empty: a record with no members, naming who left
    assert [(r["generation"], r["members"]) for r in gens] == [(1, ["a"]), (2, [])]
    assert [(c["cause"], c["member_id"]) for c in gens[-1]["causes"]] == [("member_left", "a")]
    assert gens[-1]["assignment"] == {} and gens[-1]["expected_assignment"] == {}
    assert (gens[-1]["mismatched_partitions"], gens[-1]["expected_reason"]) == (0, "no members: the group went empty")


def test_state_round_trip_mid_stream_gives_the_same_output():
    from rebalance_monitor.core.events import parse_event
    from rebalance_monitor.core.group import GroupMonitor

    events, _ = _leader_rejoin_loop(5, 1000)
    settings = CoreSettings(storm_window_ms=100_000, storm_min_rebalances=3)
    parsed = [parse_event(e) for e in sorted(events, key=lambda e: e["ts"])]
    straight = GroupMonitor("g", settings)
    a = []
    for p in parsed:
        a.extend(straight.process(p))
    b = []
    g = GroupMonitor("g", settings)
    for i, p in enumerate(parsed):
        if i % 17 == 0:
            g = GroupMonitor.from_state(json.loads(json.dumps(g.to_state())), settings)
        b.extend(g.process(p))
    assert a == b
    assert len(json.dumps(straight.to_state())) < 4096


def test_heartbeat_gap_ratio_reports_the_longest_gap():
    events = stable_group(("a", "b")) + [hb(2000, "a", 1), hb(2001, "b", 1), hb(5000, "a", 1), hb(9001, "b", 1)]
    out = run(events, status=True)
    st = kinds(out, "group_status")[-1]
    assert st["heartbeat_gap_ratios"]["b"] == 0.7  # 7000 ms / 10000 ms
    assert st["max_heartbeat_gap_ratio"] == 0.7


def test_partition_count_change_is_a_metadata_change():
    events = [ev("topic_partitions", 500, group="", topics={"t": 4})] + stable_group(("a", "b"))
    events += heartbeats(["a", "b"], 1, 3000, 6000)
    events += [ev("topic_partitions", 7000, group="", topics={"t": 6}),
               join(7100, "a", owned=tps("t", 0, 1), reason="cached metadata has changed"),
               join(7200, "b", owned=tps("t", 2, 3)),
               sync(7300, "a", 2, tps("t", 0, 1, 2), "a"), sync(7301, "b", 2, tps("t", 3, 4, 5), "a")]
    out = run(events)
    g2 = kinds(out, "generation")[1]
    assert causes_of(g2) == ["metadata_change"]
    assert g2["started_ms"] == 7000


def test_expected_assignment_judges_each_generation():
    # range over 5 partitions and 2 members gives a: 0,1,2 and b: 3,4; the group got something else
    events = [ev("topic_partitions", 500, group="", topics={"t": 5}),
              join(1000, "a"), join(1010, "b"),
              sync(1500, "a", 1, tps("t", 0, 1), "a"), sync(1501, "b", 1, tps("t", 3, 4), "a")]
    out = run(events)
    g = kinds(out, "generation")[0]
    assert g["expected_assignment"] == {"a": [["t", 0], ["t", 1], ["t", 2]], "b": [["t", 3], ["t", 4]]}
    assert g["mismatched_partitions"] == 1  # t-2: expected on a, owned by nobody
    assert g["unassigned_partitions"] == 1
    assert g["imbalance"] == 0


def test_a_correct_assignment_has_no_mismatch_and_a_custom_assignor_has_no_expectation():
    events = [ev("topic_partitions", 500, group="", topics={"t": 4})] + stable_group(("a", "b"))
    events += stable_group(("x", "y"), group="custom", protocol="my-assignor")
    out = run(events)
    by_group = {g["group"]: g for g in kinds(out, "generation")}
    assert by_group["g"]["mismatched_partitions"] == 0 and by_group["g"]["expected_reason"] is None
    assert by_group["custom"]["expected_assignment"] is None
    assert by_group["custom"]["expected_reason"] == "unknown assignor: my-assignor"


def test_cooperative_sticky_revoke_first_round_is_what_kafka_computes():
    # c joins a cooperative group: in the first round nobody gets a partition someone else still owns
    events = [ev("topic_partitions", 500, group="", topics={"t": 4})]
    events += stable_group(("a", "b"), protocol="cooperative-sticky")
    events += [join(5000, "c", protocols=("cooperative-sticky",)),
               join(5010, "a", protocols=("cooperative-sticky",), owned=tps("t", 0, 1), generation=1),
               join(5020, "b", protocols=("cooperative-sticky",), owned=tps("t", 2, 3), generation=1),
               sync(5100, "a", 2, tps("t", 0, 1), "a", protocol="cooperative-sticky"),
               sync(5101, "b", 2, tps("t", 2), "a", protocol="cooperative-sticky"),
               sync(5102, "c", 2, [], "a", protocol="cooperative-sticky")]
    out = run(events)
    g2 = kinds(out, "generation")[1]
    # the partition that must move (t-3, from b) is revoked first and assigned in the next round
    assert g2["expected_assignment"] == {"a": [["t", 0], ["t", 1]], "b": [["t", 2]], "c": []}
    assert g2["mismatched_partitions"] == 0
    assert g2["unassigned_partitions"] == 1


def test_a_rebalance_seen_only_through_syncs_waits_for_every_live_member():
    # A broker that rebalances when a static member comes back (Tansu does; Apache Kafka does not): the
    # monitor sees no join for the new round, only syncs. The generation must hold both members.
    events = [join(1000, "s1-a", group_instance_id="s1"), join(1010, "s2-a", group_instance_id="s2"),
              sync(1500, "s1-a", 1, tps("t", 0, 1), "s1-a"), sync(1501, "s2-a", 1, tps("t", 2, 3), "s1-a")]
    events += heartbeats(["s1-a", "s2-a"], 1, 3000, 6000)
    events += [join(7000, "s2-b", group_instance_id="s2"),  # replaces s2-a without a rebalance (ours)
               sync(8000, "s1-a", 2, tps("t", 0, 1), "s1-a"),  # ...but the broker formed generation 2
               sync(8300, "s2-b", 2, tps("t", 2, 3), "s1-a")]
    out = run(events)
    gens = kinds(out, "generation")
    assert [g["generation"] for g in gens] == [1, 2]
    assert gens[1]["members"] == ["s1-a", "s2-b"] and gens[1]["completed_ms"] == 8300


def test_a_rebalance_shortly_after_a_coordinator_move_is_attributed_to_it():
    from rebalance_monitor.core.coordinator_placement import offsets_partition_for

    part = offsets_partition_for("g")
    events = stable_group(("a", "b")) + heartbeats(["a", "b"], 1, 2000, 8000)
    # the broker log says a new coordinator took over the group's __consumer_offsets partition (group "": it
    # names only the partition), then the members rejoin
    events += [ev("coordinator_change", 9000, group="", partition=part, action="elected", broker=3),
               ev("coordinator_change", 9000, group="", partition=(part + 1) % 50, action="elected", broker=3),
               hb(9500, "a", 1, error="NOT_COORDINATOR"),
               join(12_000, "a", reason="rebalance failed due to the coordinator moved"),
               join(12_010, "b"),
               sync(12_500, "a", 2, tps("t", 0, 1), "a"), sync(12_501, "b", 2, tps("t", 2, 3), "a")]
    out = run(events)
    g2 = kinds(out, "generation")[1]
    assert "coordinator_change" in causes_of(g2)
    coord = kinds(out, "coordinator")
    assert [(c["partition"], c["broker"], c["action"]) for c in coord] == [(part, 3, "elected")]


def test_an_abandoned_group_whose_members_all_time_out_goes_empty_and_is_pruned():
    from rebalance_monitor.core.events import parse_event
    from rebalance_monitor.core.reconstruct import Reconstructor

    events = stable_group(("a", "b", "c")) + heartbeats(["a", "b", "c"], 1, 2000, 5000)
    # ...then nothing more from this group; another group keeps event time moving for a long while
    events += stable_group(("x",), group="alive", start=6000) + heartbeats(["x"], 1, 8000, 400_000, group="alive")
    events.sort(key=lambda e: e["ts"])
    recon = Reconstructor(CoreSettings(group_idle_ttl_ms=120_000), max_disorder_ms=1000)
    recon.prune_every = 50
    out = []
    for e in events:
        out.extend(recon.feed(parse_event(e)))
    out.extend(recon.finish())
    assert sorted(t["member_id"] for t in kinds(out, "member_timeout") if t["group"] == "g") == ["a", "b", "c"]
    assert "g" not in recon.groups, "the abandoned group must leave state after its idle TTL"
    assert "alive" in recon.groups
    gens = kinds([r for r in out if r["group"] == "g"], "generation")
    # the group went empty when the last session expired: Kafka's generation 2, no members, every timeout named
    assert [(r["generation"], r["members"]) for r in gens] == [(1, ["a", "b", "c"]), (2, [])]
    assert sorted((c["cause"], c["member_id"]) for c in gens[-1]["causes"]) == [
        ("session_timeout", m) for m in ("a", "b", "c")]


def test_kip848_member_revoking_at_its_old_epoch_stays_in_the_new_one():
    """What `__consumer_offsets` held of a real KIP-848 group (Kafka 4.4, librdkafka) when the machine was busy: the
    new member's record at epoch 3 came before the old member's revocation (a sync of epoch 2 with fewer
    partitions) and its move to epoch 3. The old member is no straggler that failed to rejoin: KIP-848 members
    never rejoin, each one reaches the new epoch with a sync of its own; the epoch is settled when each member's
    record says it is stable in it (a member waiting for partitions has an empty assignment until then)."""
    k848 = {"group_protocol": "consumer"}
    t = 10_000
    events = [join(t, "old", **k848), ev("rebalance_started", t, generation=1, reason="group epoch bumped to 2"),
              ev("generation_completed", t, generation=2, protocol_type="consumer"),
              sync(t, "old", 2, tps("t", 0, 1, 2, 3), None, protocol=None, member_state="stable"),
              join(t + 1100, "new", **k848),
              ev("rebalance_started", t + 1100, generation=2, reason="group epoch bumped to 3"),
              ev("generation_completed", t + 1100, generation=3, protocol_type="consumer"),
              # waits for partitions "old" still holds
              sync(t + 1100, "new", 3, [], None, protocol=None, member_state="unreleased_partitions"),
              # revoking, still at epoch 2
              sync(t + 2000, "old", 2, tps("t", 0, 1), None, protocol=None, member_state="unrevoked_partitions"),
              sync(t + 2010, "old", 3, tps("t", 0, 1), None, protocol=None, member_state="stable"),
              sync(t + 2080, "new", 3, tps("t", 2, 3), None, protocol=None, member_state="stable")]
    gens = kinds(run(events), "generation")
    assert [(g["generation"], g["members"]) for g in gens] == [(2, ["old"]), (3, ["new", "old"])]
    assert gens[1]["assignment"] == {"new": [["t", 2], ["t", 3]], "old": [["t", 0], ["t", 1]]}
    assert causes_of(gens[1]) == ["member_joined"]


@pytest.mark.parametrize("protocol", ["range", "roundrobin", "sticky", "cooperative-sticky", "uniform"])
def test_a_generation_of_no_known_member_is_reported_not_a_crash(protocol):
    """A coordinator's generation without a member list, for a group known only by one client heartbeat: the
    assignor has no member to assign to (sticky divided by zero there, and the exception stopped the group)."""
    out = run([hb(1000, "a", 1), ev("generation_completed", 2000, generation=2, protocol=protocol),
               hb(60_000, "a", 2)])  # (past the settle time)
    gens = kinds(out, "generation")
    assert [g["generation"] for g in gens] == [2]


def test_an_assignor_that_fails_leaves_the_expected_assignment_out_and_says_why(monkeypatch):
    from rebalance_monitor.core import expected

    def broken(*_a, **_k):
        raise RuntimeError("boom")

    monkeypatch.setattr(expected, "assign", broken)
    out = run(stable_group(("a", "b")))
    gen = kinds(out, "generation")[0]
    assert gen["expected_assignment"] is None and gen["expected_reason"] == "assignor failed: RuntimeError: boom"
