"""Topic ids of KIP-848 `__consumer_offsets` records resolved to names (inputs/topic_ids.py): the map's rules, and
on the real broker (tests/helpers/fixtures_kafka.py) the ids Kafka 4.4 writes, named from the cluster by replay's
path and the decode stage's alike."""
from __future__ import annotations

import io
import json
import time

import pytest

from rebalance_monitor.inputs.topic_ids import TopicNames, cluster_lookup, kafka_uuid, resolver_for
from rebalance_monitor.kafka_connection import KafkaConnection

T1, T2 = "5f0e7c1e-8a3b-4c1d-9e2f-0a1b2c3d4e5f", "00000000-0000-0000-0000-000000000001"


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_an_unknown_id_asks_the_cluster_once_then_waits_before_asking_again():
    calls, clock = [], Clock()
    cluster = {T1: "orders"}

    def lookup():
        calls.append(clock.t)
        return dict(cluster)

    names = TopicNames(lookup=lookup, retry_s=30, clock=clock)
    assert names.get(T1) == "orders" and calls == [0.0]
    assert names.get(T1) == "orders" and calls == [0.0]  # known: not asked again
    assert names.get(T2, T2) == T2 and len(calls) == 1  # a new id right after: too soon (retry_s / 10)
    clock.t = 3.0
    assert names.get(T2, T2) == T2 and len(calls) == 2  # asked; still unknown (a deleted topic)
    clock.t = 20.0
    assert names.get(T2, T2) == T2 and len(calls) == 2  # the cluster did not know it: only after retry_s
    cluster[T2] = "payments"
    clock.t = 33.0
    assert names.get(T2, T2) == "payments" and len(calls) == 3
    assert names.take_unresolved() == {T2: 3} and names.take_unresolved() == {}


def test_a_cluster_away_leaves_ids_as_ids_and_counts_them():
    def lookup():
        raise ConnectionError("no broker")

    names = TopicNames(lookup=lookup)
    assert names.get(T1, T1) == T1 and names.lookup_errors == 1
    names[T1] = "orders"  # learned from a ConsumerGroupPartitionMetadata record (Kafka 3.8-4.0)
    assert names.get(T1) == "orders"
    assert names.take_unresolved() == {T1: 1}


def test_kafka_uuid_halves():
    assert kafka_uuid(0, 1) == T2
    assert kafka_uuid(-1, -1) == "ffffffff-ffff-ffff-ffff-ffffffffffff"


def test_resolver_from_a_file(tmp_path):
    f = tmp_path / "ids.json"
    f.write_text('{"%s": "orders"}' % T1)
    names = resolver_for(str(f))
    assert names.get(T1) == "orders" and resolver_for(str(f)) is names  # one per process and spec
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    with pytest.raises(ValueError):
        resolver_for(str(bad))


# --- on the real broker ------------------------------------------------------------------------------
def _kip848_group_records(broker, group: str, topic: str) -> list:
    """The `__consumer_offsets` records of a KIP-848 group (one confluent-kafka member, group.protocol=consumer)
    that took every partition of `topic`, then left."""
    from confluent_kafka import Consumer

    from rebalance_monitor.testing.witnesses import read_topic

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "log_level": 3})
    c.subscribe([topic])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(c.assignment()) < 3:  # polls: it drives the consumer
        c.poll(0.2)
    assert len(c.assignment()) == 3, "the KIP-848 member got no assignment"
    c.close()
    return [r for r in read_topic(broker.bootstrap, "__consumer_offsets") if r[0] and group.encode() in r[0]]


@pytest.mark.integration
def test_kafka_44_assignments_name_topic_ids_that_the_cluster_names(broker, unique):
    from rebalance_monitor.decoding.reference import decode_record

    broker.create_topics({unique: 3})
    records = _kip848_group_records(broker, unique, unique)
    lookup = cluster_lookup(KafkaConnection(broker.bootstrap))
    ids = {tid for tid, name in lookup().items() if name == unique}
    assert len(ids) == 1

    def assignments(topic_names):
        out = []
        for key, value, ts in records:
            events, _ = decode_record("offsets-topic", value, key=key, ts_ms=ts, topic_names=topic_names)
            out += [e.assignment for e in events if e.type == "sync" and e.assignment]
        return out

    raw = assignments(None)
    assert raw and {tp[0] for a in raw for tp in a} == ids  # Kafka 4.4 writes ids, and no id -> name record
    names = TopicNames(lookup=lookup)
    named = assignments(names)
    assert {tp[0] for a in named for tp in a} == {unique}
    assert sorted(tp[1] for tp in named[0]) == [0, 1, 2] and names.take_unresolved() == {}


@pytest.mark.integration
def test_replay_names_topics_from_the_cluster_and_counts_the_ids_it_cannot(broker, unique):
    from rebalance_monitor.config import load_config
    from rebalance_monitor.replay import run_replay
    from rebalance_monitor.testing.witnesses import offsets_dump_lines

    topic = f"{unique}-t"  # not the group's name: the output must name the topic only where it resolved
    broker.create_topics({topic: 3})
    dump = "\n".join(offsets_dump_lines(_kip848_group_records(broker, unique, topic))) + "\n"

    def replay(**overrides):
        cfg = load_config(env={}, overrides={"kafka.bootstrap_servers": broker.bootstrap, **overrides})
        out, err = io.StringIO(), io.StringIO()
        assert run_replay(cfg, "offsets-topic", io.StringIO(dump), out, err) == 0
        gens = [r for r in map(json.loads, out.getvalue().splitlines()) if r["kind"] == "generation"]
        # (topic, partition) of every assignment (a generation may complete before the member got its
        # partitions: KIP-848 members sit at the new epoch with none until the target is computed)
        return {(tp[0], tp[1]) for g in gens for tps in (g["assignment"] or {}).values() for tp in tps}, err.getvalue()

    assigned, err = replay()
    assert assigned == {(topic, 0), (topic, 1), (topic, 2)} and "unresolved_topic_id" not in err
    assigned, err = replay(**{"kafka.topic_ids": "none"})
    assert len(assigned) == 3 and not {t for t, _ in assigned} & {topic}
    assert "unresolved_topic_id=" in err
