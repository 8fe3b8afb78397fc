"""A Kafka record's timestamp in epoch ms, read only where the decoder needs it.

The Python source (spark/kafka_source/) hands the decoder either the timestamp already (an int, or None) or a
confluent-kafka message whose timestamp is read later: the decoder needs the timestamps of a few records only
(each group's newest event, the batch's), and reading every record's cost about a third of that client's read
(`ConfluentRangeClient`, `stamps_later`). Here, below both the source and the decoder, so that neither imports the
other for it.
"""
from __future__ import annotations

CONFLUENT_TS_TYPE = {0: -1, 1: 0, 2: 1}  # librdkafka -> Java ids (NoTimestamp, CreateTime, LogAppendTime)


def append_ms(stamp) -> int | None:
    """A record's Kafka timestamp in epoch ms, None if it has none. `stamp`: that already (an int or None), or a
    confluent-kafka message, whose timestamp is read only now."""
    if stamp is None or type(stamp) is int:
        return stamp
    kind, ts = stamp.timestamp()
    return ts if CONFLUENT_TS_TYPE.get(kind, -1) >= 0 and ts is not None and ts >= 0 else None
