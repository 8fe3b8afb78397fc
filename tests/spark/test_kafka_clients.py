"""One Kafka connection (kafka_connection.py) -> kafka-python, librdkafka and Java spellings; the Python source's
options and offset arithmetic."""
from __future__ import annotations

import logging
from dataclasses import replace

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from rebalance_monitor import kafka_connection as kc
from rebalance_monitor.kafka_connection import KafkaConnection
from rebalance_monitor.spark.sources import spark_connector_options
from rebalance_monitor.spark.kafka_source.datasource import KafkaStreamReader
from rebalance_monitor.spark.kafka_source.offsets import from_json_offsets, plan_ranges, rate_limit, to_json_offsets
from rebalance_monitor.spark.kafka_source.options import SourceOptions

SECRET = "s3cr3t-Pa55word"

NEUTRAL = KafkaConnection(
    bootstrap_servers="127.0.0.1:9092",
    security_protocol="SASL_SSL",
    sasl_mechanism="SCRAM-SHA-512",
    sasl_username="monitor",
    sasl_password=SECRET,
    ssl_cafile="/etc/kafka/ca.pem",
    ssl_certfile="/etc/kafka/client.pem",
    ssl_keyfile="/etc/kafka/client.key",
    ssl_key_password="keypass-" + SECRET,
    client_id="rebalance-monitor",
)


def test_confluent_config_spelling():
    conf = NEUTRAL.confluent()
    assert isinstance(conf.pop("logger"), kc.ClientLog)  # librdkafka's lines through Python logging, not stderr
    assert conf == {
        "bootstrap.servers": "127.0.0.1:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "monitor",
        "sasl.password": SECRET,
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "ssl.certificate.location": "/etc/kafka/client.pem",
        "ssl.key.location": "/etc/kafka/client.key",
        "ssl.key.password": "keypass-" + SECRET,
        "client.id": "rebalance-monitor",
    }


def test_the_source_keeps_librdkafka_fetching_while_its_queue_is_full():
    # librdkafka's default fetch.queue.backoff.ms (1,000) stalls a reader that drains faster than the fetcher
    opts = SourceOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "t"})
    assert opts.confluent_conf()["fetch.queue.backoff.ms"] == 10
    mine = SourceOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "t",
                                "kafka.fetch.queue.backoff.ms": "500"})
    assert mine.confluent_conf()["fetch.queue.backoff.ms"] == "500"


def test_kafka_python_config_spelling():
    conf = NEUTRAL.kafka_python()
    assert conf == {
        "bootstrap_servers": "127.0.0.1:9092",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "monitor",
        "sasl_plain_password": SECRET,
        "ssl_cafile": "/etc/kafka/ca.pem",
        "ssl_certfile": "/etc/kafka/client.pem",
        "ssl_keyfile": "/etc/kafka/client.key",
        "ssl_password": "keypass-" + SECRET,
        "client_id": "rebalance-monitor",
    }


def test_configs_are_accepted_by_the_real_clients():
    """librdkafka validates property names at construction; kafka-python's consumer knows every key."""
    from confluent_kafka import Consumer
    from kafka import KafkaConsumer

    plain = KafkaConnection("127.0.0.1:1", security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_username="u", sasl_password=SECRET, client_id="x", extra={"fetch.wait.max.ms": "50"})
    c = Consumer({**plain.confluent(), "group.id": "never-joined"})
    c.close()
    kp = replace(NEUTRAL, extra={"fetch.max.wait.ms": "50", "check.crcs": "false"}).kafka_python()
    assert set(kp) <= set(KafkaConsumer.DEFAULT_CONFIG)
    assert kp["fetch_max_wait_ms"] == 50 and kp["check_crcs"] is False


@pytest.mark.parametrize("options", [
    # Java / Spark spelling, credentials inside sasl.jaas.config
    {"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN",
     "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                               f'username="monitor" password="{SECRET}";',
     "kafka.ssl.ca.location": "/ca.pem"},
    # librdkafka spelling
    {"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "sasl_ssl", "kafka.sasl.mechanisms": "PLAIN",
     "kafka.sasl.username": "monitor", "kafka.sasl.password": SECRET, "kafka.ssl.ca.location": "/ca.pem"},
    # kafka-python spelling, underscores
    {"kafka.bootstrap_servers": "h:1", "kafka.security_protocol": "SASL_SSL", "kafka.sasl_mechanism": "PLAIN",
     "kafka.sasl_plain_username": "monitor", "kafka.sasl_plain_password": SECRET, "kafka.ssl_cafile": "/ca.pem"},
])
def test_every_spelling_maps_to_the_same_settings(options):
    conn = KafkaConnection.from_options(options)
    assert conn.extra == {}
    assert conn.sasl_username == "monitor" and conn.sasl_password == SECRET
    assert conn.ssl_cafile == "/ca.pem" and conn.bootstrap_servers == "h:1"
    assert conn.confluent()["sasl.password"] == SECRET
    kp = conn.kafka_python()
    assert kp["sasl_plain_username"] == "monitor" and kp["security_protocol"] == "SASL_SSL"


def test_unknown_kafka_options_pass_through():
    conn = KafkaConnection.from_options(
        {"kafka.bootstrap.servers": "h:1", "kafka.fetch.min.bytes": "1024", "subscribe": "t",
         "kafka.ssl.endpoint.identification.algorithm": "none", "kafka.ssl.truststore.location": "/x.jks"})
    # the host-name check is a setting of the connection (each client spells it its own way), the rest passes through
    assert conn.extra == {"fetch.min.bytes": "1024", "ssl.truststore.location": "/x.jks"}
    assert conn.ssl_check_hostname is False
    conf = conn.confluent()
    assert conf["fetch.min.bytes"] == "1024" and conf["ssl.endpoint.identification.algorithm"] == "none"
    assert "ssl.truststore.location" not in conf  # Java keystores mean nothing to librdkafka
    kp = conn.kafka_python()
    assert kp["fetch_min_bytes"] == 1024 and "ssl_endpoint_identification_algorithm" not in kp
    assert kp["ssl_check_hostname"] is False


def test_java_config_builds_jaas():
    java = KafkaConnection("h:1", security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256",
                           sasl_username='mo"n', sasl_password=SECRET, ssl_cafile="/ca.pem").java()
    assert java["sasl.jaas.config"].startswith("org.apache.kafka.common.security.scram.ScramLoginModule required")
    assert kc.parse_jaas(java["sasl.jaas.config"]) == ('mo"n', SECRET)
    assert java["ssl.truststore.type"] == "PEM" and java["ssl.truststore.location"] == "/ca.pem"


def test_java_options_are_read_back_to_the_same_connection():
    """One dialect for both readers: the Python source reads the connection's kafka.* options back to the very
    same connection (credentials from the JAAS line, the CA file from a PEM truststore, client certificate files
    by name); Spark's connector is given the Java client's properties alone."""
    opts = NEUTRAL.java_options()
    assert KafkaConnection.from_options(opts) == NEUTRAL
    assert opts["kafka.sasl.jaas.config"].startswith("org.apache.kafka.common.security.scram.ScramLoginModule")
    assert "kafka.sasl.password" not in opts and opts["kafka.ssl.truststore.type"] == "PEM"
    plain = KafkaConnection("h:1", extra={"fetch.min.bytes": "1024"})
    assert KafkaConnection.from_options(plain.java_options()) == plain
    spark = spark_connector_options({**opts, "subscribe": "t", "client": "confluent", "decode": "{}"})
    assert spark == {"subscribe": "t", **{f"kafka.{k}": v for k, v in NEUTRAL.java().items()}}
    assert "kafka.ssl.certfile" not in spark  # the Java client cannot take the two PEM files


def test_redacted_hides_every_secret():
    for conf in (NEUTRAL.confluent(), NEUTRAL.kafka_python(), NEUTRAL.java(), NEUTRAL.java_options(),
                 NEUTRAL.redacted(),
                 {"kafka.sasl.password": SECRET, "kafka.sasl.jaas.config": f'x password="{SECRET}";',
                  "sasl.oauthbearer.client.secret": SECRET}):
        shown = kc.redacted(conf)
        assert SECRET not in repr(shown)
        assert kc.REDACTED in shown.values()
        assert set(shown) == set(conf)
    assert kc.redacted({"bootstrap.servers": "h:1"}) == {"bootstrap.servers": "h:1"}
    assert SECRET not in repr(NEUTRAL) and "monitor" in repr(NEUTRAL)


def test_missing_bootstrap_is_an_error():
    with pytest.raises(ValueError):
        KafkaConnection("", client_id="x")
    with pytest.raises(ValueError, match="kafka.bootstrap.servers is required"):
        KafkaConnection.from_options({"kafka.client.id": "x"})
    with pytest.raises(TypeError):
        KafkaConnection("h:1", bogus=1)


def test_source_logs_no_secret(caplog, monkeypatch):
    """The reader announces its client and options; the password must not be in the log text."""
    options = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t", "client": "kafka-python",
               "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
               "kafka.sasl.username": "monitor", "kafka.sasl.password": SECRET}
    reader = KafkaStreamReader(options)
    caplog.set_level(logging.DEBUG)
    reader._announced = False
    # Only the announcement, not the connection: replace the reader's client opener by a stub that fails.
    import rebalance_monitor.spark.kafka_source.datasource as reader_module
    monkeypatch.setattr(reader_module, "open_meta",
                        lambda opts, client: (_ for _ in ()).throw(ConnectionError("not connecting in a unit test")))
    with pytest.raises(ConnectionError):
        reader.meta
    text = caplog.text
    assert "kafka-python" in text and "monitor" in text
    assert SECRET not in text and kc.REDACTED in text


def test_options_parsing():
    o = SourceOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribePattern": "events-.*",
                             "startingOffsets": '{"a": {"0": 5, "1": -2}}', "maxOffsetsPerTrigger": "100",
                             "CLIENT": "Confluent"})
    assert o.pattern == "events-.*" and o.client == "confluent" and o.max_offsets_per_trigger == 100
    assert o.starting == {"a": {"0": 5, "1": -2}}
    assert o.topic_selected("events-1") and not o.topic_selected("xevents-1")
    assert not o.topic_selected("__consumer_offsets")
    assert SourceOptions.parse({"kafka.bootstrap.servers": "h", "subscribePattern": "__consumer.*"}) \
        .topic_selected("__consumer_offsets")
    for bad in ({"subscribe": "t"}, {"kafka.bootstrap.servers": "h"},
                {"kafka.bootstrap.servers": "h", "subscribe": "t", "assign": '{"t": [0]}'},
                {"kafka.bootstrap.servers": "h", "subscribe": "t", "client": "java"},
                {"kafka.bootstrap.servers": "h", "subscribe": "t", "maxOffsetsPerTrigger": "0"}):
        with pytest.raises(ValueError):
            SourceOptions.parse(bad)


def test_json_offsets_round_trip_and_order():
    offsets = {("b", 10): 5, ("b", 2): 7, ("a", 0): 1}
    js = to_json_offsets(offsets)
    assert list(js) == ["a", "b"] and list(js["b"]) == ["2", "10"]
    assert from_json_offsets(js) == offsets


tps = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5))


@hsettings(max_examples=200, deadline=None)
@given(st.dictionaries(tps, st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1),
       st.integers(1, 500))
def test_rate_limit_properties(ranges, max_rows):
    starts = {tp: min(a, b) for tp, (a, b) in ranges.items()}
    ends = {tp: max(a, b) for tp, (a, b) in ranges.items()}
    out = rate_limit(starts, ends, max_rows)
    assert set(out) == set(ends)
    taken = sum(out[tp] - starts[tp] for tp in ends)
    available = sum(ends[tp] - starts[tp] for tp in ends)
    lagging = sum(ends[tp] > starts[tp] for tp in ends)
    assert all(starts[tp] <= out[tp] <= ends[tp] for tp in ends)
    assert all(out[tp] > starts[tp] for tp in ends if ends[tp] > starts[tp])  # no partition starves
    if available <= max_rows:
        # all of it, but for Spark's floating-point share: max_rows * (lag / total) may fall just below lag and
        # be rounded down to lag - 1 (rate_limit rounds as Spark's connector does; see the example test below)
        assert available - lagging <= taken <= available
    else:  # each share rounded down, or up to one record
        assert max_rows - lagging < taken < max_rows + lagging


def test_rate_limit_splits_a_backlog_as_sparks_connector_does():
    """Seen from spark-sql-kafka 4.2.0 (the checkpoint's first batch in
    tests/spark/test_spark_connector.py): lags 989, 302 and 866, 400 records per trigger."""
    starts = {("ev", 0): 0, ("log", 0): 0, ("off", 0): 0}
    ends = {("ev", 0): 989, ("log", 0): 302, ("off", 0): 866}
    assert rate_limit(starts, ends, 400) == {("ev", 0): 183, ("log", 0): 56, ("off", 0): 160}
    # a partition whose share is under one record still gets one
    assert rate_limit({("a", 0): 0, ("b", 0): 0}, {("a", 0): 10_000, ("b", 0): 1}, 100) == {("a", 0): 99, ("b", 0): 1}


@hsettings(max_examples=200, deadline=None)
@given(st.dictionaries(tps, st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1),
       st.one_of(st.none(), st.integers(1, 20)))
def test_plan_ranges_cover_each_offset_once(ranges, min_partitions):
    starts = {tp: min(a, b) for tp, (a, b) in ranges.items()}
    ends = {tp: max(a, b) for tp, (a, b) in ranges.items()}
    planned = plan_ranges(starts, ends, min_partitions)
    covered = sorted((r.topic, r.partition, o) for r in planned for o in range(r.start, r.end))
    expected = sorted((t, p, o) for (t, p) in ends for o in range(starts[(t, p)], ends[(t, p)]))
    assert covered == expected
    assert all(r.end > r.start for r in planned)
    assert len(planned) >= sum(1 for tp in ends if ends[tp] > starts[tp])
    if min_partitions:
        assert len(planned) >= min(min_partitions, len(expected))


def test_kafka_pythons_connection_layer_is_quiet_unless_someone_set_its_level():
    import logging

    net = logging.getLogger("kafka.net")
    before = net.level
    try:
        net.setLevel(logging.NOTSET)   # a Python worker of the source: nobody configured logging
        KafkaConnection("h:1").kafka_python()
        assert net.level == logging.CRITICAL
        net.setLevel(logging.DEBUG)    # run with logging.kafka_clients_level: DEBUG
        KafkaConnection("h:1").kafka_python()
        assert net.level == logging.DEBUG
    finally:
        net.setLevel(before)


def test_rate_limit_rounds_a_share_as_sparks_connector_does_even_one_record_short():
    # Spark's KafkaMicroBatchStream.rateLimit: floor(limit * (size / total)); 22 * (15 / 22) is 14.999...
    starts, ends = {("a", 0): 0, ("a", 1): 0}, {("a", 0): 15, ("a", 1): 7}
    assert rate_limit(starts, ends, 22) == {("a", 0): 14, ("a", 1): 7}
