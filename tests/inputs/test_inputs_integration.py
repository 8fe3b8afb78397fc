"""Integration: `__consumer_offsets`-format records and broker log lines travel through topics on the real
broker (kafka-python producer and consumer), are read back and decoded."""
from __future__ import annotations

import json
import time

import pytest

import helpers.offsets_encoder as enc

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.inputs.coordinator_log import decode_log_record
from rebalance_monitor.inputs.offsets_topic import OffsetsTopicDecoder

pytestmark = pytest.mark.integration
T1 = "5f0e7c1e-5d6b-4a54-9e57-0d2b5c8e2c11"


def _records():
    sub = enc.consumer_subscription(3, ["orders"], None, owned=[("orders", 0)], generation=4, rack="r1")
    asg = enc.consumer_assignment(3, [("orders", 0), ("orders", 1)])
    member = {"member_id": "m-1", "group_instance_id": None, "client_id": "c-1", "client_host": "/127.0.0.1",
              "subscription": sub, "assignment": asg}
    return [
        (enc.offset_commit_key("grp", "orders", 0), enc.offset_commit_value(3, 17, "", 1)),
        (enc.group_metadata_key("grp"), enc.group_metadata_value(4, "consumer", 5, "range", "m-1", [member])),
        (enc.group_key(4, "cg"), enc.cg_partition_metadata_value([(T1, "orders", 2)])),
        (enc.group_key(8, "cg", "m-9"), enc.cg_current_assignment_value(3, 2, 0, [(T1, [1])])),
        (enc.group_metadata_key("grp"), None),
    ]


def _consume_all(bootstrap: str, topic: str, expected: int, timeout_s: float = 30.0):
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             consumer_timeout_ms=1000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out = []
        deadline = time.monotonic() + timeout_s
        while len(out) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                out.extend(batch)
        return out
    finally:
        consumer.close()


def test_records_and_log_lines_through_the_broker(broker, unique):
    from kafka import KafkaProducer

    offsets_topic, log_topic = f"offsets-{unique}", f"logs-{unique}"
    broker.create_topics({offsets_topic: 1, log_topic: 1})
    lines = [
        "[2024-02-03 22:34:30,445] INFO [GroupCoordinator 1]: Preparing to rebalance group grp in state "
        "PreparingRebalance with old generation 4 (__consumer_offsets-3) (reason: Adding new member m-1 with group "
        "instance id None; client reason: not provided) (kafka.coordinator.group.GroupCoordinator)",
        json.dumps({"@timestamp": "2024-02-03T22:34:31.000Z", "message": "[2024-02-03 22:34:31,000] INFO "
                    "[GroupCoordinator 1]: Assignment received from leader m-1 for group grp for generation 5. The "
                    "group has 1 members, 0 of which are static. (kafka.coordinator.group.GroupCoordinator)"}),
        "[2024-02-03 22:34:32,000] INFO [KafkaServer id=1] unrelated (kafka.server.KafkaServer)",
    ]
    records = _records()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    try:
        for i, (k, v) in enumerate(records):
            producer.send(offsets_topic, key=k, value=v, timestamp_ms=1_700_000_000_000 + i)
        for line in lines:
            producer.send(log_topic, value=line.encode(), timestamp_ms=1_700_000_000_000)
        producer.flush(timeout=30)
    finally:
        producer.close()

    got = _consume_all(broker.bootstrap, offsets_topic, len(records))
    assert len(got) == len(records)
    decoder = OffsetsTopicDecoder()
    decoded = [decoder.decode(r.key, r.value, r.timestamp) for r in got]
    assert [d.rejected_reason for d in decoded] == [None] * len(records)
    assert [d.record_type for d in decoded] == ["OffsetCommit v3", "GroupMetadata v4",
                                                "ConsumerGroupPartitionMetadata v0",
                                                "ConsumerGroupCurrentMemberAssignment v0", "GroupMetadata tombstone"]
    events = [e for d in decoded for e in d.events]
    for e in events:
        assert not isinstance(parse_event(e), Rejected), e
    assert [e["type"] for e in events] == ["commit", "generation_completed", "sync", "group_deleted"]
    assert events[0]["offsets"] == [["orders", 0, 17]] and events[0]["ts"] == 1_700_000_000_000
    member = events[1]["members"][0]
    assert (member["assignment"], member["owned"], member["generation"], member["rack"]) == \
        ([["orders", 0], ["orders", 1]], [["orders", 0]], 4, "r1")
    assert events[2]["assignment"] == [["orders", 1]]  # topic id resolved through the partition metadata record

    got_lines = _consume_all(broker.bootstrap, log_topic, len(lines))
    assert len(got_lines) == len(lines)
    results = [decode_log_record(r.value, r.timestamp) for r in got_lines]
    assert [r.skipped for r in results] == [False, False, True]
    # the reason's new member is tracked as it joins (a `join` of m-1 beside the rebalance it started)
    assert [e["type"] for r in results for e in r.events] == ["rebalance_started", "join", "generation_completed"]
    assert results[0].events[0]["member_id"] == "m-1" and results[0].events[1]["member_id"] == "m-1"
    assert results[1].events[0]["ts"] == 1706999671000 and results[1].events[0]["leader"] == "m-1"
