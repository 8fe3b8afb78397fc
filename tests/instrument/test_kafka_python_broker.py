"""kafka-python instrumentation against the real Apache Kafka broker (tests/helpers/fixtures_kafka.py)."""
from __future__ import annotations

import threading
import time

import pytest

from helpers.eventually import eventually

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.instrument import KafkaEmitter, MemoryEmitter, instrument_consumer, read_events
from rebalance_monitor.testing.broker import free_port
from rebalance_monitor.workload.live_members import Member, MemberSpec
from rebalance_monitor.workload.scenarios import Ctx
from rebalance_monitor.workload.traffic import produce_traffic

pytestmark = pytest.mark.integration


def _ctx(broker, unique, emitter, partitions=4) -> Ctx:
    return Ctx(name=unique, bootstrap=broker.bootstrap, events_topic=f"{unique}-events", group=unique,
               topic=unique, partitions=partitions, emitter=emitter, session_timeout_ms=6000, rate=0)


def test_group_of_two_emits_join_sync_heartbeat_commit_leave(broker, unique):
    events_topic = f"{unique}-events"
    broker.create_topics({unique: 4, events_topic: 1})
    produce_traffic(broker.bootstrap, unique, rate=200, duration_s=0.5)
    emitter = KafkaEmitter(broker.bootstrap, events_topic)
    ctx = _ctx(broker, unique, emitter)
    try:
        a = ctx.add_member("alpha", auto_commit_interval_ms=500)
        gen_a = ctx.wait_stable([a])
        first = a.snapshot()
        b = ctx.add_member("beta", auto_commit_interval_ms=500)
        gen_ab = ctx.wait_stable([a, b], after_generation=gen_a)
        time.sleep(2.5)  # heartbeats (1 s interval) and auto-commits in the stable generation
        second_a, second_b = a.snapshot(), b.snapshot()
        ctx.stop_member(b)
        ctx.stop_member(a)
    finally:
        ctx.cleanup()
        emitter.close(timeout=10)
    stats = emitter.stats()
    assert stats["dropped"] == 0 and stats["errors"] == 0 and stats["sent"] == stats["emitted"] > 0

    events = read_events(broker.bootstrap, events_topic, group=unique, timeout_s=20,
                         until=lambda evs: sum(e["type"] == "leave" for e in evs) >= 2)
    parsed = [parse_event(e) for e in events]
    assert not [p for p in parsed if isinstance(p, Rejected)]

    def of(client, etype=None):
        return [e for e in events if e.get("client_id") == client and (etype is None or e["type"] == etype)]

    for client, snaps in (("alpha", [first, second_a]), ("beta", [second_b])):
        joins = of(client, "join")
        assert joins[0]["member_id"] == ""  # the first JoinGroup carries no member id
        assert joins[0]["protocols"] == ["range", "roundrobin"] and joins[0]["topics"] == [unique]
        assert joins[0]["session_timeout_ms"] == 6000 and joins[0]["heartbeat_interval_ms"] == 1000
        member_id = snaps[-1].member_id
        assert any(j["member_id"] == member_id for j in joins)
        syncs = of(client, "sync")
        # the sync events carry the generations and assignments the consumer really had
        for snap in snaps:
            match = [s for s in syncs if s["generation"] == snap.generation]
            assert match, (client, snap.generation, syncs)
            assert match[-1]["member_id"] == snap.member_id
            assert match[-1]["assignment"] == snap.assignment
            assert match[-1]["protocol"] == "range"
        beats = [h for h in of(client, "heartbeat") if h["generation"] == gen_ab and h["error"] is None]
        assert beats and all(h["member_id"] == member_id for h in beats)
        commits = [c for c in of(client, "commit") if c.get("generation") == gen_ab]
        assert commits and {tuple(o[:2]) for o in commits[-1]["offsets"]} <= {tuple(tp) for tp in snaps[-1].assignment}
        # order per member: its first join < its sync of the last generation < heartbeats < leave
        seq = [e["type"] for e in of(client) if e["type"] in ("join", "sync", "heartbeat", "leave")]
        assert seq[0] == "join" and seq[-1] == "leave"
        last_sync = max(i for i, e in enumerate(of(client)) if e["type"] == "sync" and e["generation"] == gen_ab)
        later = [e["type"] for e in of(client)[last_sync:]]
        assert "heartbeat" in later and later.index("heartbeat") < later.index("leave")
        leave = of(client, "leave")[-1]
        assert leave["reason"] == "the consumer is being closed" and leave["member_id"] == member_id
    # the leader both members saw is one of them; the existing member saw the rebalance coming
    leaders = {s["leader"] for s in events if s["type"] == "sync" and s["generation"] == gen_ab}
    assert len(leaders) <= 2 and leaders & {second_a.member_id, second_b.member_id}
    alpha_types = [e["type"] for e in of("alpha")]
    assert "revoked" in alpha_types
    assert [e["generation"] for e in of("alpha", "sync")] == sorted(e["generation"] for e in of("alpha", "sync"))


def test_unreachable_events_broker_drops_without_blocking_the_consumer(broker, unique):
    broker.create_topics({unique: 2})
    dead = f"127.0.0.1:{free_port()}"  # nothing listens here
    emitter = KafkaEmitter(dead, "events", max_queue=50, retry_s=0.5)
    member = Member(MemberSpec(bootstrap=broker.bootstrap, group=unique, topics=[unique], client_id="lonely"),
                    emitter).start()
    try:
        eventually(lambda: member.snapshot().state == "STABLE", 40, "the member to be STABLE", interval_s=0.1)
        snap = member.snapshot()
        assert snap.state == "STABLE" and len(snap.assignment) == 2  # the consumer worked normally
        polls_before = snap.polls
        for i in range(500):  # plus a burst far beyond the queue bound: must not block
            emitter.emit({"v": 1, "type": "poll", "ts": 1, "group": unique, "member_id": "x"})
        time.sleep(1.0)
        assert member.snapshot().polls > polls_before  # still polling
    finally:
        member.stop()
    closer = threading.Thread(target=emitter.close, kwargs={"timeout": 5})
    closer.start()
    closer.join(30)
    assert not closer.is_alive()  # close() is bounded even with the broker unreachable
    stats = emitter.stats()
    assert stats["sent"] == 0
    assert stats["dropped"] >= 500 - 50 and stats["dropped"] + stats["queued"] >= stats["emitted"]
    assert stats["errors"] >= 1


def test_failing_hooks_never_reach_the_consumer(broker, unique):
    broker.create_topics({unique: 2})

    class Exploding(MemoryEmitter):
        def emit(self, event):
            raise RuntimeError("instrumentation bug")

    emitter = Exploding()
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=unique, session_timeout_ms=6000,
                             heartbeat_interval_ms=1000)
    inst = instrument_consumer(consumer, emitter)
    assert inst.missing == []
    consumer.subscribe([unique])
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and not consumer.assignment():  # polls: it drives the consumer
            consumer.poll(timeout_ms=200)
        assert len(consumer.assignment()) == 2
        consumer.commit()
    finally:
        consumer.close()
        emitter.close()
    assert emitter.stats()["errors"] >= 3  # join, sync, leave at least: all swallowed and counted
