"""A member waiting on its JoinGroup is alive; a static member's restart keeps its membership.

The coordinator does not run a member's session timer while the member waits for its JoinGroup (and then
SyncGroup) response: the join phase is bounded by the rebalance timeout, and the session timer starts again
when it ends. A static member's new instance that joins without a member id is the same member to the
coordinator. Both were found on the bundled broker (Tansu holds a JoinGroup about 6 s, the session timeout of
the workload), where the monitor declared session timeouts for members that synced a moment later.
"""
from __future__ import annotations

import json
import os

from helpers.events import ev, heartbeats, hb, join, kinds, run, sync, tps, causes_of
from rebalance_monitor.core.settings import CoreSettings

DATA = os.path.join(os.path.dirname(__file__), "data", "tansu_static_restart.jsonl")
SESSION = 6000


def test_captured_tansu_static_restart_is_reconstructed_as_the_clients_saw_it():
    # Events of the `static_restart` workload on the bundled broker, as captured from the events topic.
    # static-1 rejoins at +7.06 s (with its id) and syncs generation 1 at +13.06 s, 6.006 s later: it waited in
    # JoinGroup all along. Then static-1 restarts (+13.1 s): its new instance joins without an id at +13.28 s
    # and syncs generation 1 again under the same id at +19.28 s, 6.2 s after the old instance's last request.
    events = [json.loads(line) for line in open(DATA)]
    synced: dict[int, set] = {}
    for e in events:
        if e["type"] == "sync":
            synced.setdefault(e["generation"], set()).add(e["member_id"])
    out = run(events, CoreSettings(settle_ms=10_000), disorder=1000)
    gens = kinds(out, "generation")
    assert {g["generation"]: set(g["members"]) for g in gens} == synced
    assert len(synced[1]) == 2
    assert not kinds(out, "member_timeout"), kinds(out, "member_timeout")


def test_a_member_waiting_in_join_group_longer_than_its_session_timeout_is_not_timed_out():
    events = [join(1000, "a", session=SESSION), join(1010, "b", session=SESSION),
              sync(1500, "a", 1, tps("t", 0, 1), "a"), sync(1501, "b", 1, tps("t", 2, 3), "a")]
    events += heartbeats(["a", "b"], 1, 2500, 4500, every=1000)
    events += [hb(5500, "a", 1, error="REBALANCE_IN_PROGRESS"), join(5510, "a", session=SESSION),
               hb(5520, "b", 1, error="REBALANCE_IN_PROGRESS"), join(5530, "b", session=SESSION),
               # the coordinator answers the joins 6.2 s later: longer than the session timeout
               sync(11_730, "a", 2, tps("t", 0, 1), "a"), sync(11_740, "b", 2, tps("t", 2, 3), "a")]
    events += heartbeats(["a", "b"], 2, 12_700, 30_000, every=1000)
    out = run(sorted(events, key=lambda e: e["ts"]))
    assert not kinds(out, "member_timeout")
    gens = kinds(out, "generation")
    assert [(g["generation"], g["members"]) for g in gens] == [(1, ["a", "b"]), (2, ["a", "b"])]


def test_a_member_that_joined_and_went_silent_times_out_a_session_after_its_round_completed():
    events = [join(1000, "a", session=SESSION), join(1010, "b", session=SESSION),
              sync(1500, "a", 1, tps("t", 0, 1), "a"), sync(1501, "b", 1, tps("t", 2, 3), "a")]
    events += heartbeats(["a", "b"], 1, 2500, 4500, every=1000)
    # b joins the next round and dies before its sync: only a syncs generation 2
    events += [hb(5500, "a", 1, error="REBALANCE_IN_PROGRESS"), join(5510, "a", session=SESSION),
               join(5530, "b", session=SESSION), sync(6000, "a", 2, tps("t", 0, 1), "a")]
    events += heartbeats(["a"], 2, 7000, 40_000, every=1000)
    out = run(sorted(events, key=lambda e: e["ts"]), CoreSettings(settle_ms=3000))
    timeouts = kinds(out, "member_timeout")
    assert [(t["member_id"], t["timeout"]) for t in timeouts] == [("b", "session")]
    # generation 2 completed (settled) at a's sync; b's session runs from there, not from its join
    assert timeouts[0]["deadline_ms"] == 6000 + SESSION
    assert [c["cause"] for c in kinds(out, "rebalance_started")[-1]["causes"]] == ["session_timeout"]


def _static_pair():
    events = [join(1000, "s1-a", group_instance_id="s1", session=SESSION),
              join(1010, "s2-a", group_instance_id="s2", session=SESSION),
              sync(1500, "s1-a", 1, tps("t", 0, 1), "s1-a", group_instance_id="s1"),
              sync(1501, "s2-a", 1, tps("t", 2, 3), "s1-a", group_instance_id="s2")]
    return events + heartbeats(["s1-a", "s2-a"], 1, 2500, 8500, every=1000)


def _rejoin_without_id(ts, instance):
    return join(ts, "", group_instance_id=instance, session=SESSION, client_id=f"client-{instance}",
                reason="initial join")


def test_static_restart_answered_with_a_new_member_id_and_the_same_generation_is_no_rebalance():
    # Apache Kafka: the new instance joins without a member id, gets a new one and the current generation
    events = _static_pair() + heartbeats(["s1-a"], 1, 9500, 15_500, every=1000)
    events += [_rejoin_without_id(9000, "s2"),
               ev("poll", 9200, member_id="s2-b", group_instance_id="s2", records=0),
               sync(9300, "s2-b", 1, tps("t", 2, 3), "s1-a", group_instance_id="s2")]
    events += heartbeats(["s2-b"], 1, 10_300, 15_300, every=1000)
    # later a real rebalance: the restarted member keeps its partitions
    events += [join(16_000, "s3", session=SESSION), hb(16_100, "s1-a", 1, error="REBALANCE_IN_PROGRESS"),
               join(16_110, "s1-a", session=SESSION, group_instance_id="s1"),
               join(16_120, "s2-b", session=SESSION, group_instance_id="s2"),
               sync(16_500, "s1-a", 2, tps("t", 0), "s1-a"), sync(16_501, "s2-b", 2, tps("t", 2, 3), "s1-a"),
               sync(16_502, "s3", 2, tps("t", 1), "s1-a")]
    out = run(sorted(events, key=lambda e: e["ts"]))
    assert not kinds(out, "member_timeout")
    assert [r["generation"] for r in kinds(out, "rebalance_started")] == [None, 1]
    gens = kinds(out, "generation")
    assert [(g["generation"], g["members"]) for g in gens] == [(1, ["s1-a", "s2-a"]), (2, ["s1-a", "s2-b", "s3"])]
    assert causes_of(gens[1]) == ["member_joined"]
    assert gens[1]["partitions_moved"] == 1  # t-1 to s3; s2's partitions stay with instance s2


def test_static_restart_answered_with_the_same_member_id_is_no_timeout():
    # Tansu: the new instance gets the old member id back, after holding the join about 6 s
    events = _static_pair() + heartbeats(["s1-a"], 1, 9500, 20_500, every=1000)
    events += [_rejoin_without_id(9000, "s2"),
               sync(15_200, "s2-a", 1, tps("t", 2, 3), "s1-a", group_instance_id="s2")]
    events += heartbeats(["s2-a"], 1, 16_200, 20_200, every=1000)
    out = run(sorted(events, key=lambda e: e["ts"]))
    assert not kinds(out, "member_timeout")
    assert len(kinds(out, "generation")) == 1
    assert [r["generation"] for r in kinds(out, "rebalance_started")] == [None]


def test_static_restart_answered_with_a_new_generation_is_caused_by_the_restart():
    events = _static_pair() + heartbeats(["s1-a"], 1, 9500, 9500, every=1000)
    events += [_rejoin_without_id(9000, "s2"), hb(10_500, "s1-a", 1, error="REBALANCE_IN_PROGRESS"),
               join(10_510, "s1-a", session=SESSION, group_instance_id="s1"),
               sync(11_000, "s2-b", 2, tps("t", 2, 3), "s1-a", group_instance_id="s2"),
               sync(11_010, "s1-a", 2, tps("t", 0, 1), "s1-a", group_instance_id="s1")]
    events += heartbeats(["s1-a", "s2-b"], 2, 12_000, 20_000, every=1000)
    out = run(sorted(events, key=lambda e: e["ts"]))
    assert not kinds(out, "member_timeout")
    gens = kinds(out, "generation")
    assert [(g["generation"], g["members"]) for g in gens] == [(1, ["s1-a", "s2-a"]), (2, ["s1-a", "s2-b"])]
    assert "static_member_replaced" in causes_of(gens[1])
    assert gens[1]["partitions_moved"] == 0


def test_a_static_instance_that_never_comes_back_after_rejoining_still_times_out():
    # the new instance's join is never answered and it goes silent: the join bound (rebalance timeout plus
    # session timeout) ends its membership
    events = _static_pair() + [_rejoin_without_id(9000, "s2")]
    events += heartbeats(["s1-a"], 1, 9500, 60_000, every=1000)
    out = run(sorted(events, key=lambda e: e["ts"]))
    timeouts = kinds(out, "member_timeout")
    assert [(t["member_id"], t["timeout"]) for t in timeouts] == [("s2-a", "session")]
    assert timeouts[0]["deadline_ms"] == 9000 + 30_000 + SESSION


def test_a_pending_join_survives_the_state_round_trip():
    from rebalance_monitor.core.events import parse_event
    from rebalance_monitor.core.group import GroupMonitor

    settings = CoreSettings(settle_ms=10_000)
    parsed = sorted((parse_event(json.loads(line)) for line in open(DATA)), key=lambda e: e.ts)
    straight = GroupMonitor(parsed[0].group, settings)
    a = [r for p in parsed for r in straight.process(p)]
    g = GroupMonitor(parsed[0].group, settings)
    b = []
    for p in parsed:  # as the Spark job does between micro-batches: through JSON every event
        g = GroupMonitor.from_state(json.loads(json.dumps(g.to_state())), settings)
        b.extend(g.process(p))
    assert a == b and kinds(a, "generation")


def _anonymous(ts, client, **kw):
    return join(ts, "", session=SESSION, client_id=client, host="/10.0.0.1", reason="initial join", **kw)


def test_members_answered_with_an_id_straight_away_take_what_their_id_less_join_declared():
    # A coordinator that answers the first JoinGroup with a member id straight away (static members, on Apache
    # Kafka and Tansu): the monitor sees the id first on a poll or the sync. The generation completes at the last sync (no wait for
    # the settle timer), with the members' subscriptions (so the expected assignment is recomputed) and their
    # session timeouts (so a silent member times out).
    from rebalance_monitor.core.events import parse_event
    from rebalance_monitor.core.group import GroupMonitor

    events = [_anonymous(1000, "c-a", protocols=("roundrobin", "range")),
              _anonymous(1010, "c-b", protocols=("range", "roundrobin")),
              ev("poll", 1200, member_id="a", client_id="c-a", host="/10.0.0.1", records=0),
              sync(1500, "a", 0, tps("t", 0, 2), "a", protocol="roundrobin", client_id="c-a", host="/10.0.0.1"),
              sync(1510, "b", 0, tps("t", 1, 3), "a", protocol="roundrobin", client_id="c-b", host="/10.0.0.1")]
    events += heartbeats(["a", "b"], 0, 2500, 4500, every=1000) + heartbeats(["a"], 0, 5500, 20_500, every=1000)
    g = GroupMonitor("g", CoreSettings(settle_ms=10_000))
    emitted_at = {}
    out = []
    for e in events:
        recs = g.process(parse_event(e))
        for r in recs:
            emitted_at.setdefault(r["kind"], e["ts"])
        out.extend(recs)
    out.extend(g.advance_to(21_000))
    gen = kinds(out, "generation")[0]
    assert emitted_at["generation"] == 1510  # at the last sync, not when the settle timer fires
    assert gen["members"] == ["a", "b"] and gen["protocol"] == "roundrobin"
    assert sorted((c["cause"], c.get("member_id")) for c in gen["causes"]) == [("member_joined", "a"),
                                                                               ("member_joined", "b")]
    assert gen["expected_assignment"] is not None and gen["mismatched_partitions"] == 0
    assert gen["expected_reason"].startswith("partition counts inferred")  # no topic_partitions events here
    assert g.members["a"].protocols == ("roundrobin", "range") and g.members["a"].topics == ("t",)
    timeouts = kinds(out, "member_timeout")
    assert [(t["member_id"], t["deadline_ms"]) for t in timeouts] == [("b", 4501 + SESSION)]


def test_a_static_member_first_seen_on_its_sync_is_tracked_from_its_join():
    events = [_anonymous(1000, "c-s1", group_instance_id="s1"), _anonymous(1010, "c-s2", group_instance_id="s2"),
              sync(4000, "s2-a", 0, tps("t", 2, 3), "s1-a", client_id="c-s2", host="/10.0.0.1",
                   group_instance_id="s2"),
              sync(4010, "s1-a", 0, tps("t", 0, 1), "s1-a", client_id="c-s1", host="/10.0.0.1",
                   group_instance_id="s1")]
    events += heartbeats(["s1-a", "s2-a"], 0, 5000, 20_000, every=1000)
    out = run(events)
    gen = kinds(out, "generation")[0]
    # matched by instance id and client: s2's sync came first but answers s2's join
    assert {c.get("member_id"): c.get("client_id") for c in gen["causes"]} == {"s1-a": "c-s1", "s2-a": "c-s2"}
    assert gen["expected_assignment"] is not None and gen["mismatched_partitions"] == 0
    assert gen["expected_reason"].startswith("partition counts inferred")  # no topic_partitions events here
    assert not kinds(out, "member_timeout")


def _three_way_round():
    """a, b, c form generation 1; a (the leader) syncs first, c last."""
    events = [join(1000, "a", session=SESSION), join(1010, "b", session=SESSION), join(1020, "c", session=SESSION),
              sync(4000, "a", 1, tps("t", 0, 1), "a"), sync(4005, "b", 1, tps("t", 2, 3), "a")]
    return events


def test_an_unprompted_rejoin_after_the_sync_is_answered_with_the_generation_being_completed():
    # kafka-python rejoins right after its sync when its metadata snapshot moved (no reason, same
    # subscription); seen on Tansu in the mixed_assignors workload. The coordinator answers with the same
    # generation: the generation keeps every member's assignment, and no rebalance starts.
    events = _three_way_round() + [join(4006, "b", session=SESSION), sync(4010, "c", 1, tps("t", 4, 5), "a"),
                                   sync(7010, "b", 1, tps("t", 2, 3), "a")]
    events += heartbeats(["a", "b", "c"], 1, 8000, 20_000, every=1000)
    out = run(sorted(events, key=lambda e: e["ts"]))
    gens = kinds(out, "generation")
    assert [(g["generation"], g["completed_ms"]) for g in gens] == [(1, 4010)]
    assert gens[0]["assignment"] == {"a": [["t", 0], ["t", 1]], "b": [["t", 2], ["t", 3]], "c": [["t", 4], ["t", 5]]}
    assert gens[0]["mismatched_partitions"] == 0
    assert [r["generation"] for r in kinds(out, "rebalance_started")] == [None]
    assert not kinds(out, "member_timeout")


def test_an_unprompted_rejoin_answered_with_a_new_generation_is_its_cause():
    events = _three_way_round() + [join(4006, "a", session=SESSION), sync(4010, "c", 1, tps("t", 4, 5), "a"),
                                   hb(5000, "b", 1, error="REBALANCE_IN_PROGRESS"),
                                   hb(5001, "c", 1, error="REBALANCE_IN_PROGRESS"),
                                   sync(8000, "a", 2, tps("t", 0, 1), "a"), sync(8001, "b", 2, tps("t", 2, 3), "a"),
                                   sync(8002, "c", 2, tps("t", 4, 5), "a")]
    out = run(sorted(events, key=lambda e: e["ts"]))
    gens = kinds(out, "generation")
    assert [g["generation"] for g in gens] == [1, 2]
    assert gens[0]["assignment"] is not None and gens[0]["completed_ms"] == 4010
    assert [(c["cause"], c.get("member_id")) for c in gens[1]["causes"]] == [("leader_rejoin", "a")]
    assert gens[1]["started_ms"] == 4006
