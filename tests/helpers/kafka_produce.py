"""Producing test input to the test broker."""
from __future__ import annotations

import json


def produce(broker, topic, values):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=20)
    for v in values:
        p.send(topic, v if isinstance(v, bytes) else json.dumps(v).encode(), partition=0)
    p.flush()
    p.close()
