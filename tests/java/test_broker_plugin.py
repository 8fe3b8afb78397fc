"""The KIP-714 broker plugin on real brokers: Kafka 4.4 with `ExporterPlugin` (the 4.2+ interface pair) and 3.9 with
`ReceiverPlugin` (the 3.7-4.1 pair), one jar. Stock Java consumers (Kafka's console consumer, untouched) push their
metrics under a client-metrics subscription; the plugin's events arrive in the events topic naming each member,
its group, client id and address; replayed with `__consumer_offsets` through the core they give heartbeat evidence
per member, a session timeout naming a member killed with SIGKILL, and a leave for one closed gracefully. A Java
consumer whose processing stalls past max.poll.interval.ms is warned about (its poll-gap ratio) before the
coordinator removes it, and its poll timeout names it."""
from __future__ import annotations

import json

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import (events_of, kill_hard, publish_broker_facts, records_of, stalling_consumer,
                                    stop_gracefully, warned_then_timed_out)

from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing.kafka_install import KAFKA_VERSION

pytestmark = pytest.mark.integration

EVENTS = "rebalance-events"  # the plugin_broker fixture's (tests/java/conftest.py)
SESSION_MS = 6000
CONSUMER = {"session.timeout.ms": str(SESSION_MS), "heartbeat.interval.ms": "1000"}


def _member_events(bootstrap, group, client_id, etype="client_metrics"):
    return [e for e in events_of(bootstrap, EVENTS, group)
            if e["type"] == etype and e.get("client_id") == client_id and e.get("member_id")]


def test_untouched_java_consumers_are_watched_through_the_broker(plugin_broker, unique, tmp_path):
    bootstrap = plugin_broker.bootstrap
    topic, group = f"t-{unique}", f"g-{unique}"
    plugin_broker.create_topics({topic: 2})
    procs = {c: jt.console_consumer(bootstrap, topic, group, c, CONSUMER, log_path=tmp_path / f"{c}.log")
             for c in ("java-a", "java-b")}
    try:
        # each member's pushes arrive as client_metrics events with its member id, group, client id and address
        firsts = {c: eventually(lambda c=c: [e for e in _member_events(bootstrap, group, c)
                                             if e.get("last_heartbeat_ms_ago") is not None],
                                120, f"client_metrics of {c} with a heartbeat clock",
                                interval_s=1.0)[-1] for c in procs}
        for c, e in firsts.items():
            assert e["host"] == "127.0.0.1" and e["source"] == "kip714", e
            assert e["last_heartbeat_ms_ago"] >= 0 and e.get("last_poll_ms_ago", -1) >= 0, e
            # the client's own time, and the push's arrival beside it (one machine: one clock, a push's age apart)
            assert -1000 <= e["received_ms"] - e["ts"] < 30_000, e
        member = {c: e["member_id"] for c, e in firsts.items()}
        assert len(set(member.values())) == 2

        # replayed with the coordinator's records: heartbeat evidence for each member
        def ratios():
            status = [r for r in records_of(bootstrap, EVENTS, group, status=True) if r["kind"] == "group_status"]
            got = status[-1]["heartbeat_gap_ratios"] if status else {}
            return got if set(member.values()) <= set(got) else None
        gaps = eventually(ratios, 60, "heartbeat gap ratios of both members", interval_s=1.0)
        assert all(0 <= gaps[m] < 1 for m in member.values()), gaps
        status = [r for r in records_of(bootstrap, EVENTS, group, status=True) if r["kind"] == "group_status"][-1]
        assert set(member.values()) <= set(status["poll_gap_ratios"]), status  # poll evidence too
        assert all(0 <= status["poll_gap_ratios"][m] < 1 for m in member.values()), status

        # kill -9: the session timeout names that member, its client id and host
        kill_hard(procs.pop("java-b"))

        def timeout_of_b():
            return [r for r in records_of(bootstrap, EVENTS, group)
                    if r["kind"] == "member_timeout" and r["member_id"] == member["java-b"]]
        timeouts = eventually(timeout_of_b, 120, "the session timeout of java-b", interval_s=2.0)
        assert timeouts[0]["timeout"] == "session"
        assert timeouts[0]["client_id"] == "java-b" and timeouts[0]["host"] == "127.0.0.1"
        # the monitor's timer, or the coordinator's record when it comes first (within the snapshots' whole second)
        assert SESSION_MS - 1000 < timeouts[0]["deadline_ms"] - timeouts[0]["last_seen_ms"] <= SESSION_MS, timeouts

        # a graceful close: the last push is terminating, which is a leave of that member
        stop_gracefully(procs.pop("java-a"))
        leaves = eventually(lambda: _member_events(bootstrap, group, "java-a", "leave"), 60, "the leave of java-a")
        assert leaves[0]["member_id"] == member["java-a"]
        assert leaves[0]["reason"] == "the consumer is being closed"
        assert -1000 <= leaves[0]["received_ms"] - leaves[0]["ts"] < 30_000, leaves[0]
        # from the plugin's events alone (no coordinator feed), the leave is the cause of a rebalance
        alone = records_of(bootstrap, EVENTS, group, sources=("events",))
        causes = [c for r in alone if r["kind"] == "rebalance_started" for c in r["causes"]]
        assert {"cause": "member_left", "member_id": member["java-a"], "client_id": "java-a", "host": "127.0.0.1",
                "reason": "the consumer is being closed"} in causes, causes
    finally:
        for p in procs.values():
            kill_hard(p)
        print(json.dumps(events_of(bootstrap, EVENTS, group)[-5:], indent=1))


def test_a_stalled_java_consumer_is_warned_about_then_its_poll_timeout_names_it(plugin_broker, unique, tmp_path):
    bootstrap = plugin_broker.bootstrap
    topic, group = f"t-{unique}", f"g-{unique}"
    plugin_broker.create_topics({topic: 2})
    max_poll_ms = 10_000
    procs = {"java-ok": jt.console_consumer(bootstrap, topic, group, "java-ok", CONSUMER,
                                            log_path=tmp_path / "java-ok.log")}
    try:
        # java-ok is a member first: a rebalance that waited on the stalled member would keep it out of every
        # generation the coordinator completes before the stall ends
        eventually(lambda: _member_events(bootstrap, group, "java-ok"), 120, "java-ok in its group", interval_s=1.0)
        procs["java-stall"] = stalling_consumer(bootstrap, topic, group, "java-stall", max_poll_ms, 60_000,
                                                tmp_path / "java-stall.log")
        def poll_timeout():
            return [r for r in records_of(bootstrap, EVENTS, group)
                    if r["kind"] == "member_timeout" and r["client_id"] == "java-stall"]
        timeout = eventually(poll_timeout, 180, "the poll timeout of java-stall", interval_s=2.0)[0]
        assert timeout["timeout"] == "poll", timeout
        # the coordinator dropped it first: the deadline is its record's time, within the snapshots' whole second
        assert max_poll_ms - 1000 < timeout["deadline_ms"] - timeout["last_seen_ms"] <= max_poll_ms, timeout
        stalled = timeout["member_id"]
        # what the monitor knew just before the deadline: no timeout yet, and the stalled member's poll-gap ratio
        # high (snapshots every 2 s of a 10 s interval: at least 0.5), the other member's low
        before = records_of(bootstrap, EVENTS, group, status=True, until_ms=timeout["deadline_ms"])
        assert not [r for r in before if r["kind"] == "member_timeout"]
        status = [r for r in before if r["kind"] == "group_status"][-1]
        assert status["poll_gap_ratios"][stalled] >= 0.5, status
        assert status["max_poll_gap_ratio"] == status["poll_gap_ratios"][stalled]
        others = [v for m, v in status["poll_gap_ratios"].items() if m != stalled]
        assert others and max(others) < 0.5, (status, [r for r in before if r["kind"] == "generation"])
    finally:
        for p in procs.values():
            kill_hard(p)


def test_a_killed_kip848_member_is_a_session_timeout_naming_it(plugin_broker, unique, tmp_path):
    if plugin_broker.version != KAFKA_VERSION:
        pytest.skip("KIP-848 groups: Kafka 4.x")
    bootstrap = plugin_broker.bootstrap
    topic, group = f"t-{unique}", f"g-{unique}"
    plugin_broker.create_topics({topic: 2})
    procs = {c: jt.console_consumer(bootstrap, topic, group, c, {"group.protocol": "consumer"},
                                    log_path=tmp_path / f"{c}.log") for c in ("k-a", "k-b")}
    try:
        member = {c: eventually(lambda c=c: _member_events(bootstrap, group, c), 120, f"client_metrics of {c}",
                                interval_s=1.0)[-1]["member_id"] for c in procs}
        kill_hard(procs.pop("k-b"))

        # the KIP-848 member records of __consumer_offsets carry no session timeout: the coordinator's log says
        # which member's session expired; the plugin's events say who it was
        def timeout_of_b():
            return [r for r in records_of(bootstrap, EVENTS, group, sources=("coordinator-log", "events"),
                                          coordinator_log=plugin_broker.coordinator_log)
                    if r["kind"] == "member_timeout" and r["member_id"] == member["k-b"]]
        timeouts = eventually(timeout_of_b, 120, "the session timeout of k-b", interval_s=2.0)
        assert timeouts[0]["timeout"] == "session", timeouts
        assert timeouts[0]["client_id"] == "k-b" and timeouts[0]["host"] == "127.0.0.1", timeouts
    finally:
        for p in procs.values():
            kill_hard(p)


def test_a_frozen_kip848_member_is_warned_about_before_the_brokers_deadline(plugin_broker, unique, tmp_path):
    """A stock Java KIP-848 member frozen with SIGSTOP: its pushes stop, and the broker fences it after its
    group.consumer.session.timeout.ms (10 s on this broker, not Kafka's 45 s). With what the broker poller asked
    the broker beside the plugin's events, the warning (half the session) comes before that deadline, naming the
    broker as the session's source, then the session timeout names the member. With the configuration's 45 s
    fallback instead, no warning would come before the broker removed it."""
    import os
    import signal

    if plugin_broker.version != KAFKA_VERSION:
        pytest.skip("KIP-848 groups: Kafka 4.x")
    bootstrap = plugin_broker.bootstrap
    topic, group = f"t-{unique}", f"g-{unique}"
    plugin_broker.create_topics({topic: 2})
    admin, producer = publish_broker_facts(bootstrap, EVENTS, group)
    procs = {c: jt.console_consumer(bootstrap, topic, group, c, {"group.protocol": "consumer"},
                                    log_path=tmp_path / f"{c}.log") for c in ("f-a", "f-b")}
    try:
        member = {c: eventually(lambda c=c: _member_events(bootstrap, group, c), 120, f"client_metrics of {c}",
                                interval_s=1.0)[-1]["member_id"] for c in procs}
        os.killpg(procs["f-b"].pid, signal.SIGSTOP)

        w, timeout, _records = warned_then_timed_out(bootstrap, EVENTS, group, member["f-b"], "f-b")
        assert (w["limit_ms"], w["timeout_source"], w["client_id"]) == (10_000, "broker", "f-b"), w
        assert w["warn_ms"] < w["deadline_ms"] and w["ts"] < w["deadline_ms"] + 5_000, w
        assert (timeout["timeout"], timeout["client_id"]) == ("session", "f-b"), timeout
    finally:
        for p in procs.values():
            try:
                os.killpg(p.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            kill_hard(p)
        producer.close()
        admin.close()
