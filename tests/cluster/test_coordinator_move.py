"""A group's coordinator moves when its broker dies: three Apache Kafka nodes (KafkaCluster), a real group of
instrumented kafka-python consumers, the coordinating broker SIGKILLed. What the coordinator logs of the
surviving brokers and `__consumer_offsets` let the monitor reconstruct of the move and of the group."""
from __future__ import annotations

import time

import pytest

from helpers.eventually import eventually

from rebalance_monitor.decoding.reference import decode_record
from rebalance_monitor.instrument.emitter import MemoryEmitter
from rebalance_monitor.testing import witnesses as W
from rebalance_monitor.testing.kafka_admin import create_topics
from rebalance_monitor.workload.live_members import Member, MemberSpec

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def kafka_cluster():
    from helpers.kafka_cluster import KafkaCluster

    cluster = KafkaCluster(size=3).start()
    yield cluster
    cluster.stop()


def _stable(members, after: int | None = None) -> int | None:
    snaps = [m.snapshot() for m in members]
    gens = {s.generation for s in snaps}
    if len(gens) == 1 and all(s.state == "STABLE" and s.assignment for s in snaps):
        gen = gens.pop()
        if gen > 0 and (after is None or gen >= after):
            return gen
    return None


def test_the_coordinator_moves_and_the_monitor_sees_it(kafka_cluster):
    cluster = kafka_cluster
    group, topic = f"moving-{int(time.time())}", "moving-topic"
    create_topics(cluster.bootstrap, {topic: 4}, replication=3)
    emitter = MemoryEmitter()
    members = [Member(MemberSpec(bootstrap=cluster.bootstrap, group=group, topics=[topic], client_id=f"mv-{i}",
                                 session_timeout_ms=10000, heartbeat_interval_ms=1000), emitter).start()
               for i in range(2)]
    try:
        before = eventually(lambda: _stable(members), 90, "the group to form", interval_s=0.2)
        ids_before = sorted(m.snapshot().member_id for m in members)
        old = cluster.coordinator_of(group)
        partition = next(p for p in range(cluster.offsets_partitions)
                         if p == __import__("rebalance_monitor.core.coordinator_placement",
                                            fromlist=["x"]).offsets_partition_for(group, cluster.offsets_partitions))
        killed_at = int(time.time() * 1000)
        cluster.kill(old.node_id)
        new = eventually(lambda: (lambda n: n if n.node_id != old.node_id else None)(cluster.coordinator_of(group)),
                            90, "a new coordinator", interval_s=0.2)
        # the members find the new coordinator; the group carries on (a rebalance may or may not follow)
        after = eventually(lambda: _stable(members, before), 90, "the group to be stable at the new coordinator",
                           interval_s=0.2)
        ids_after = sorted(m.snapshot().member_id for m in members)
        time.sleep(2)
    finally:
        for m in members:
            m.stop()
    emitter.flush()

    # --- the surviving brokers' coordinator logs ----------------------------------------------------------
    lines = [ln.encode() for n in cluster.nodes if n.node_id != old.node_id
             for ln in n.coordinator_log.read_text(errors="replace").splitlines()]
    moves = []
    for line in lines:
        events, rejects = decode_record("coordinator-log", line)
        assert not rejects, (line, rejects)
        moves += [e for e in events if e.type == "coordinator_change" and e.partition == partition
                  and e.ts >= killed_at - 1000]
    # the new coordinator says it took the group's partition over (elected / loading), after the kill
    assert any(e.action == "elected" and e.broker == new.node_id for e in moves), \
        (moves, [ln for ln in lines if f"partition={partition}]" in ln.decode() or f"-{partition} " in ln.decode()
                 or f"partition {partition}" in ln.decode()][-12:])

    # --- what the monitor makes of the group from the new coordinator's log and __consumer_offsets ----------
    offsets = W.read_topic(cluster.bootstrap.split(",")[new.node_id - 1], "__consumer_offsets")
    by_offsets = [r for r in W.reconstruct("offsets-topic", offsets, groups={group}) if r["kind"] == "generation"]
    gens = {r["generation"]: r for r in by_offsets}
    assert sorted(gens[before]["members"]) == ids_before
    assert sorted(gens[after]["members"]) == ids_after
    by_log = [r for r in W.reconstruct("coordinator-log", [(None, ln, None) for ln in lines], groups={group})
              if r["kind"] == "generation"]
    if after > before:
        # a rebalance at the new coordinator: its log shows it, with the move among its causes when it follows
        # the move closely
        rec = next(r for r in by_log if r["generation"] == after)
        assert sorted(rec["members"]) == ids_after
        assert {c["cause"] for c in rec["causes"]} & {"coordinator_change", "member_joined", "leader_rejoin",
                                                       "unknown"}, rec["causes"]
