"""A Kafka Streams application among the watched consumers, on the Java plugins' shared brokers
(tests/java/conftest.py): the project's test application (stock Kafka Streams 4.4, a stateless topology; Kafka's own
examples jar is not on Maven Central) in two instances, one with two StreamThreads. Its StreamThreads' consumers are
group members of the application id; nothing in the application knows of the monitor.

- Kafka 4.4 with the broker plugin: Streams' consumers push under the subscription (KIP-714) with their group and
  member id, and the plugin's events name each StreamThread's member, the group and the client id.
- Kafka 3.9 with the client reporter: `metric.reporters` and the reporter's settings go in through Streams' own
  configuration (`main.consumer.` prefix); the core matches the snapshots by client id to the coordinator's members.

Either way a kill -9 of one instance is a session timeout naming its StreamThread's member, and a graceful close
(Streams closing with LEAVE_GROUP) a leave of each of the other's members. A close without LeaveGroup (Streams'
default) is the session timeout it becomes: told by the client's terminating push, or, when the client closes
before it sends one (a Java client sends none while it waits for a new subscription), by its telemetry's silence."""
from __future__ import annotations

import json

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import events_of, kill_hard, records_of, stop_gracefully

from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing.kafka_install import KAFKA_VERSION

pytestmark = pytest.mark.integration

EVENTS = "rebalance-events"  # the plugin_broker fixture's
SESSION_MS = 6000


def _streams_properties(bootstrap, app_id, client_id, topics, state_dir, threads, reporter: bool):
    props = {"application.id": app_id, "bootstrap.servers": bootstrap, "client.id": client_id,
             "num.stream.threads": str(threads), "state.dir": str(state_dir), "input.topic": topics[0],
             "output.topic": topics[1], "main.consumer.session.timeout.ms": str(SESSION_MS),
             "main.consumer.heartbeat.interval.ms": "1000"}
    if reporter:  # the client reporter, through Streams' configuration; no KIP-714 push (the reporter alone)
        props["enable.metrics.push"] = "false"
        props.update({f"main.consumer.{k}": v for k, v in jt.consumer_properties(bootstrap, EVENTS, 2000).items()})
    return props


def test_a_streams_applications_stream_threads_are_watched(plugin_broker, unique, tmp_path):
    bootstrap = plugin_broker.bootstrap
    push = plugin_broker.version == KAFKA_VERSION  # 4.4: the broker plugin; 3.9: the client reporter
    app = f"app-{unique}"  # the application id is the group
    topics = (f"in-{unique}", f"out-{unique}")
    plugin_broker.create_topics({topics[0]: 3, topics[1]: 1})
    extra = () if push else (str(jt.jar(jt.REPORTER_JAR)),)
    threads = {"s-a": 2, "s-b": 1}
    procs = {c: jt.streams_app(_streams_properties(bootstrap, app, c, topics, tmp_path / f"state-{c}", n, not push),
                               tmp_path / f"{c}.properties", extra, tmp_path / f"{c}.log") for c, n in threads.items()}
    consumers = [f"{c}-StreamThread-{i}-consumer" for c, n in threads.items() for i in range(1, n + 1)]
    try:
        # every StreamThread's consumer sends its heartbeat and poll clocks, naming its group and client id
        def snapshots(cid):
            return [e for e in events_of(bootstrap, EVENTS, app) if e["type"] == "client_metrics"
                    and e.get("client_id") == cid and e.get("last_heartbeat_ms_ago") is not None
                    and e.get("last_poll_ms_ago") is not None and (e["member_id"] or not push)]
        firsts = {cid: eventually(lambda cid=cid: snapshots(cid), 120, f"client_metrics of {cid}",
                                  interval_s=1.0)[-1] for cid in consumers}
        for cid, e in firsts.items():
            assert e["source"] == ("kip714" if push else "reporter"), e
            if push:
                assert e["member_id"].startswith(cid + "-") and e["host"] == "127.0.0.1", e
            else:
                assert e["member_id"] == "" and e["session_timeout_ms"] == SESSION_MS, e

        # with the coordinator's records: heartbeat and poll evidence for each StreamThread's member
        def evidence():
            recs = records_of(bootstrap, EVENTS, app, status=True)
            gens = [r for r in recs if r["kind"] == "generation" and len(r["members"]) == len(consumers)]
            status = [r for r in recs if r["kind"] == "group_status"]
            if not gens or not status:
                return None
            members = {cid: next((m for m in gens[-1]["members"] if m.startswith(cid + "-")), None)
                       for cid in consumers}
            last = status[-1]
            if None in members.values() or not set(members.values()) <= set(last["heartbeat_gap_ratios"]) \
                    or not set(members.values()) <= set(last["poll_gap_ratios"]):
                return None
            return members, last
        member, status = eventually(evidence, 90, "heartbeat and poll evidence of every StreamThread", interval_s=2.0)
        if push:
            assert {cid: e["member_id"] for cid, e in firsts.items()} == member
        assert all(0 <= status["heartbeat_gap_ratios"][m] < 1 for m in member.values()), status

        # kill -9 of the one-thread instance: the session timeout names its StreamThread's member
        kill_hard(procs.pop("s-b"))
        b = "s-b-StreamThread-1-consumer"

        def timeout_of_b():
            return [r for r in records_of(bootstrap, EVENTS, app)
                    if r["kind"] == "member_timeout" and r["member_id"] == member[b]]
        timeout = eventually(timeout_of_b, 120, "the session timeout of s-b's StreamThread", interval_s=2.0)[0]
        assert timeout["timeout"] == "session" and timeout["client_id"] == b, timeout

        # a graceful close of the other: a leave of each of its StreamThreads' members
        stop_gracefully(procs.pop("s-a"))
        a_threads = [cid for cid in consumers if cid.startswith("s-a-")]

        def leaves():
            got = {e["client_id"]: e for e in events_of(bootstrap, EVENTS, app)
                   if e["type"] == "leave" and e.get("client_id") in a_threads}
            return got if len(got) == len(a_threads) else None
        left = eventually(leaves, 60, "the leaves of s-a's StreamThreads")
        for cid, e in left.items():
            assert e["member_id"] == (member[cid] if push else ""), e
            assert e["reason"] == "the consumer is being closed", e
        # and the group empties with no timeout of theirs
        recs = records_of(bootstrap, EVENTS, app, status=True)
        assert not [r for r in recs if r["kind"] == "member_timeout" and r["member_id"] != member[b]], recs
        assert [r for r in recs if r["kind"] == "group_status"][-1]["members"] == 0
    finally:
        for p in procs.values():
            kill_hard(p)


def _what_was_seen(bootstrap, app, y, gen) -> str:
    """For a failure's message: the generation's causes, the events of s-y's client and the core's records."""
    lines = [json.dumps(gen["causes"], default=str)]
    for e in events_of(bootstrap, EVENTS, app):
        if e.get("member_id") == y or e.get("client_id", "").startswith("s-y"):
            lines.append(json.dumps(e, default=str))
    for r in records_of(bootstrap, EVENTS, app, status=False):
        fields = ("kind", "ts", "generation", "members", "member_id", "timeout")
        lines.append(json.dumps({k: r.get(k) for k in fields}, default=str))
    return "\n".join(lines)


def test_a_streams_close_without_leaving_is_the_session_timeout_it_becomes(plugin_broker, unique, tmp_path):
    if plugin_broker.version != KAFKA_VERSION:
        pytest.skip("the push path shows it: Kafka 4.4 (the reporter's leave on 3.9 is the same)")
    bootstrap = plugin_broker.bootstrap
    app, topics = f"app-{unique}", (f"in-{unique}", f"out-{unique}")
    plugin_broker.create_topics({topics[0]: 2, topics[1]: 1})
    procs = {}
    for c in ("s-x", "s-y"):
        props = _streams_properties(bootstrap, app, c, topics, tmp_path / f"state-{c}", 1, reporter=False)
        props["leave.group.on.close"] = "false"  # KafkaStreams.close() as Streams does it by default
        procs[c] = jt.streams_app(props, tmp_path / f"{c}.properties", (), tmp_path / f"{c}.log")
    try:
        def both_members():
            recs = records_of(bootstrap, EVENTS, app)
            gens = [r for r in recs if r["kind"] == "generation" and len(r["members"]) == 2]
            return gens[-1] if gens else None
        both = eventually(both_members, 120, "both instances in the group", interval_s=2.0)
        y = next(m for m in both["members"] if m.startswith("s-y-"))
        # s-y runs until its client has pushed its clocks under that member id (an application that closes before
        # its first push leaves nothing of itself to judge its close by: no telemetry, no commit)
        eventually(lambda: [e for e in events_of(bootstrap, EVENTS, app) if e["type"] == "client_metrics"
                            and e.get("member_id") == y and e.get("last_heartbeat_ms_ago") is not None],
                   60, "a push of s-y's clocks", interval_s=1.0)
        stop_gracefully(procs.pop("s-y"))

        def next_generation():
            gens = [r for r in records_of(bootstrap, EVENTS, app) if r["kind"] == "generation"
                    and r["generation"] > both["generation"] and y not in r["members"]]
            return gens[0] if gens else None
        gen = eventually(next_generation, 60, "the generation without s-y", interval_s=2.0)
        assert [c["cause"] for c in gen["causes"] if c.get("member_id") == y] == ["session_timeout"], \
            _what_was_seen(bootstrap, app, y, gen)
    finally:
        for p in procs.values():
            kill_hard(p)
