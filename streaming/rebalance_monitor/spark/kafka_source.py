"""A Kafka streaming source written as a PySpark 4.x Python data source (format "rmkafka").

It gives the rows Spark's own Kafka connector gives (``key, value, topic, partition, offset, timestamp,
timestampType``, plus ``headers`` with ``includeHeaders=true``), with real per-micro-batch offset ranges,
so a user whose Spark lacks the spark-sql-kafka jar can still run the job. Offsets are JSON
``{topic: {partition: offset}}`` (the next offset to read), as in Spark's connector.

Options (names are case-insensitive):

- ``kafka.bootstrap.servers`` (required) and any other ``kafka.*`` client option, in Java, librdkafka or
  kafka-python spelling; security settings are mapped between the clients (see `kafka_clients`).
- exactly one of ``subscribe`` (comma list), ``subscribePattern`` (regex, full match; topics starting
  with ``__`` only when the pattern does too) or ``assign`` (JSON ``{"topic": [0, 1]}``).
- ``startingOffsets``: ``earliest``, ``latest`` (default) or JSON ``{"t": {"0": 23}}`` (-2 earliest,
  -1 latest; partitions left out start at earliest). Used only when a query starts without checkpoint.
- ``maxOffsetsPerTrigger``: records per micro-batch, spread over partitions by their lag and rounded as
  Spark's own connector rounds (Spark's admission-control API: honoured by ``Trigger.AvailableNow`` too).
- ``minPartitions``: split offset ranges so a batch has at least this many Spark tasks
  (default one task per Kafka partition with new records).
- ``failOnDataLoss`` (default true): fail when records to read were deleted; false: skip them.
- ``client``: ``auto`` (default: confluent-kafka if importable, else kafka-python), ``confluent``,
  ``kafka-python``.
- ``verifyEndOffsets`` (default true): confirm the latest offsets with one fetch per partition. Some
  Kafka-protocol brokers (reimplementations such as Tansu) answer ListOffsets(latest) with the
  base offset of the last record batch plus one instead of the high watermark; the fetch response
  carries the true high watermark. ``false`` trusts ListOffsets (one request; right for Apache Kafka).
- ``kafkaConsumer.pollTimeoutMs`` (default 120000): give up reading a range after this long without
  progress. ``groupIdPrefix``: prefix of the (never joined) group id librdkafka requires.
- ``includeHeaders`` (default false), ``arrowBatchRows`` (default 20000).

New partitions and new topics matching a pattern are picked up at the next micro-batch and read
from their earliest offset. Reads assign partitions directly and never join a consumer group;
offsets are not committed to Kafka (Spark's checkpoint owns them).
"""
from __future__ import annotations

import json
import logging
import math
import re
import time
import uuid
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Iterator, Mapping

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

from rebalance_monitor.spark import kafka_clients

log = logging.getLogger(__name__)

FORMAT = "rmkafka"
CLIENTS = ("auto", "confluent", "kafka-python")
EARLIEST, LATEST = -2, -1

BASE_FIELDS = [
    StructField("key", BinaryType(), True),
    StructField("value", BinaryType(), True),
    StructField("topic", StringType(), True),
    StructField("partition", IntegerType(), True),
    StructField("offset", LongType(), True),
    StructField("timestamp", TimestampType(), True),
    StructField("timestampType", IntegerType(), True),
]
HEADERS_FIELD = StructField(
    "headers",
    ArrayType(StructType([StructField("key", StringType(), True), StructField("value", BinaryType(), True)]), True),
    True,
)


def output_schema(include_headers: bool = False) -> StructType:
    """The rows' schema: Spark's Kafka connector's columns, in its order."""
    return StructType(BASE_FIELDS + ([HEADERS_FIELD] if include_headers else []))


KAFKA_SCHEMA = output_schema(False)

TP = tuple  # (topic, partition)
# with option `decode`, a read task packs each group's events over this many records into one row
PACK_RECORDS = 250_000


# ----------------------------------------------------------------------------------------------
# client choice

def resolve_client(prefer: str = "auto") -> tuple[str, str]:
    """("confluent" | "kafka-python", reason). Raises ImportError when a forced client is missing."""
    prefer = (prefer or "auto").strip().lower()
    if prefer not in CLIENTS:
        raise ValueError(f"option client must be one of {CLIENTS}, got {prefer!r}")
    if prefer == "confluent":
        import confluent_kafka  # noqa: F401

        return "confluent", "forced by option client=confluent"
    if prefer == "kafka-python":
        import kafka  # noqa: F401

        return "kafka-python", "forced by option client=kafka-python"
    try:
        import confluent_kafka  # noqa: F401

        return "confluent", "auto: confluent-kafka (librdkafka) is importable"
    except ImportError:
        import kafka  # noqa: F401

        return "kafka-python", "auto: confluent-kafka is not importable, falling back to kafka-python"


# ----------------------------------------------------------------------------------------------
# options

def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


@dataclass
class SourceOptions:
    settings: dict
    extra: dict
    topics: list | None = None
    pattern: str | None = None
    assign: dict | None = None
    starting: Any = "latest"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    client: str = "auto"
    verify_end_offsets: bool = True
    poll_timeout_ms: int = 120_000
    group_id_prefix: str = "rmkafka"
    include_headers: bool = False
    arrow_batch_rows: int = 20_000
    decode: dict | None = None  # option "decode": emit decoded rows (see decode_stage) instead of records

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> "SourceOptions":
        opts = {str(k).lower(): v for k, v in options.items()}
        settings, extra = kafka_clients.settings_from_options(opts)
        if not settings.get("bootstrap"):
            raise ValueError("option kafka.bootstrap.servers is required")
        o = cls(settings=settings, extra=extra)
        chosen = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k)]
        if len(chosen) != 1:
            raise ValueError("give exactly one of the options subscribe, subscribePattern, assign")
        if "subscribe" in chosen:
            o.topics = [t.strip() for t in str(opts["subscribe"]).split(",") if t.strip()]
        elif "subscribepattern" in chosen:
            o.pattern = str(opts["subscribepattern"])
            re.compile(o.pattern)
        else:
            raw = json.loads(opts["assign"])
            o.assign = {str(t): sorted(int(p) for p in parts) for t, parts in raw.items()}
        start = str(opts.get("startingoffsets", "latest")).strip()
        if start.lower() in ("earliest", "latest"):
            o.starting = start.lower()
        else:
            raw = json.loads(start)
            o.starting = {str(t): {str(int(p)): int(off) for p, off in parts.items()} for t, parts in raw.items()}
        if opts.get("maxoffsetspertrigger") not in (None, ""):
            o.max_offsets_per_trigger = int(opts["maxoffsetspertrigger"])
            if o.max_offsets_per_trigger <= 0:
                raise ValueError("maxOffsetsPerTrigger must be positive")
        if opts.get("minpartitions") not in (None, ""):
            o.min_partitions = int(opts["minpartitions"])
        o.fail_on_data_loss = _truthy(opts.get("failondataloss", "true"))
        o.client = str(opts.get("client", "auto")).strip().lower()
        if o.client not in CLIENTS:
            raise ValueError(f"option client must be one of {CLIENTS}, got {o.client!r}")
        o.verify_end_offsets = _truthy(opts.get("verifyendoffsets", "true"))
        o.poll_timeout_ms = int(opts.get("kafkaconsumer.polltimeoutms", 120_000))
        o.group_id_prefix = str(opts.get("groupidprefix", "rmkafka"))
        o.include_headers = _truthy(opts.get("includeheaders", "false"))
        o.arrow_batch_rows = max(1, int(opts.get("arrowbatchrows", 20_000)))
        if opts.get("decode"):
            o.decode = json.loads(opts["decode"])
            if not isinstance(o.decode, dict) or not isinstance(o.decode.get("topics"), dict):
                raise ValueError('option decode must be JSON {"topics": {topic: format}, "max_bytes": n, '
                                 '"max_future_ms": n}')
        return o

    def topic_selected(self, topic: str) -> bool:
        if self.topics is not None:
            return topic in self.topics
        if self.assign is not None:
            return topic in self.assign
        if topic.startswith("__") and not self.pattern.startswith("__"):
            return False
        return re.fullmatch(self.pattern, topic) is not None

    def confluent_conf(self) -> dict:
        conf = kafka_clients.confluent_config(self.settings, self.extra)
        conf.setdefault("log.connection.close", False)  # brokers close idle connections: not worth a log line
        conf.setdefault("group.id", f"{self.group_id_prefix}-{uuid.uuid4().hex[:12]}")
        conf["enable.auto.commit"] = False
        conf["enable.auto.offset.store"] = False
        return conf

    def kafka_python_conf(self) -> dict:
        conf = kafka_clients.kafka_python_config(self.settings, self.extra)
        conf["group_id"] = None
        conf["enable_auto_commit"] = False
        return conf


# ----------------------------------------------------------------------------------------------
# offset helpers (JSON form {topic: {"partition": offset}} <-> {(topic, partition): offset})

def to_json_offsets(offsets: Mapping[TP, int]) -> dict:
    out: dict = {}
    for (topic, part) in sorted(offsets, key=lambda tp: (tp[0], tp[1])):
        out.setdefault(topic, {})[str(part)] = int(offsets[(topic, part)])
    return out


def from_json_offsets(offsets: Mapping | None) -> dict[TP, int]:
    out: dict[TP, int] = {}
    for topic, parts in (offsets or {}).items():
        for part, off in parts.items():
            out[(topic, int(part))] = int(off)
    return out


def rate_limit(starts: Mapping[TP, int], ends: Mapping[TP, int], max_rows: int) -> dict[TP, int]:
    """End offsets taking about `max_rows` records in all, shared by the partitions in proportion to their
    lag, rounded as Spark's own Kafka connector rounds (so both split a backlog into the same batches): a
    share of one record or more is rounded down, a smaller one up to one record, so no partition starves
    (a batch may then take a few records fewer, or more, than `max_rows`)."""
    lags = {tp: ends[tp] - starts.get(tp, ends[tp]) for tp in ends}
    total = float(sum(lag for lag in lags.values() if lag > 0))
    if total < 1:
        return dict(ends)
    out = {}
    for tp, lag in lags.items():
        if lag <= 0:
            out[tp] = ends[tp]
            continue
        share = max_rows * (lag / total)
        take = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(ends[tp], starts[tp] + take)
    return out


# ----------------------------------------------------------------------------------------------
# metadata / offset lookups, one class per client

class _Meta:
    """Topic metadata and offset lookups (no group membership)."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts

    def partitions(self) -> list[TP]:
        raise NotImplementedError

    def earliest(self, tps: list[TP]) -> dict[TP, int]:
        raise NotImplementedError

    def listed_latest(self, tps: list[TP]) -> dict[TP, int]:
        raise NotImplementedError

    def fetched_high_watermarks(self, listed: Mapping[TP, int], timeout_s: float) -> dict[TP, int]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def latest(self, tps: list[TP]) -> dict[TP, int]:
        listed = self.listed_latest(tps)
        if not self.opts.verify_end_offsets or not listed:
            return listed
        hwm = self.fetched_high_watermarks(listed, timeout_s=10.0)
        out = {}
        for tp, off in listed.items():
            if tp in hwm and hwm[tp] >= off:
                out[tp] = hwm[tp]
            else:
                log.warning("no fetch response for %s-%s: using the listed latest offset %s", tp[0], tp[1], off)
                out[tp] = off
        return out

    def selected(self, all_tps: dict[str, list[int]]) -> list[TP]:
        o = self.opts
        tps: list[TP] = []
        for topic in sorted(all_tps):
            if not o.topic_selected(topic):
                continue
            parts = all_tps[topic]
            if o.assign is not None:
                parts = [p for p in o.assign[topic] if p in parts]
            tps.extend((topic, p) for p in sorted(parts))
        return tps


class _ConfluentMeta(_Meta):
    def __init__(self, opts: SourceOptions):
        super().__init__(opts)
        from confluent_kafka import Consumer
        from confluent_kafka.admin import AdminClient

        conf = opts.confluent_conf()
        self.admin = AdminClient({k: v for k, v in conf.items()
                                  if k not in ("group.id", "enable.auto.commit", "enable.auto.offset.store")})
        probe = dict(conf)
        probe.update({"fetch.wait.max.ms": 10, "queued.min.messages": 1,
                      "max.partition.fetch.bytes": 1024, "queued.max.messages.kbytes": 1024})
        self._probe_conf = probe
        self._probe = None
        self._consumer_cls = Consumer

    def partitions(self) -> list[TP]:
        try:
            md = self.admin.list_topics(timeout=30)
        finally:
            self.admin.poll(0)  # serves the client's log lines (kafka_clients.ClientLog), which else pile up
        return self.selected({t: list(m.partitions) for t, m in md.topics.items() if m.error is None})

    def _list(self, tps, spec, attempts: int = 10) -> dict[TP, int]:
        """ListOffsets; partitions answered with a retriable error (a topic created a moment ago has no leader
        yet: NOT_LEADER_FOR_PARTITION, LEADER_NOT_AVAILABLE) are asked again, with a growing pause (up to 5 s
        each, about half a minute in all: a loaded broker can take that long to elect a new topic's leaders)."""
        from confluent_kafka import KafkaException, TopicPartition

        out: dict[TP, int] = {}
        pending = list(tps)
        for attempt in range(attempts):
            if not pending:
                break
            futures = self.admin.list_offsets({TopicPartition(t, p): spec for t, p in pending}, request_timeout=30)
            retry = []
            for tp, f in futures.items():
                try:
                    out[(tp.topic, tp.partition)] = f.result().offset
                except KafkaException as exc:
                    err = exc.args[0] if exc.args else None
                    if attempt + 1 < attempts and getattr(err, "retriable", lambda: False)():
                        retry.append((tp.topic, tp.partition))
                    else:
                        raise
            pending = retry
            if pending:
                time.sleep(min(5.0, 0.2 * 2 ** attempt))
        return out

    def earliest(self, tps):
        from confluent_kafka.admin import OffsetSpec

        return self._list(tps, OffsetSpec.earliest())

    def listed_latest(self, tps):
        from confluent_kafka.admin import OffsetSpec

        return self._list(tps, OffsetSpec.latest())

    def fetched_high_watermarks(self, listed, timeout_s):
        from confluent_kafka import TopicPartition

        if self._probe is None:
            self._probe = self._consumer_cls(self._probe_conf)
        c = self._probe
        c.assign([TopicPartition(t, p, off) for (t, p), off in listed.items()])
        out: dict[TP, int] = {}
        deadline = time.monotonic() + timeout_s
        try:
            while len(out) < len(listed) and time.monotonic() < deadline:
                c.consume(num_messages=1000, timeout=0.02)
                for (t, p), off in listed.items():
                    if (t, p) in out:
                        continue
                    _, high = c.get_watermark_offsets(TopicPartition(t, p), cached=True)
                    if high is not None and high >= off:
                        out[(t, p)] = high
        finally:
            c.unassign()
        return out

    def close(self):
        if self._probe is not None:
            self._probe.close()
            self._probe = None


class _KafkaPythonMeta(_Meta):
    def __init__(self, opts: SourceOptions):
        super().__init__(opts)
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(**opts.kafka_python_conf())
        probe = opts.kafka_python_conf()
        probe.update({"fetch_max_wait_ms": 10, "max_partition_fetch_bytes": 1024})
        self._probe_conf = probe
        self._probe = None
        self._consumer_cls = KafkaConsumer

    def partitions(self):
        topics = self.consumer.topics()  # refreshes metadata of all topics
        all_tps = {}
        for t in topics:
            parts = self.consumer.partitions_for_topic(t)
            if parts:
                all_tps[t] = list(parts)
        return self.selected(all_tps)

    def earliest(self, tps):
        from kafka import TopicPartition

        if not tps:
            return {}
        res = self.consumer.beginning_offsets([TopicPartition(t, p) for t, p in tps])
        return {(tp.topic, tp.partition): off for tp, off in res.items()}

    def listed_latest(self, tps):
        from kafka import TopicPartition

        if not tps:
            return {}
        res = self.consumer.end_offsets([TopicPartition(t, p) for t, p in tps])
        return {(tp.topic, tp.partition): off for tp, off in res.items()}

    def fetched_high_watermarks(self, listed, timeout_s):
        from kafka import TopicPartition

        if self._probe is None:
            self._probe = self._consumer_cls(**self._probe_conf)
        c = self._probe
        tps = {TopicPartition(t, p): off for (t, p), off in listed.items()}
        c.assign(list(tps))
        for tp, off in tps.items():
            c.seek(tp, off)
        out: dict[TP, int] = {}
        deadline = time.monotonic() + timeout_s
        try:
            while len(out) < len(tps) and time.monotonic() < deadline:
                c.poll(timeout_ms=20, max_records=1000)
                for tp, off in tps.items():
                    key = (tp.topic, tp.partition)
                    if key in out:
                        continue
                    high = c.highwater(tp)
                    if high is not None and high >= off:
                        out[key] = high
        finally:
            c.assign([])
        return out

    def close(self):
        for c in (self._probe, self.consumer):
            if c is not None:
                c.close()
        self._probe = None


def open_meta(opts: SourceOptions, client: str) -> _Meta:
    return _ConfluentMeta(opts) if client == "confluent" else _KafkaPythonMeta(opts)


# ----------------------------------------------------------------------------------------------
# reading one offset range

class KafkaRange(InputPartition):
    """Records [start, end) of one Kafka partition: one Spark task."""

    def __init__(self, topic: str, partition: int, start: int, end: int):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end

    def __repr__(self) -> str:
        return f"KafkaRange({self.topic}-{self.partition} [{self.start}, {self.end}))"


class DataLossError(RuntimeError):
    pass


_CONFLUENT_TS_TYPE = {0: -1, 1: 0, 2: 1}  # librdkafka -> Java ids (NoTimestamp, CreateTime, LogAppendTime)


class _Columns:
    def __init__(self, include_headers: bool):
        self.keys: list = []
        self.values: list = []
        self.offsets: list = []
        self.ts: list = []
        self.ts_types: list = []
        self.headers: list | None = [] if include_headers else None

    def __len__(self):
        return len(self.offsets)

    def records(self, topic: str, partition: int):
        """The records as (topic, partition, offset, append_ms, key, value) tuples (append_ms None when the
        record has no timestamp): what the decoder takes, without an Arrow batch in between."""
        ts = [t if kind >= 0 and t is not None and t >= 0 else None for t, kind in zip(self.ts, self.ts_types)]
        return zip(repeat(topic), repeat(partition), self.offsets, ts, self.keys, self.values)

    def to_batch(self, topic: str, partition: int, schema) -> "Any":
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(self.offsets)
        ts = pc.multiply(pa.array(self.ts, pa.int64()), 1000).cast(schema.field("timestamp").type)
        arrays = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            ts,
            pa.array(self.ts_types, pa.int32()),
        ]
        if self.headers is not None:
            arrays.append(pa.array(self.headers, schema.field("headers").type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _chunk(cols: _Columns, r: KafkaRange, schema, as_records: bool):
    return cols.records(r.topic, r.partition) if as_records else cols.to_batch(r.topic, r.partition, schema)


def _arrow_schema(include_headers: bool):
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(output_schema(include_headers), timezone="UTC")


def _header_list(raw) -> list | None:
    if not raw:
        return []
    return [{"key": k, "value": v} for k, v in raw]


def read_range_confluent(opts: SourceOptions, r: KafkaRange, as_records: bool = False) -> Iterator:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    schema = _arrow_schema(opts.include_headers)
    conf = opts.confluent_conf()
    conf["auto.offset.reset"] = "error" if opts.fail_on_data_loss else "earliest"
    conf.setdefault("fetch.wait.max.ms", 100)
    c = Consumer(conf)
    try:
        tp = TopicPartition(r.topic, r.partition, r.start)
        c.assign([tp])
        nxt = r.start
        cols = _Columns(opts.include_headers)
        last_progress = time.monotonic()
        want_headers = opts.include_headers
        while nxt < r.end:
            msgs = c.consume(num_messages=min(10_000, max(1, r.end - nxt)), timeout=0.5)
            before = nxt
            if msgs:
                keys, values, offsets, ts, tst = cols.keys, cols.values, cols.offsets, cols.ts, cols.ts_types
                for m in msgs:
                    err = m.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        if err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                            raise DataLossError(
                                f"records {r.topic}-{r.partition} from offset {nxt} are no longer available "
                                f"({err.str()}); set failOnDataLoss=false to skip them")
                        if err.fatal() or not err.retriable():
                            raise RuntimeError(f"Kafka error reading {r}: {err.str()}")
                        continue
                    off = m.offset()
                    if off >= r.end:
                        nxt = r.end
                        break
                    if off < nxt:
                        continue
                    tstype, tsval = m.timestamp()
                    keys.append(m.key())
                    values.append(m.value())
                    offsets.append(off)
                    ts.append(tsval)
                    tst.append(_CONFLUENT_TS_TYPE.get(tstype, -1))
                    if want_headers:
                        cols.headers.append(_header_list(m.headers()))
                    nxt = off + 1
                if len(cols) >= opts.arrow_batch_rows:
                    yield _chunk(cols, r, schema, as_records)
                    cols = _Columns(opts.include_headers)
            if nxt > before:
                last_progress = time.monotonic()
            elif nxt < r.end:
                # Offsets may have gaps (compaction, transaction markers): trust the fetch position.
                pos = c.position([TopicPartition(r.topic, r.partition)])[0].offset
                if pos >= r.end:
                    break
                if pos > nxt:
                    nxt = pos
                if (time.monotonic() - last_progress) * 1000 > opts.poll_timeout_ms:
                    raise TimeoutError(f"no records for {r} at offset {nxt} within "
                                       f"kafkaConsumer.pollTimeoutMs={opts.poll_timeout_ms}")
        if len(cols):
            yield _chunk(cols, r, schema, as_records)
    finally:
        c.close()


def read_range_kafka_python(opts: SourceOptions, r: KafkaRange, as_records: bool = False) -> Iterator:
    from kafka import KafkaConsumer, TopicPartition
    from kafka import errors as kerr

    schema = _arrow_schema(opts.include_headers)
    conf = opts.kafka_python_conf()
    conf["auto_offset_reset"] = "none" if opts.fail_on_data_loss else "earliest"
    conf.setdefault("max_poll_records", 10_000)
    c = KafkaConsumer(**conf)
    try:
        tp = TopicPartition(r.topic, r.partition)
        c.assign([tp])
        c.seek(tp, r.start)
        nxt = r.start
        cols = _Columns(opts.include_headers)
        last_progress = time.monotonic()
        want_headers = opts.include_headers
        while nxt < r.end:
            try:
                recs = c.poll(timeout_ms=500, max_records=min(10_000, max(1, r.end - nxt))).get(tp, [])
            except (kerr.OffsetOutOfRangeError, kerr.NoOffsetForPartitionError) as exc:
                raise DataLossError(
                    f"records {r.topic}-{r.partition} from offset {nxt} are no longer available ({exc}); "
                    "set failOnDataLoss=false to skip them") from exc
            before = nxt
            if recs:
                for m in recs:
                    off = m.offset
                    if off >= r.end:
                        nxt = r.end
                        break
                    if off < nxt:
                        continue
                    cols.keys.append(m.key)
                    cols.values.append(m.value)
                    cols.offsets.append(off)
                    cols.ts.append(m.timestamp)
                    cols.ts_types.append(-1 if m.timestamp_type is None else m.timestamp_type)
                    if want_headers:
                        cols.headers.append(_header_list(m.headers))
                    nxt = off + 1
                if len(cols) >= opts.arrow_batch_rows:
                    yield _chunk(cols, r, schema, as_records)
                    cols = _Columns(opts.include_headers)
            if nxt > before:
                last_progress = time.monotonic()
            elif nxt < r.end:
                pos = c.position(tp)
                if pos is not None and pos >= r.end:
                    break
                if pos is not None and pos > nxt:
                    nxt = pos
                if (time.monotonic() - last_progress) * 1000 > opts.poll_timeout_ms:
                    raise TimeoutError(f"no records for {r} at offset {nxt} within "
                                       f"kafkaConsumer.pollTimeoutMs={opts.poll_timeout_ms}")
        if len(cols):
            yield _chunk(cols, r, schema, as_records)
    finally:
        c.close()


def read_range(opts: SourceOptions, client: str, r: KafkaRange, as_records: bool = False) -> Iterator:
    """The range's records in Arrow batches (the source's rows), or with `as_records` in chunks of
    `_Columns.records` tuples."""
    if client == "confluent":
        return read_range_confluent(opts, r, as_records)
    return read_range_kafka_python(opts, r, as_records)


def plan_ranges(starts: Mapping[TP, int], ends: Mapping[TP, int], min_partitions: int | None) -> list[KafkaRange]:
    """One range per partition with new records; with `min_partitions`, large ranges are split
    (in proportion to their size) until there are at least that many."""
    ranges = [(tp, starts[tp], ends[tp]) for tp in sorted(ends) if ends[tp] > starts[tp]]
    if not min_partitions or len(ranges) >= min_partitions:
        return [KafkaRange(t, p, s, e) for (t, p), s, e in ranges]
    total = sum(e - s for _, s, e in ranges)
    out = []
    for (t, p), s, e in ranges:
        pieces = max(1, min(e - s, math.ceil(min_partitions * (e - s) / total)))
        step, extra = divmod(e - s, pieces)
        cur = s
        for i in range(pieces):
            nxt = cur + step + (1 if i < extra else 0)
            out.append(KafkaRange(t, p, cur, nxt))
            cur = nxt
    return out


# ----------------------------------------------------------------------------------------------
# the data source

class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, Any]):
        self.opts = SourceOptions.parse(options)
        self.client, self.client_reason = resolve_client(self.opts.client)
        self._meta: _Meta | None = None
        self._new_starts: dict[TP, int] = {}
        self._target: dict[TP, int] | None = None
        self._last_latest: dict[TP, int] | None = None
        self._announced = False

    # The reader is pickled with the read function: never ship live clients.
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_meta"] = None
        return state

    @property
    def meta(self) -> _Meta:
        if self._meta is None:
            if not self._announced:
                log.info("rmkafka: reading %s with the %s client (%s); options %s", self._subscription(),
                         self.client, self.client_reason,
                         kafka_clients.redacted({**self.opts.settings, **self.opts.extra}))
                self._announced = True
            self._meta = open_meta(self.opts, self.client)
        return self._meta

    def _subscription(self) -> str:
        o = self.opts
        if o.topics is not None:
            return f"topics {','.join(o.topics)}"
        if o.pattern is not None:
            return f"pattern {o.pattern!r}"
        return f"assignment {o.assign}"

    def _current(self) -> tuple[list[TP], dict[TP, int]]:
        tps = self.meta.partitions()
        latest = self.meta.latest(tps)
        self._last_latest = latest
        return tps, latest

    def initialOffset(self) -> dict:
        tps, latest = self._current()
        starting = self.opts.starting
        if starting == "latest":
            return to_json_offsets(latest)
        earliest = self.meta.earliest(tps)
        if starting == "earliest":
            return to_json_offsets(earliest)
        given = from_json_offsets(starting)
        out = {}
        for tp in tps:
            off = given.get(tp, EARLIEST)
            out[tp] = earliest[tp] if off == EARLIEST else latest[tp] if off == LATEST else off
        missing = [tp for tp in given if tp not in out]
        if missing:
            log.warning("startingOffsets names partitions that are not (yet) there: %s", missing)
        return to_json_offsets(out)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        _, latest = self._current()
        self._target = dict(latest)
        log.info("rmkafka: Trigger.AvailableNow target %s", to_json_offsets(self._target))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        starts = from_json_offsets(start)
        tps, latest = self._current()
        if self._target is not None:
            latest = {tp: min(off, self._target[tp]) for tp, off in latest.items() if tp in self._target}
        new = [tp for tp in latest if tp not in starts]
        if new:
            earliest = self.meta.earliest(new)
            for tp in new:
                self._new_starts[tp] = earliest[tp]
            log.info("rmkafka: new partitions %s start at their earliest offsets", sorted(new))
        eff_starts = {tp: starts.get(tp, self._new_starts.get(tp, 0)) for tp in latest}
        shrunk = {tp: (eff_starts[tp], off) for tp, off in latest.items() if off < eff_starts[tp]}
        if shrunk:
            detail = ", ".join(f"{t}-{p} from {a} to {b}" for (t, p), (a, b) in sorted(shrunk.items()))
            if self.opts.fail_on_data_loss:
                raise DataLossError(f"latest offsets went backwards ({detail}): topic recreated or log truncated; "
                                    "set failOnDataLoss=false to wait until they pass the old position")
            log.warning("rmkafka: latest offsets went backwards (%s); holding the old position", detail)
        # Never go backwards.
        ends = {tp: max(off, eff_starts[tp]) for tp, off in latest.items()}
        if isinstance(limit, ReadMaxRows):
            ends = rate_limit(eff_starts, ends, limit.max_rows)
        for tp, off in starts.items():  # partitions that disappeared keep their position
            ends.setdefault(tp, off)
        result = to_json_offsets(ends)
        return start if result == start else result

    def reportLatestOffset(self):
        return None if self._last_latest is None else to_json_offsets(self._last_latest)

    def partitions(self, start: dict, end: dict):
        starts = from_json_offsets(start)
        ends = from_json_offsets(end)
        missing = [tp for tp in ends if tp not in starts and tp not in self._new_starts]
        if missing:  # a batch replayed after a restart that had discovered new partitions
            self._new_starts.update(self.meta.earliest(missing))
        eff = {tp: starts.get(tp, self._new_starts.get(tp, 0)) for tp in ends}
        return plan_ranges(eff, ends, self.opts.min_partitions)

    def read(self, partition: KafkaRange) -> Iterator:
        d = self.opts.decode
        if d is None:
            return read_range(self.opts, self.client, partition)
        # decode where the records are read: the JVM then carries a row per group, not a row per record
        from .decode_stage import make_record_decoder

        spec = d.get("topic_ids")  # kafka.topic_ids: `cluster` is the cluster read, a file came as its content
        topic_ids = None if not spec else (spec, self.opts.settings if spec == "cluster" else d.get("topic_id_names"))
        decode = make_record_decoder(d["topics"], int(d.get("max_bytes", 1 << 20)),
                                     int(d.get("max_future_ms", 3_600_000)), int(d.get("pack_records", PACK_RECORDS)),
                                     d.get("groups"), int(d.get("shards", 50)), topic_ids)
        return decode(read_range(self.opts, self.client, partition, as_records=True))

    def commit(self, end: dict) -> None:
        # Spark's checkpoint owns the offsets; forget start offsets of partitions now in the offsets.
        done = from_json_offsets(end)
        for tp in list(self._new_starts):
            if tp in done:
                del self._new_starts[tp]

    def stop(self) -> None:
        if self._meta is not None:
            try:
                self._meta.close()
            finally:
                self._meta = None


class KafkaDataSource(DataSource):
    """Format "rmkafka": Kafka records as rows, like Spark's "kafka" format (streaming reads only)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self):
        opts = {str(k).lower(): v for k, v in self.options.items()}
        if opts.get("decode"):
            from .decode_stage import DECODED_SCHEMA

            return DECODED_SCHEMA
        return output_schema(_truthy(opts.get("includeheaders", "false")))

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(self.options)


# ----------------------------------------------------------------------------------------------
# choose between Spark's connector and this source

_SPARK_ONLY_OPTIONS_DROPPED = ("client", "verifyendoffsets", "arrowbatchrows", "decode")


class ConnectorMissing(RuntimeError):
    """kafka.connector: spark, and Spark's Kafka connector is not on the classpath."""


def kafka_stream(spark, options: Mapping[str, Any], prefer: str = "auto"):
    """A streaming DataFrame of Kafka records: Spark's "kafka" format when its connector is on the
    classpath and `prefer` is "auto" or "spark", else this module's "rmkafka" format (ConnectorMissing when
    `prefer` is "spark" and the connector is not there).

    Options are the Spark Kafka connector's (plus this source's own); for Spark's connector the
    security settings are translated to Java client properties (sasl.jaas.config etc.). The "rmkafka"
    option "decode" makes it emit decoded rows; Spark's connector ignores it: check `is_decoded(df)`.
    """
    from rebalance_monitor.spark.session import kafka_connector_available

    prefer = (prefer or "auto").lower()
    if prefer not in ("auto", "spark", "python"):
        raise ValueError(f"prefer must be auto, spark or python, got {prefer!r}")
    if prefer == "python":
        use_spark, why = False, "prefer='python'"
    elif kafka_connector_available(spark):
        use_spark, why = True, f"Spark's Kafka connector is on the classpath (prefer={prefer!r})"
    else:
        use_spark, why = False, "Spark's Kafka connector (spark-sql-kafka) is not on the classpath"
        if prefer == "spark":
            raise ConnectorMissing(
                f"kafka.connector is 'spark' but {why}: fetch it with scripts/fetch_spark_jars.sh and set "
                "spark.jars_dir, or give spark-submit --jars/--packages "
                "org.apache.spark:spark-sql-kafka-0-10_2.13:<Spark version>; allowed values: auto, spark, python")
    if use_spark:
        settings, extra = kafka_clients.settings_from_options(options)
        java = kafka_clients.java_config(settings, extra)
        spark_opts = {k: str(v) for k, v in options.items()
                      if not str(k).lower().startswith("kafka.") and str(k).lower() not in _SPARK_ONLY_OPTIONS_DROPPED}
        spark_opts.update({f"kafka.{k}": v for k, v in java.items()})
        log.info("Kafka source: format 'kafka' (%s); options %s", why, kafka_clients.redacted(spark_opts))
        return spark.readStream.format("kafka").options(**spark_opts).load()
    lowered = {str(k).lower(): v for k, v in options.items()}
    client, reason = resolve_client(str(lowered.get("client", "auto")))
    log.info("Kafka source: format %r (%s), %s client (%s); options %s", FORMAT, why, client, reason,
             kafka_clients.redacted(dict(options)))
    return spark.readStream.format(FORMAT).options(**{k: str(v) for k, v in options.items()}).load()


def is_decoded(df) -> bool:
    """True when a `kafka_stream` frame already carries decoded rows (the "decode" option took effect)."""
    return "packed" in df.columns
