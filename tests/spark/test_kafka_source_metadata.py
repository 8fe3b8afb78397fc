"""What the Python source asks the cluster before a batch. Which ListOffsets errors the confluent path asks again:
librdkafka's admin results mark none retriable, and a topic created a moment ago answers NOT_LEADER_FOR_PARTITION
until its leaders are known (seen in a CI run). And the fetch that confirms the end offsets, with both clients."""
from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError

from rebalance_monitor.spark.kafka_source.metadata import leader_moving, open_meta
from rebalance_monitor.spark.kafka_source.options import SourceOptions


def test_a_leader_not_there_yet_is_asked_again():
    for code in (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                 KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.REQUEST_TIMED_OUT):
        err = KafkaError(code)
        assert not err.retriable()  # why the name is read: the flag is not set on such errors
        assert leader_moving(err)


def test_other_errors_are_not_asked_again():
    for code in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.INVALID_REQUEST, KafkaError.UNKNOWN):
        assert not leader_moving(KafkaError(code))
    assert not leader_moving(None)
    assert leader_moving(KafkaError(KafkaError.UNKNOWN, retriable=True))


@pytest.mark.integration
@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_end_offsets_are_confirmed_by_a_fetch_at_every_batch(broker, unique, client, caplog):
    """`verifyEndOffsets`: each batch's latest offsets are confirmed by the fetch response's high watermark. The
    kafka-python probe once got no fetch response when it was given the same partitions again (it fell back to
    the listed offsets after waiting 10 s, every other batch), and never fetched from a topic created after
    it started."""
    from confluent_kafka import Producer

    first, second = f"{unique}-a", f"{unique}-b"
    broker.create_topics({first: 2})
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce(first, value=b"x", partition=i % 2)
    producer.flush()
    opts = SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap, "subscribePattern": f"{unique}-.*"})
    meta = open_meta(opts, client)
    try:
        with caplog.at_level(logging.WARNING, logger="rebalance_monitor.spark.kafka_source"):
            for batch in range(4):
                if batch == 2:  # a topic matching the pattern appears
                    broker.create_topics({second: 1})
                    producer.produce(second, value=b"y", partition=0)
                    producer.flush()
                tps = meta.partitions()
                latest = meta.latest(tps)
                want = {(first, 0): 5, (first, 1): 5, **({(second, 0): 1} if batch >= 2 else {})}
                assert latest == want, (batch, latest)
    finally:
        meta.close()
    assert [r.getMessage() for r in caplog.records if "no fetch response" in r.getMessage()] == []
