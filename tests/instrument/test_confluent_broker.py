"""confluent-kafka instrumentation against the real Apache Kafka broker (tests/conftest.py)."""
from __future__ import annotations

import threading
import time

import pytest

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.instrument import MemoryEmitter

confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
from rebalance_monitor.instrument.confluent import InstrumentedConfluentConsumer  # noqa: E402

pytestmark = pytest.mark.integration


def test_confluent_consumer_group_events(broker, unique):
    broker.create_topics({unique: 4})
    emitter = MemoryEmitter()
    seen = {}
    stop = {"a": threading.Event(), "b": threading.Event()}
    user_assigns = []

    def run(name):
        c = InstrumentedConfluentConsumer({
            "bootstrap.servers": broker.bootstrap, "group.id": unique, "client.id": name,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
            "partition.assignment.strategy": "range"}, emitter)
        c.subscribe([unique], on_assign=lambda _c, parts: user_assigns.append((name, len(parts))))
        while not stop[name].is_set():
            c.poll(0.2)
            assignment = c.assignment()
            if assignment:
                seen[name] = (c.memberid(), sorted([p.topic, p.partition] for p in assignment))
        c.close()

    threads = {n: threading.Thread(target=run, args=(n,), daemon=True) for n in ("a", "b")}
    threads["a"].start()
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and len(seen.get("a", ("", []))[1]) != 4:
        time.sleep(0.1)
    threads["b"].start()
    while time.monotonic() < deadline and not ("b" in seen and len(seen["a"][1]) == 2):
        time.sleep(0.1)
    time.sleep(1.5)
    for n in ("b", "a"):
        stop[n].set()
        threads[n].join(30)
    emitter.close()

    events = emitter.events
    assert events and not [e for e in events if isinstance(parse_event(e), Rejected)]
    assert ("a", 4) in user_assigns and ("b", 2) in user_assigns  # the user's callbacks still run

    def of(client, etype):
        return [e for e in events if e["client_id"] == client and e["type"] == etype]

    for name in ("a", "b"):
        member_id, assignment = seen[name]
        assert of(name, "join")[0]["member_id"] == "" and of(name, "join")[0]["protocols"] == ["range"]
        syncs = of(name, "sync")
        assert syncs[-1]["member_id"] == member_id and syncs[-1]["assignment"] == assignment
        assert syncs[-1]["protocol"] == "range" and syncs[-1]["leader"] is None
        assert of(name, "leave")[-1]["reason"] == "the consumer is being closed"
        assert of(name, "poll")
    gens_a = [s["generation"] for s in of("a", "sync")]
    assert len(gens_a) >= 2 and gens_a[-1] > gens_a[0]  # generation decoded from the group metadata
    assert of("b", "sync")[-1]["generation"] == gens_a[-1]
    assert of("a", "revoked")  # a gave up its partitions when b joined
