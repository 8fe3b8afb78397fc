"""The Python Kafka source ("rmkafka") against the real Apache Kafka broker (tests/helpers/fixtures_kafka.py) and a real
SparkSession."""
from __future__ import annotations

import json
import logging
import time

import pytest

from rebalance_monitor.spark.kafka_source.columns import KAFKA_SCHEMA, output_schema
from rebalance_monitor.spark.kafka_source.datasource import KafkaStreamReader
from rebalance_monitor.spark.kafka_source.metadata import open_meta
from rebalance_monitor.spark.kafka_source.offsets import from_json_offsets
from rebalance_monitor.spark.kafka_source.options import SourceOptions
from rebalance_monitor.spark.sources import ConnectorMissing, kafka_stream
from rebalance_monitor.spark.session import (KAFKA_PROVIDER_CLASS, ROCKSDB_PROVIDER, jvm_class_available,
                                             kafka_connector_available)

pytestmark = [pytest.mark.integration, pytest.mark.spark]


# ---------------------------------------------------------------------------------------------- helpers

def produce(bootstrap: str, topic: str, n: int, partitions, tag: str = "", headers: bool = False) -> dict:
    """Produce n records round-robin over `partitions`; {(partition, offset): (key, value, headers)} as
    the broker acknowledged them (delivery reports carry no headers: those come back empty)."""
    from confluent_kafka import Producer

    parts = list(partitions)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    delivered: dict = {}
    errors: list = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            delivered[(msg.partition(), msg.offset())] = (msg.key(), msg.value(), msg.headers() or [])

    for i in range(n):
        hdrs = [("i", str(i).encode()), ("tag", tag.encode())] if headers else None
        p.produce(topic, key=f"{tag}k{i}".encode(), value=json.dumps({"i": i, "tag": tag}).encode(),
                  partition=parts[i % len(parts)], headers=hdrs, on_delivery=on_delivery)
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    assert not errors, errors
    assert len(delivered) == n
    return delivered


def options(bootstrap: str, topic: str, **extra) -> dict:
    return {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest",
            **{k: str(v) for k, v in extra.items()}}


def run_available_now(spark, opts: dict, checkpoint: str, df=None) -> list:
    """Run one Trigger.AvailableNow query; the list of (batch_id, rows) foreachBatch saw."""
    batches: list = []

    def collect(batch_df, batch_id):
        batches.append((batch_id, batch_df.collect()))

    if df is None:
        df = spark.readStream.format("rmkafka").options(**opts).load()
    q = (df.writeStream.foreachBatch(collect).trigger(availableNow=True)
         .option("checkpointLocation", checkpoint).start())
    assert q.awaitTermination(180), "the availableNow query did not finish"
    assert q.exception() is None, q.exception()
    return batches


def rows_of(batches) -> list:
    return [r for _, rows in batches for r in rows]


def by_position(rows, topic: str) -> dict:
    out = {}
    for r in rows:
        assert r.topic == topic
        assert (r.partition, r.offset) not in out, f"duplicate {r.partition}/{r.offset}"
        out[(r.partition, r.offset)] = (r.key, r.value)
    return out


def kv(delivered: dict) -> dict:
    return {pos: (k, v) for pos, (k, v, _h) in delivered.items()}


# ---------------------------------------------------------------------------------------------- tests

def test_session_settings(spark):
    conf = spark.conf
    assert conf.get("spark.sql.streaming.stateStore.providerClass") == ROCKSDB_PROVIDER
    assert conf.get("spark.sql.session.timeZone") == "UTC"
    assert conf.get("spark.sql.shuffle.partitions") == "4"
    assert conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
    assert spark.sparkContext.uiWebUrl is None


def test_connector_detection(spark):
    assert jvm_class_available(spark, "org.apache.spark.sql.SparkSession") is True
    assert jvm_class_available(spark, "org.example.does.not.Exist") is False
    assert kafka_connector_available(spark) is jvm_class_available(spark, KAFKA_PROVIDER_CLASS)


def test_every_record_exactly_once(spark, broker, unique, tmp_path, caplog):
    topic = unique
    broker.create_topics({topic: 4})
    delivered = produce(broker.bootstrap, topic, 2000, range(4))
    caplog.set_level(logging.INFO, logger="rebalance_monitor.spark.kafka_source")
    df = kafka_stream(spark, options(broker.bootstrap, topic), prefer="python")
    assert "format 'rmkafka'" in caplog.text and "confluent client" in caplog.text
    assert df.isStreaming and df.schema == KAFKA_SCHEMA
    rows = rows_of(run_available_now(spark, {}, str(tmp_path / "ck"), df=df))
    assert by_position(rows, topic) == kv(delivered)
    assert all(r.timestamp is not None and r.timestampType == 0 for r in rows)


def test_max_offsets_per_trigger_gives_several_batches(spark, broker, unique, tmp_path):
    topic = unique
    broker.create_topics({topic: 3})
    delivered = produce(broker.bootstrap, topic, 1200, range(3))
    batches = run_available_now(spark, options(broker.bootstrap, topic, maxOffsetsPerTrigger=300, minPartitions=6),
                                str(tmp_path / "ck"))
    sizes = [len(rows) for _, rows in batches if rows]
    assert len(sizes) >= 4 and max(sizes) <= 300, sizes
    assert by_position(rows_of(batches), topic) == kv(delivered)


def test_starting_latest_skips_old_records_and_resumes_from_checkpoint(spark, broker, unique, tmp_path):
    topic = unique
    broker.create_topics({topic: 2})
    produce(broker.bootstrap, topic, 300, range(2), tag="old")
    ck = str(tmp_path / "ck")
    opts = options(broker.bootstrap, topic, startingOffsets="latest")
    assert rows_of(run_available_now(spark, opts, ck)) == []
    new = produce(broker.bootstrap, topic, 200, range(2), tag="new")
    rows = rows_of(run_available_now(spark, opts, ck))
    assert by_position(rows, topic) == kv(new)
    assert rows_of(run_available_now(spark, opts, ck)) == []


def test_json_starting_offsets(spark, broker, unique, tmp_path):
    topic = unique
    broker.create_topics({topic: 3})
    delivered = produce(broker.bootstrap, topic, 90, range(3))
    start = json.dumps({topic: {"0": 5, "1": -2}})  # partition 2 left out: earliest
    rows = rows_of(run_available_now(spark, options(broker.bootstrap, topic, startingOffsets=start),
                                     str(tmp_path / "ck")))
    expected = {pos: v for pos, v in kv(delivered).items() if not (pos[0] == 0 and pos[1] < 5)}
    assert by_position(rows, topic) == expected


def test_both_clients_give_identical_rows(spark, broker, unique, tmp_path):
    topic = unique
    broker.create_topics({topic: 3})
    delivered = produce(broker.bootstrap, topic, 1500, range(3), headers=True)
    results = {}
    for client in ("confluent", "kafka-python"):
        rows = rows_of(run_available_now(
            spark, options(broker.bootstrap, topic, client=client, includeHeaders="true", maxOffsetsPerTrigger=700),
            str(tmp_path / f"ck-{client}")))
        results[client] = sorted(tuple(r) for r in rows)
    assert results["confluent"] == results["kafka-python"]
    rows = results["confluent"]
    assert len(rows) == 1500
    fields = output_schema(True).fieldNames()
    for row in rows:
        r = dict(zip(fields, row))
        key, value, _ = delivered[(r["partition"], r["offset"])]
        assert (r["key"], r["value"]) == (key, value)
        i = json.loads(value)["i"]
        assert [(h["key"], h["value"]) for h in r["headers"]] == [("i", str(i).encode()), ("tag", b"")]


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_latest_offsets_are_the_high_watermarks(broker, unique, client):
    """Whole record batches must be visible: the verified latest offset is last offset + 1."""
    topic = unique
    broker.create_topics({topic: 3})
    delivered = produce(broker.bootstrap, topic, 40, [0, 1])  # partition 2 stays empty
    opts = SourceOptions.parse(options(broker.bootstrap, topic))
    meta = open_meta(opts, client)
    try:
        tps = meta.partitions()
        assert tps == [(topic, 0), (topic, 1), (topic, 2)]
        assert meta.earliest(tps) == {(topic, p): 0 for p in range(3)}
        expected = {(topic, p): 1 + max([o for (pp, o) in delivered if pp == p], default=-1) for p in range(3)}
        assert meta.latest(tps) == expected
    finally:
        meta.close()


def test_latest_offset_takes_the_limit_then_the_rest_then_stands_still(broker, unique):
    """The reader's latest-offset check, trigger after trigger (what Spark asks before every batch)."""
    topic = unique
    broker.create_topics({topic: 2})
    produce(broker.bootstrap, topic, 40, range(2))
    reader = KafkaStreamReader(options(broker.bootstrap, topic, maxOffsetsPerTrigger=30))
    limit = reader.getDefaultReadLimit()

    def count(a, b):
        a, b = from_json_offsets(a), from_json_offsets(b)
        return sum(off - a.get(tp, 0) for tp, off in b.items())

    try:
        start = reader.initialOffset()
        first = reader.latestOffset(start, limit)
        assert count(start, first) == 30  # 30 of the 40 records: 10 left for the next trigger
        rest = reader.latestOffset(first, limit)
        assert count(first, rest) == 10  # the other 10: all there is
        assert reader.latestOffset(rest, limit) == rest  # caught up: the same offsets, no empty range
        produce(broker.bootstrap, topic, 1, [0])
        assert count(rest, reader.latestOffset(rest, limit)) == 1
    finally:
        reader.stop()


def _live_query(spark, opts, checkpoint, name):
    return (spark.readStream.format("rmkafka").options(**opts).load()
            .writeStream.format("memory").queryName(name).option("checkpointLocation", checkpoint).start())


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_new_topic_matching_the_pattern_is_read_from_earliest(spark, broker, unique, tmp_path, client):
    prefix = unique.replace("-", "_")
    first, second = f"{prefix}-a", f"{prefix}-b"
    broker.create_topics({first: 2})
    d1 = produce(broker.bootstrap, first, 100, range(2))
    opts = {"kafka.bootstrap.servers": broker.bootstrap, "subscribePattern": f"{prefix}-.*",
            "startingOffsets": "earliest", "client": client}
    name = f"pat_{prefix[-6:]}"
    q = _live_query(spark, opts, str(tmp_path / "ck"), name)
    try:
        q.processAllAvailable()
        assert spark.table(name).count() == 100
        broker.create_topics({second: 2})
        d2 = produce(broker.bootstrap, second, 60, range(2))
        q.processAllAvailable()
        rows = spark.table(name).collect()
    finally:
        q.stop()
    assert by_position([r for r in rows if r.topic == first], first) == kv(d1)
    assert by_position([r for r in rows if r.topic == second], second) == kv(d2)


def _create_partitions(bootstrap: str, topic: str, total: int) -> str | None:
    """Add partitions; None when done, else the broker's reason for refusing."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for _, future in admin.create_partitions([NewPartitions(topic, total)], request_timeout=15).items():
        try:
            future.result()
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() in (KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION,
                              KafkaError.INVALID_REQUEST):
                return err.str()
            raise
    return None


def test_partition_added_at_run_time_is_picked_up(spark, broker, unique, tmp_path):
    topic = unique
    broker.create_topics({topic: 2})
    d1 = produce(broker.bootstrap, topic, 100, range(2))
    name = f"grow_{unique[-6:]}"
    q = _live_query(spark, options(broker.bootstrap, topic), str(tmp_path / "ck"), name)
    try:
        q.processAllAvailable()
        refused = _create_partitions(broker.bootstrap, topic, 3)
        if refused is not None:
            pytest.skip(f"the broker cannot add partitions (CreatePartitions refused: {refused}); "
                        "new-partition discovery is covered by the subscribePattern new-topic test")
        d2 = produce(broker.bootstrap, topic, 30, [2])
        q.processAllAvailable()
        rows = spark.table(name).collect()
    finally:
        q.stop()
    assert by_position(rows, topic) == {**kv(d1), **kv(d2)}


def test_kafka_stream_falls_back_only_on_auto_and_logs_no_secret(spark, caplog):
    secret = "n0t-in-the-log"
    opts = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "monitor", "kafka.sasl.password": secret}
    caplog.set_level(logging.INFO, logger="rebalance_monitor.spark.kafka_source")
    df = kafka_stream(spark, opts, prefer="auto")
    assert df.isStreaming and df.schema == KAFKA_SCHEMA
    if kafka_connector_available(spark):
        assert "format 'kafka'" in caplog.text
    else:
        assert "is not on the classpath" in caplog.text and "format 'rmkafka'" in caplog.text
        with pytest.raises(ConnectorMissing, match=r"kafka.connector is 'spark' but .*allowed values: auto"):
            kafka_stream(spark, opts, prefer="spark")  # asked for by name: no silent fallback
    assert "monitor" in caplog.text and secret not in caplog.text
    with pytest.raises(ValueError):
        kafka_stream(spark, opts, prefer="java")
