"""`client_metrics` snapshots (Java consumers: the KIP-714 broker plugin, the client metrics reporter) drive a member's
session and poll deadlines and its heartbeat gap ratio as evidence of when its last heartbeat and poll were."""
from __future__ import annotations

from helpers.events import ev, kinds, leave, run

SESSION = 10_000
POLL = 30_000


def generation(ts, members, gen=1):
    infos = [{"member_id": m, "client_id": f"client-{m}", "host": "127.0.0.1", "session_timeout_ms": SESSION,
              "rebalance_timeout_ms": POLL, "topics": ["t"], "assignment": [["t", i]]} for i, m in enumerate(members)]
    return [ev("rebalance_started", ts - 500, generation=gen - 1, reason=f"Adding new member {members[0]}"),
            ev("generation_completed", ts, generation=gen, protocol="range", leader=members[0], members=infos)]


def snapshot(ts, member, hb_ago=None, poll_ago=None, client_id=None, **kw):
    fields = {"member_id": member, "client_id": client_id or f"client-{member}", "source": "kip714",
              "interval_ms": 5000, **kw}
    if hb_ago is not None:
        fields["last_heartbeat_ms_ago"] = hb_ago
    if poll_ago is not None:
        fields["last_poll_ms_ago"] = poll_ago
    return ev("client_metrics", ts, **fields)


def test_a_killed_member_times_out_a_session_after_its_last_reported_heartbeat():
    events = generation(1000, ["a", "b"])
    for t in range(5000, 40_001, 5000):  # snapshots every 5 s; b's stop after 15 s (kill -9)
        events.append(snapshot(t, "a", hb_ago=1000, poll_ago=0))
        if t <= 15_000:
            events.append(snapshot(t + 1, "b", hb_ago=2000, poll_ago=0))
    out = run(events)
    timeouts = kinds(out, "member_timeout")
    assert [(t["member_id"], t["timeout"]) for t in timeouts] == [("b", "session")]
    assert timeouts[0]["last_seen_ms"] == 15_001 - 2000  # the snapshot's time less "last heartbeat 2 s ago"
    assert timeouts[0]["deadline_ms"] == 15_001 - 2000 + SESSION
    started = kinds(out, "rebalance_started")[-1]
    assert started["causes"][0]["cause"] == "session_timeout" and started["causes"][0]["member_id"] == "b"
    assert started["causes"][0]["client_id"] == "client-b"


def test_snapshots_that_keep_coming_are_no_timeout_even_when_spaced_wider_than_heartbeats():
    events = generation(1000, ["a"])
    events += [snapshot(t, "a", hb_ago=3000, poll_ago=100) for t in range(5000, 60_001, 9000)]
    assert not kinds(run(events), "member_timeout")


def test_the_gap_ratio_is_the_open_gap_a_snapshot_shows_not_the_time_between_snapshots():
    events = generation(1000, ["a", "b"])
    events += [snapshot(5000, "a", hb_ago=1000), snapshot(5000, "b", hb_ago=1000),
               snapshot(14_000, "a", hb_ago=1000), snapshot(14_000, "b", hb_ago=7000)]
    status = kinds(run(events, status=True), "group_status")[-1]
    # a: 9 s between two snapshots is no gap of its heartbeats (1 s each time): 1 s open at the last one
    assert status["heartbeat_gap_ratios"] == {"a": 0.1, "b": 0.7}


def test_a_stalled_poll_loop_times_out_on_max_poll_interval_while_heartbeats_go_on():
    events = generation(1000, ["a"])
    stalled_at = 10_000
    for t in range(5000, 50_001, 5000):
        events.append(snapshot(t, "a", hb_ago=1000, poll_ago=max(0, t - stalled_at)))
    out = run(events)
    timeouts = kinds(out, "member_timeout")
    assert [(t["member_id"], t["timeout"]) for t in timeouts] == [("a", "poll")]
    assert timeouts[0]["deadline_ms"] == stalled_at + POLL


def test_a_reporter_snapshot_without_member_id_is_matched_by_client_id_and_states_the_timeouts():
    events = generation(1000, ["a", "b"])
    events += [snapshot(5000, "", hb_ago=0, client_id="client-b", source="reporter", session_timeout_ms=6000,
                        rebalance_timeout_ms=POLL)]
    events += [snapshot(t, "a", hb_ago=0) for t in range(10_000, 20_001, 5000)]
    out = run(events)
    timeouts = kinds(out, "member_timeout")
    assert [(t["member_id"], t["deadline_ms"]) for t in timeouts] == [("b", 5000 + 6000)]


def test_a_snapshot_naming_no_one_known_is_counted_and_left():
    from rebalance_monitor.core.events import parse_event
    from rebalance_monitor.core.group import GroupMonitor
    g = GroupMonitor("g")
    for e in generation(1000, ["a"]) + [snapshot(5000, "", hb_ago=0, client_id="nobody")]:
        g.process(parse_event(e))
    assert g.counters.get("unmatched_client_metrics") == 1
    assert not g.members["a"].hb_tracked


def test_a_reporter_leave_without_member_id_is_the_leave_of_the_member_with_that_client_id():
    events = generation(1000, ["a", "b"])
    events += [dict(leave(8000, ""), client_id="client-b"),
               ev("rebalance_started", 8001, generation=1, reason="Removing member b on LeaveGroup")]
    events += generation(9000, ["a"], gen=2)[1:]
    gens = kinds(run(events), "generation")
    assert gens[-1]["causes"][0]["cause"] == "member_left"
    assert gens[-1]["causes"][0]["member_id"] == "b"


def test_a_member_the_coordinator_drops_before_its_report_delay_is_a_session_timeout():
    events = generation(1000, ["a", "b"])
    for t in range(5000, 20_001, 5000):
        events.append(snapshot(t, "a", hb_ago=1000))
        if t <= 10_000:
            events.append(snapshot(t + 1, "b", hb_ago=1000))
    # b's last heartbeat 9001 (+ 10 s session = 19001); the coordinator's next generation, without b, at 19500:
    # before the monitor's own timer (due a report delay later)
    events += generation(19_500, ["a"], gen=2)[1:]
    out = run(events)
    timeouts = kinds(out, "member_timeout")
    assert [(t["member_id"], t["timeout"], t["deadline_ms"]) for t in timeouts] == [("b", "session", 19_001)]
    gen2 = kinds(out, "generation")[-1]
    assert [(c["cause"], c.get("member_id")) for c in gen2["causes"]] == [("session_timeout", "b")]


def test_a_stalled_poll_loop_is_warned_about_before_its_poll_timeout():
    from rebalance_monitor.core.events import parse_event
    from rebalance_monitor.core.group import GroupMonitor
    g = GroupMonitor("g")
    for e in generation(1000, ["a"]):
        g.process(parse_event(e))
    ratios = []
    stalled_at = 10_000
    for t in range(5000, 35_001, 5000):  # heartbeats go on; polls stop at 10 s (max.poll.interval.ms 30 s)
        out = g.process(parse_event(snapshot(t, "a", hb_ago=1000, poll_ago=max(0, t - stalled_at))))
        assert not kinds(out, "member_timeout")
        ratios.append(g.status(t)["poll_gap_ratios"].get("a"))
    assert ratios == [0.0, 0.0, round(5000 / POLL, 4), round(10_000 / POLL, 4), round(15_000 / POLL, 4),
                      round(20_000 / POLL, 4), round(25_000 / POLL, 4)]
    assert g.status(38_000)["max_poll_gap_ratio"] == round(28_000 / POLL, 4)


def test_a_client_rejoined_under_a_new_member_id_is_not_timed_out_on_its_previous_ids_clocks():
    # a's polls stop at 10 s: its poll timeout at 40 s; the client polls again at 60 s and rejoins as a2, whose
    # first snapshots still show the client's last heartbeat of a (at 40 s: no heartbeats while out of the group),
    # past a2's session timeout and report delay already
    events = generation(1000, ["a"])
    events += [snapshot(t, "a", hb_ago=1000, poll_ago=max(0, t - 10_000)) for t in range(5000, 40_001, 5000)]
    events += generation(60_000, ["a2"], gen=2)
    events += [snapshot(t, "a2", hb_ago=t - 40_000 if t < 64_000 else 500, poll_ago=0)
               for t in range(61_000, 80_001, 1000)]
    timeouts = kinds(run(events), "member_timeout")
    assert [(t["member_id"], t["timeout"]) for t in timeouts] == [("a", "poll")], timeouts


def _closed_then_dropped(gone_after_ms):
    """a and b in generation 1; b's client says it closed at 20,000 (a terminating push: a leave with a source);
    the coordinator's generation 2 without b comes `gone_after_ms` later."""
    events = generation(1000, ["a", "b"])
    for t in range(5000, 60_001, 2000):
        events.append(snapshot(t, "a", hb_ago=1000, poll_ago=0))
        if t <= 19_000:
            events.append(snapshot(t + 1, "b", hb_ago=1000, poll_ago=0))
    events.append(ev("leave", 20_000, member_id="b", client_id="client-b", reason="the consumer is being closed",
                     source="kip714"))
    events += generation(20_000 + gone_after_ms, ["a"], gen=2)
    return run(sorted(events, key=lambda e: e["ts"]))


def test_a_client_that_closed_and_left_is_a_leave_when_the_coordinator_drops_it_at_once():
    out = _closed_then_dropped(800)
    gen2 = [g for g in kinds(out, "generation") if g["generation"] == 2][0]
    b = [c for c in gen2["causes"] if c.get("member_id") == "b"]
    assert [c["cause"] for c in b] == ["member_left"], gen2["causes"]
    assert "it left the group" in b[0]["reason"]
    assert not kinds(out, "member_timeout")


def test_a_client_that_closed_without_leaving_is_the_session_timeout_the_coordinator_applies():
    # Kafka Streams' default close, or a static member: the coordinator drops it at its session timeout
    out = _closed_then_dropped(SESSION - 1500)
    gen2 = [g for g in kinds(out, "generation") if g["generation"] == 2][0]
    assert [c["cause"] for c in gen2["causes"] if c.get("member_id") == "b"] == ["session_timeout"], gen2["causes"]
    assert [(t["member_id"], t["timeout"]) for t in kinds(out, "member_timeout")] == [("b", "session")]


def test_without_the_coordinators_view_a_closed_client_is_a_leave_at_once():
    events = [ev("join", 1000, member_id="b", protocols=["range"], topics=["t"], session_timeout_ms=SESSION,
                 rebalance_timeout_ms=POLL, client_id="client-b", host="127.0.0.1")]
    events += [snapshot(t, "b", hb_ago=1000, poll_ago=0) for t in range(2000, 19_001, 2000)]
    events.append(ev("leave", 20_000, member_id="b", client_id="client-b", reason="the consumer is being closed",
                     source="kip714"))
    statuses = kinds(run(events, status=True), "group_status")
    assert statuses[-1]["members"] == 0  # gone at its leave: nothing else would say whether it left


def _silent_then_dropped(last_snapshot_ms, gone_ms, hb=True):
    """a and b in generation 1; b's snapshots stop at `last_snapshot_ms` with no terminating push (a client that
    closed before its subscription was refreshed, or one killed); the coordinator's generation 2 without b at
    `gone_ms`. b's snapshots carry its heartbeat clock (`hb`) or only its poll clock (a first push can)."""
    events = generation(1000, ["a", "b"])
    for t in range(5000, gone_ms + 10_001, 2000):
        events.append(snapshot(t, "a", hb_ago=1000, poll_ago=0))
    events += [snapshot(t, "b", hb_ago=0 if hb else None, poll_ago=0)
               for t in range(5001, last_snapshot_ms + 1, 2000)]
    events += generation(gone_ms, ["a"], gen=2)
    out = run(sorted(events, key=lambda e: e["ts"]))
    gen2 = [g for g in kinds(out, "generation") if g["generation"] == 2][0]
    return out, [c for c in gen2["causes"] if c.get("member_id") == "b"]


def test_a_client_silent_for_a_session_with_no_word_that_it_closed_timed_out():
    # only its poll clock known: no session deadline of its own runs, the silence tells the coordinator's reason
    out, b = _silent_then_dropped(17_001, 17_001 + 8900, hb=False)
    assert [(c["cause"], c.get("cause_source")) for c in b] == [("session_timeout", "inferred")], b
    assert b[0]["reason"].startswith("inferred: its client's telemetry was last heard 8900 ms before")
    timeouts = kinds(out, "member_timeout")
    assert [(t["member_id"], t["timeout"], t["cause_source"], t["last_seen_ms"]) for t in timeouts] == [
        ("b", "session", "inferred", 17_001)]


def test_a_client_heard_from_until_the_rebalance_with_no_word_that_it_closed_left():
    _out, b = _silent_then_dropped(17_001, 17_001 + 1500, hb=False)
    assert [(c["cause"], c.get("cause_source")) for c in b] == [("member_left", "inferred")], b


def test_a_silence_between_a_leave_and_a_session_tells_neither():
    out, b = _silent_then_dropped(17_001, 17_001 + 6500, hb=False)
    assert all(c["cause"] == "unknown" for c in b), b  # (an unknown beside the round's known causes is left out)
    assert not kinds(out, "member_timeout")

