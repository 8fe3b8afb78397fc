"""Early warnings (KIP-714) of a Streams application's members on the streams protocol (KIP-1071): Kafka's own
WordCountDemo (kafka-streams-examples, on Kafka Streams 4.4; the project did not write it) with
`group.protocol=streams`, two instances, on a Kafka 4.4 broker of this module's own with the broker plugin and
streams sessions of 15 s (`group.streams.session.timeout.ms`; the Java plugins' shared brokers keep Kafka's 45 s,
below which their `group.streams.min.session.timeout.ms` lets no group's own setting go). The broker poller publishes the brokers'
group settings, the streams family's among them, beside the plugin's events.

One instance is killed with `kill -9`: its StreamThread's pushes stop, the monitor warns about its member (half
the session, the broker's 15 s, as the broker poller told it) before the session's deadline, then the session
timeout names it. With the configuration's 45 s fallback instead, no warning would come before the broker fenced it."""
from __future__ import annotations

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import events_of, kill_hard, publish_broker_facts, warned_then_timed_out
from helpers.streams_group_kafka import STREAMS_BROKER_SETTINGS

from rebalance_monitor.testing import java_telemetry as jt

pytestmark = pytest.mark.integration

EVENTS = "rebalance-events"
PUSH_INTERVAL_MS = 2000
GROUP = "streams-wordcount"  # the demo's application id
CLIENTS = ("w-a", "w-b")
# the broker's streams session: its half (the warning point) and the pushes' report delay (3 s) fall short of it by
# 4.5 s, less the up to 1 s the heartbeat clock's whole seconds (`last-heartbeat-seconds-ago`) put the monitor's
# last sight after the broker's: more than a push interval, so a push of the live member brings the warning to the
# monitor before the broker's deadline (with 6 s, half and the delay are the whole session)
SESSION_MS = 15_000


@pytest.fixture(scope="module")
def streams_plugin_broker(tmp_path_factory):
    """Kafka 4.4 with the broker plugin, short streams sessions, the events topic, the demo's topics and a
    client-metrics subscription asking every client for the plugin's metrics every 2 s."""
    log = tmp_path_factory.mktemp("streams-plugin-broker") / "broker.log"
    settings = {**STREAMS_BROKER_SETTINGS, "group.streams.session.timeout.ms": str(SESSION_MS)}
    broker = jt.plugin_broker(EVENTS, log_path=str(log), settings=settings).start()
    try:
        broker.create_topics({EVENTS: 1, jt.WORD_COUNT_TOPICS[0]: 2, jt.WORD_COUNT_TOPICS[1]: 1})
        jt.subscribe(broker.bootstrap, "rebalance-monitor", PUSH_INTERVAL_MS)
        yield broker
    finally:
        broker.stop()


def _pushes(bootstrap: str, client_id: str) -> list[dict]:
    return [e for e in events_of(bootstrap, EVENTS, GROUP) if e["type"] == "client_metrics"
            and e.get("client_id") == client_id and e.get("member_id") and e.get("last_heartbeat_ms_ago") is not None]


def test_a_killed_streams_protocol_member_is_warned_about_before_its_session_deadline(streams_plugin_broker,
                                                                                        tmp_path):
    bootstrap = streams_plugin_broker.bootstrap
    admin, producer = publish_broker_facts(bootstrap, EVENTS, GROUP)
    procs = {}
    try:
        for c in CLIENTS:
            props = {"bootstrap.servers": bootstrap, "client.id": c, "group.protocol": "streams",
                     "state.dir": str(tmp_path / f"state-{c}")}
            procs[c] = jt.word_count_demo(props, tmp_path / f"{c}.properties", tmp_path / f"{c}.log")
        thread = {c: f"{c}-StreamThread-1-consumer" for c in CLIENTS}
        # each StreamThread's consumer pushes its heartbeat clock under its streams member id
        member = {c: eventually(lambda c=c: _pushes(bootstrap, thread[c]), 120, f"pushes of {thread[c]}",
                                interval_s=1.0)[-1]["member_id"] for c in CLIENTS}
        assert member["w-a"] != member["w-b"]
        kill_hard(procs.pop("w-b"))

        w, timeout, records = warned_then_timed_out(bootstrap, EVENTS, GROUP, member["w-b"],
                                                    "w-b's StreamThread")
        assert (w["limit_ms"], w["timeout_source"], w["client_id"]) == (SESSION_MS, "broker", thread["w-b"]), w
        # told before the deadline: once half the session was silent, plus the pushes' report delay (1.5 intervals:
        # 3 s), before the broker fenced the member (its tombstone in __consumer_offsets: the timeout's time)
        assert w["warn_ms"] + 3000 <= w["ts"] < min(w["deadline_ms"], timeout["ts"]), (w, timeout)
        assert w["deadline_ms"] == timeout["deadline_ms"], (w, timeout)
        assert (timeout["timeout"], timeout["client_id"]) == ("session", thread["w-b"]), timeout
        # w-a, alive, was never warned about
        assert not [r for r in records if r["kind"] in ("member_at_risk", "member_timeout")
                    and r["member_id"] == member["w-a"]], records
    finally:
        for p in procs.values():
            kill_hard(p)
        producer.close()
        admin.close()
