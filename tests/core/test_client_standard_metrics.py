"""KIP-714's standard consumer metrics in `client_metrics` (what librdkafka pushes: no heartbeat or poll clock; its
member id only once it has joined) are the client's own account, kept per client instance and shown in `group_status`, never evidence of
a member's heartbeats or polls: a member whose client sends only these gets no gap ratio and no deadline of the
monitor's own from them."""
from __future__ import annotations

from helpers.events import ev, kinds, run

from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.events import parse_event

from test_client_metrics import SESSION, generation, snapshot


def standard(ts, client_id="rdkafka", instance="inst-1", **kw):
    fields = {"member_id": "", "client_id": client_id, "client_instance_id": instance, "host": "127.0.0.1",
              "source": "kip714", "interval_ms": 2000, "poll_idle_ratio": 0.9, "assigned_partitions": 1,
              "rebalance_latency_avg_ms": 40, "rebalance_latency_max_ms": 80, **kw}
    return ev("client_metrics", ts, **fields)


def test_standard_metrics_alone_are_no_heartbeat_or_poll_of_the_member_with_that_client_id():
    events = generation(1000, ["a"])  # a's client id: client-a
    events += [standard(t, client_id="client-a", rebalance_latency_ms=80 if t == 3000 else 0)
               for t in range(3000, 30_001, 2000)]
    out = run(events, status=True)
    status = kinds(out, "group_status")[-1]
    assert status["heartbeat_gap_ratios"] == {} and status["poll_gap_ratios"] == {}, status
    assert not kinds(out, "member_timeout")  # no evidence: no deadline of the monitor's own
    [client] = status["client_standard_metrics"]
    assert client["client_id"] == "client-a" and client["client_instance_id"] == "inst-1", client
    assert client["poll_idle_ratio"] == 0.9 and client["rebalance_latency_max_ms"] == 80
    assert client["rebalance_latency_total_ms"] == 80 and client["rebalances_total"] is None  # sums of the changes
    assert "member_id" not in client


def test_standard_metrics_naming_the_member_are_still_no_evidence_of_it():
    events = generation(1000, ["a"])
    events += [standard(t, client_id="client-a", member_id="a") for t in range(3000, 30_001, 2000)]
    out = run(events, status=True)
    status = kinds(out, "group_status")[-1]
    assert status["heartbeat_gap_ratios"] == {} and status["poll_gap_ratios"] == {}, status
    assert not kinds(out, "member_timeout")
    assert status["client_standard_metrics"][0]["member_id"] == "a"


def test_a_java_snapshot_is_member_evidence_and_its_standard_metrics_are_kept_too():
    events = generation(1000, ["a"])
    events += [snapshot(5000, "a", hb_ago=1000, poll_ago=0, client_instance_id="java-1", rebalances=1,
                        rebalance_latency_ms=30, rebalance_latency_avg_ms=30),
               snapshot(10_000, "a", hb_ago=1000, poll_ago=0, client_instance_id="java-1", rebalances=2,
                        rebalance_latency_ms=50)]
    status = kinds(run(events, status=True), "group_status")[-1]
    assert status["heartbeat_gap_ratios"] == {"a": 1000 / SESSION}
    [client] = status["client_standard_metrics"]
    assert client["member_id"] == "a" and client["rebalances_total"] == 3 and client["rebalance_latency_total_ms"] == 80


def test_clients_are_kept_per_instance_and_forgotten_after_five_silent_minutes():
    events = generation(1000, ["a"])
    events += [standard(2000, instance="i-1"), standard(2000, instance="i-2", poll_idle_ratio=0.1),
               standard(400_000, instance="i-2")]
    status = kinds(run(events, status=True), "group_status")[-1]
    assert [c["client_instance_id"] for c in status["client_standard_metrics"]] == ["i-2"]


def test_the_standard_metrics_survive_the_groups_snapshot():
    g = GroupMonitor("g")
    for e in generation(1000, ["a"]) + [standard(3000, rebalances=2)]:
        g.process(parse_event(e))
    again = GroupMonitor.from_state(g.to_state())
    assert again.status(3000)["client_standard_metrics"] == g.status(3000)["client_standard_metrics"]
    assert again.status(3000)["client_standard_metrics"][0]["rebalances_total"] == 2
