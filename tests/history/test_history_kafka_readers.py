"""`rebalance-monitor history` over the job's Kafka history topic with either client: kafka-python where
confluent-kafka (an extra) is missing, the base install (scripts/test_base_install.sh runs this module there)."""
from __future__ import annotations

import json
import uuid

import pytest

from rebalance_monitor.history import reader as R
from rebalance_monitor.kafka_connection import KafkaConnection

pytestmark = pytest.mark.integration


def test_both_clients_read_the_history_topic_alike(broker):
    from kafka import KafkaProducer

    topic = f"history-{uuid.uuid4().hex[:6]}"
    broker.create_topics({topic: 3})
    p = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(30):
        group = f"g{i % 3}"
        p.send(topic, key=group.encode(), value=json.dumps({"kind": "generation", "group": group, "ts": 1000 + i,
                                                           "generation": i}).encode(), partition=i % 3)
    p.flush()
    p.close()
    conn = KafkaConnection(bootstrap_servers=broker.bootstrap)
    q = R.Query(group="g1", since_ms=1005)
    got = list(R._read_kafka_python(conn, topic, q, timeout_s=30))
    assert [r["ts"] for r in got] == [1000 + i for i in range(30) if i % 3 == 1 and 1000 + i >= 1005]
    assert list(R.read_kafka(conn, topic, q, timeout_s=30)) == got  # confluent-kafka where installed
    with pytest.raises(FileNotFoundError):
        list(R._read_kafka_python(conn, f"absent-{topic}", q, timeout_s=5))
