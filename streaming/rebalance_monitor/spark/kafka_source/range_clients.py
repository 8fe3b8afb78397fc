"""One partition's offset range read with either Kafka client, behind one small protocol (`RangeClient`).

A range client is a consumer assigned to one partition at the range's first offset; it never joins a group nor
commits. `poll(n)` polls once, for up to `n` records, and returns them column by column (`Polled`: offsets, keys,
values, timestamps and their types, headers), in the order the client received them. Where the position asked for
is no longer in the log (offset out of range, with failOnDataLoss: the client's reset policy is "error"/"none"),
`Polled.gone` holds the `RecordsGone` that ended the poll, after the records before it; any other error the client
will not retry raises a RuntimeError. `position()` is the client's fetch position (it moves past offsets that are
not records: compacted away, transaction markers). The read loop over a range is range_reader.py's; this module only
speaks each client's dialect. Columns, not a tuple per record: a busy partition gives tens of thousands of records
a second, and list comprehensions over the client's records cost a fraction of a loop that builds each record.
"""
from __future__ import annotations

from typing import NamedTuple, Protocol

from ...decoding.append_time import CONFLUENT_TS_TYPE as _CONFLUENT_TS_TYPE
from .options import SourceOptions

POLL_TIMEOUT_MS = 500  # one poll's wait for records



class RecordsGone(Exception):
    """The client's position is no longer in the partition's log (the client's own error is the message)."""


class Polled(NamedTuple):
    """One poll's records, column by column: offsets, keys, values, timestamps (ms), their types (Java's ids: -1
    none, 0 CreateTime, 1 LogAppendTime), headers as the client gives them (None when the rows carry no headers);
    `gone`: the error that ended the poll after these records, if the position left the log. With `ts_types`
    None, `ts` holds stamps instead (`decoding.append_time.append_ms` reads one): the decoder needs few records'
    timestamps."""

    offsets: list
    keys: list
    values: list
    ts: list
    ts_types: list
    headers: list | None
    gone: RecordsGone | None = None


EMPTY_POLL = Polled([], [], [], [], [], None)


class RangeClient(Protocol):
    """What the read loop needs of a Kafka client."""

    def poll(self, max_records: int) -> Polled:
        """One poll: up to `max_records` records."""

    def position(self) -> int | None:
        """The next offset the client will fetch (None when it does not know yet)."""

    def close(self) -> None:
        """Leave the partition, close the connections."""

    # A client kept between ranges (client_pool.py) also has `pause()`, `resume()` and `seek(offset)`.


class ConfluentRangeClient:
    """confluent-kafka (librdkafka): records from `Consumer.consume`, errors as messages. `stamps_later`: the
    records' timestamps are left in the messages (`Polled.ts`, read by `decoding.append_time.append_ms`); set when
    the source decodes (option "decode"), whose rows need few of them."""

    def __init__(self, opts: SourceOptions, r):
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        conf = opts.confluent_conf()
        conf["auto.offset.reset"] = "error" if opts.fail_on_data_loss else "earliest"
        conf.setdefault("fetch.wait.max.ms", 100)
        self._range = r
        self._headers = opts.include_headers
        self.stamps_later = opts.decode is not None
        self._eof = KafkaError._PARTITION_EOF
        self._gone = (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE)
        self._tp = TopicPartition(r.topic, r.partition)
        self._consumer = Consumer(conf)
        self._consumer.assign([TopicPartition(r.topic, r.partition, r.start)])

    def poll(self, max_records: int) -> Polled:
        msgs = self._consumer.consume(num_messages=max_records, timeout=POLL_TIMEOUT_MS / 1000)
        errors = [m.error() for m in msgs]
        gone = None
        if errors.count(None) != len(errors):  # rare: keep the records, act on the errors in order
            kept = []
            for m, err in zip(msgs, errors):
                if err is None:
                    kept.append(m)
                    continue
                code = err.code()
                if code == self._eof:
                    continue
                if code in self._gone:
                    gone = RecordsGone(err.str())
                    break
                if err.fatal() or not err.retriable():
                    raise RuntimeError(f"Kafka error reading {self._range}: {err.str()}")
            msgs = kept
        ts, ts_types = (msgs, None) if self.stamps_later else stamp_columns(msgs)
        return Polled([m.offset() for m in msgs], [m.key() for m in msgs], [m.value() for m in msgs], ts, ts_types,
                      [m.headers() for m in msgs] if self._headers else None, gone)

    def position(self) -> int | None:
        return self._consumer.position([self._tp])[0].offset

    def pause(self) -> None:
        self._consumer.pause([self._tp])

    def resume(self) -> None:
        self._consumer.resume([self._tp])

    def seek(self, offset: int) -> None:
        from confluent_kafka import TopicPartition

        self._consumer.seek(TopicPartition(self._tp.topic, self._tp.partition, offset))

    def close(self) -> None:
        self._consumer.close()


class KafkaPythonRangeClient:
    """kafka-python: records from `KafkaConsumer.poll`, errors as exceptions."""

    def __init__(self, opts: SourceOptions, r):
        from kafka import KafkaConsumer, TopicPartition
        from kafka import errors

        conf = opts.kafka_python_conf()
        conf["auto_offset_reset"] = "none" if opts.fail_on_data_loss else "earliest"
        conf.setdefault("max_poll_records", 10_000)
        self._headers = opts.include_headers
        self._gone = (errors.OffsetOutOfRangeError, errors.NoOffsetForPartitionError)
        self._tp = TopicPartition(r.topic, r.partition)
        self._consumer = KafkaConsumer(**conf)
        self._consumer.assign([self._tp])
        self._consumer.seek(self._tp, r.start)

    def poll(self, max_records: int) -> Polled:
        try:
            polled = self._consumer.poll(timeout_ms=POLL_TIMEOUT_MS, max_records=max_records).get(self._tp, [])
        except self._gone as exc:
            gone = RecordsGone(str(exc))
            gone.__cause__ = exc
            return EMPTY_POLL._replace(gone=gone)
        return Polled([m.offset for m in polled], [m.key for m in polled], [m.value for m in polled],
                      [m.timestamp for m in polled],
                      [-1 if m.timestamp_type is None else m.timestamp_type for m in polled],
                      [m.headers for m in polled] if self._headers else None)

    def position(self) -> int | None:
        return self._consumer.position(self._tp)

    def pause(self) -> None:
        self._consumer.pause(self._tp)

    def resume(self) -> None:
        self._consumer.resume(self._tp)

    def seek(self, offset: int) -> None:
        self._consumer.seek(self._tp, offset)

    def close(self) -> None:
        self._consumer.close()


def stamp_columns(msgs: list) -> tuple[list, list]:
    """The timestamps (ms) of confluent-kafka messages and their types (Java's ids), as `Polled` has them."""
    stamps = [m.timestamp() for m in msgs]
    types = _CONFLUENT_TS_TYPE
    return [ts for _, ts in stamps], [types.get(kind, -1) for kind, _ in stamps]


def open_range_client(opts: SourceOptions, client: str, r) -> RangeClient:
    """A range client of `client` ("confluent" or "kafka-python"), assigned at `r.start`."""
    return ConfluentRangeClient(opts, r) if client == "confluent" else KafkaPythonRangeClient(opts, r)
