"""Which ListOffsets errors the confluent path asks again: librdkafka's admin results mark none retriable, and a
topic created a moment ago answers NOT_LEADER_FOR_PARTITION until its leaders are known (seen in a CI run)."""
from __future__ import annotations

from confluent_kafka import KafkaError

from rebalance_monitor.spark.kafka_source.metadata import leader_moving


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
