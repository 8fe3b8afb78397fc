"""The client metrics reporter on a real Kafka 3.9 broker (no broker plugin, no client-metrics subscription): stock
Java consumers (Kafka's console consumer) given the reporter's jar on their class path and its properties send
`client_metrics` snapshots without a member id; the core matches them by client id to the members
`__consumer_offsets` records, so a kill -9 is a session timeout naming that member; a graceful close sends a leave
(after the consumer's LeaveGroup: the coordinator's record of it comes first)."""
from __future__ import annotations

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import events_of, kill_hard, records_of, stop_gracefully

from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing.broker import Broker
from rebalance_monitor.testing.kafka_install import KAFKA_CLASSIC_VERSION

pytestmark = pytest.mark.integration

EVENTS = "rebalance-events"
SESSION_MS = 6000


@pytest.fixture(scope="module")
def broker_39(tmp_path_factory):
    log = tmp_path_factory.mktemp("broker-3.9") / "broker.log"
    broker = Broker(version=KAFKA_CLASSIC_VERSION, log_path=str(log)).start()
    try:
        broker.create_topics({EVENTS: 1})
        yield broker
    finally:
        broker.stop()


def test_java_consumers_with_the_reporter_are_watched_by_client_id(broker_39, unique, tmp_path):
    bootstrap = broker_39.bootstrap
    topic, group = f"t-{unique}", f"g-{unique}"
    broker_39.create_topics({topic: 2})
    props = {"session.timeout.ms": str(SESSION_MS), "heartbeat.interval.ms": "1000",
             **jt.consumer_properties(bootstrap, EVENTS, interval_ms=2000)}
    reporter = str(jt.jar(jt.REPORTER_JAR))
    procs = {c: jt.console_consumer(bootstrap, topic, group, c, props, extra_classpath=(reporter,),
                                    log_path=tmp_path / f"{c}.log") for c in ("java-a", "java-b")}
    try:
        def snapshots(c):
            return [e for e in events_of(bootstrap, EVENTS, group) if e["type"] == "client_metrics"
                    and e["client_id"] == c and e.get("last_heartbeat_ms_ago") is not None]
        for c in procs:
            e = eventually(lambda c=c: snapshots(c), 120, f"the reporter's snapshots of {c}", interval_s=1.0)[-1]
            assert e["member_id"] == "" and e["source"] == "reporter", e
            assert e["session_timeout_ms"] == SESSION_MS, e  # what the consumer was given (defaults are not seen)

        # matched by client id to the members the coordinator records
        def members_with_gaps():
            recs = records_of(bootstrap, EVENTS, group, status=True)
            gens = [r for r in recs if r["kind"] == "generation" and len(r["members"]) == 2]
            status = [r for r in recs if r["kind"] == "group_status"]
            if not gens or not status or not set(gens[-1]["members"]) <= set(status[-1]["heartbeat_gap_ratios"]):
                return None
            return gens[-1]["members"]
        members = eventually(members_with_gaps, 90, "heartbeat gap ratios of both coordinator members", interval_s=1.0)
        member = {c: next(m for m in members if m.startswith(c + "-")) for c in procs}

        kill_hard(procs.pop("java-b"))

        def timeout_of_b():
            return [r for r in records_of(bootstrap, EVENTS, group)
                    if r["kind"] == "member_timeout" and r["member_id"] == member["java-b"]]
        timeouts = eventually(timeout_of_b, 120, "the session timeout of java-b", interval_s=2.0)
        assert timeouts[0]["timeout"] == "session" and timeouts[0]["client_id"] == "java-b"

        stop_gracefully(procs.pop("java-a"))
        leaves = eventually(lambda: [e for e in events_of(bootstrap, EVENTS, group)
                                     if e["type"] == "leave" and e["client_id"] == "java-a"], 60, "java-a's leave")
        assert leaves[0]["member_id"] == "" and leaves[0]["reason"] == "the consumer is being closed"

        # the consumer left before its reporter closed: the coordinator's empty group came first, the leave confirms
        status = [r for r in records_of(bootstrap, EVENTS, group, status=True) if r["kind"] == "group_status"]
        assert status[-1]["state"] == "Empty" and status[-1]["members"] == 0, status[-1]
    finally:
        for p in procs.values():
            kill_hard(p)
