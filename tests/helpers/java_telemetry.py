"""What the Java plugins' tests read back: the events topic, and the core's records of the plugin's events merged
with the group coordinator's own (`__consumer_offsets`), in time order, as the monitor reads both inputs."""
from __future__ import annotations

import json
import os
import signal


def events_of(bootstrap: str, topic: str, group: str | None = None) -> list[dict]:
    """The JSON events of `topic` (of `group` only, when given), in the topic's order."""
    from rebalance_monitor.testing.witnesses import read_topic

    out = []
    for _key, value, _ts in read_topic(bootstrap, topic):
        ev = json.loads(value)
        if group is None or ev.get("group") == group:
            out.append(ev)
    return out


def records_of(bootstrap: str, events_topic: str, group: str, status: bool = False,
               sources=("offsets-topic", "events"), until_ms: int | None = None,
               coordinator_log=None) -> list[dict]:
    """The core's records of `group` from the plugin's events and `__consumer_offsets` (replay, no Spark), or of
    the `sources` given ("coordinator-log": the lines of the broker's `coordinator_log` file); of the events before
    `until_ms` only, when given (what the monitor knew then)."""
    from rebalance_monitor.config import load_config
    from helpers.replay import group_records
    from rebalance_monitor.decoding.reference import decode_record
    from rebalance_monitor.testing.witnesses import read_topic

    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10})
    events = []
    topics = {"offsets-topic": "__consumer_offsets", "events": events_topic}
    for source in sources:
        if source == "coordinator-log":
            records = [(None, line.encode(), None) for line in open(coordinator_log, errors="replace")]
        else:
            records = read_topic(bootstrap, topics[source])
        for key, value, ts in records:
            evs, _rejects = decode_record(source, value, key=key, ts_ms=ts)
            events.extend(e for e in evs if e.group in (group, "") and (until_ms is None or e.ts < until_ms))
    return group_records(events, cfg, group, status)


def publish_broker_facts(bootstrap: str, events_topic: str, group: str):
    """The broker poller's facts of `group` and the brokers' group settings, asked and published once into
    `events_topic` at the wall clock (as a poller without a job stamps them); returns the (admin, producer) to close."""
    from kafka import KafkaAdminClient, KafkaProducer

    from rebalance_monitor.broker_facts.poller import BrokerFactsPoller

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    poller = BrokerFactsPoller(admin, lambda key, value: producer.send(events_topic, key=key, value=value),
                               flush=producer.flush, event_time=False)
    poller.note_groups([group])
    assert poller.poll_once() > 0
    return admin, producer


def warned_then_timed_out(bootstrap: str, events_topic: str, group: str, member_id: str, what: str,
                          timeout_s: float = 120) -> tuple[dict, dict, list[dict]]:
    """Once `member_id`'s timeout is among the core's records of `group` (`records_of`): its first session warning
    (`member_at_risk`, asserted to exist), that timeout, and all the records."""
    from helpers.eventually import eventually

    def timeouts():
        return [r for r in records_of(bootstrap, events_topic, group) if r["kind"] == "member_timeout"
                and r["member_id"] == member_id]
    timeout = eventually(timeouts, timeout_s, f"the session timeout of {what}", interval_s=2.0)[0]
    records = records_of(bootstrap, events_topic, group)
    warned = [r for r in records if r["kind"] == "member_at_risk" and r["member_id"] == member_id
              and r["risk"] == "session"]
    assert warned, [r for r in records if r["kind"] in ("member_at_risk", "member_timeout")]
    return warned[0], timeout, records


def stalling_consumer(bootstrap: str, topic: str, group: str, client_id: str, max_poll_interval_ms: int,
                      stall_ms: int, log_path):
    """The project's plain Java consumer (streaming/java/test-programs/java-consumer/RmJavaConsumer.java, no
    instrumentation) that stops polling for `stall_ms` a second after its first partitions (a slow handler); its
    heartbeat thread goes on."""
    from rebalance_monitor.testing.java_telemetry import plain_java_consumer

    return plain_java_consumer(bootstrap, topic, group, client_id,
                               {"session.timeout.ms": "6000", "max.poll.interval.ms": str(max_poll_interval_ms),
                                "stall.ms": str(stall_ms), "stall.after.ms": "1000"}, log_path)


def kill_hard(proc) -> None:
    """kill -9 of a process started in its own session (and its children)."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def stop_gracefully(proc) -> None:
    """SIGTERM: Kafka's tools close their consumer (LeaveGroup, the last metrics push) on it."""
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)
