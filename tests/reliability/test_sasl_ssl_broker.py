"""The monitor's parts through a real SASL_SSL listener (SCRAM-SHA-512, TLS files made by the test) of an Apache
Kafka 4.4 broker: the Kafka probe, the Python source reading `__consumer_offsets` and the events topic in a short
job, the broker poller's DescribeConfigs/ApiVersions/describe calls, and the lag poller's committed and end
offsets, each with kafka-python (the base install's client) and, where the part has it, confluent-kafka. The real
group is Kafka's own Java console consumer, which connects with SASL_SSL client properties. A wrong password is an
authentication failure the probe names, without the secret."""
from __future__ import annotations

import json
import time

import pytest

from helpers.events import stable_group
from helpers.eventually import eventually
from helpers.java_telemetry import stop_gracefully

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.kafka_reach import KafkaReach
from rebalance_monitor.testing.java_telemetry import console_consumer

pytestmark = pytest.mark.integration

DATA, EVENTS = "sasl-data", "sasl-events"
GROUP, EVENTS_GROUP = "sasl-java-group", "sasl-events-group"
RECORDS = 12


def _committed(admin) -> int:
    """The Java group's committed offsets, summed (-1 while its coordinator is not there yet: a new broker's
    `__consumer_offsets` is being created)."""
    from kafka.errors import CoordinatorNotAvailableError

    try:
        offsets = admin.list_group_offsets({GROUP: None}).get(GROUP) or {}
    except CoordinatorNotAvailableError:
        return -1
    return sum(om.offset for om in offsets.values() if om is not None and om.offset is not None and om.offset > 0)


def _confluent_installed() -> bool:
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return False
    return True


CLIENTS = [pytest.param("kafka-python", id="kafka-python"),
           pytest.param("confluent", id="confluent", marks=pytest.mark.skipif(
               not _confluent_installed(), reason="confluent-kafka is an extra (fast); not installed here"))]


@pytest.fixture(scope="module")
def secured(sasl_ssl_broker, tmp_path_factory):
    """The SASL_SSL broker with its input: the data topic read by a real Java group (Kafka's console consumer,
    SASL_SSL) that commits and leaves, and an events topic of canonical events; both written through SASL_SSL."""
    from kafka import KafkaAdminClient, KafkaProducer

    b = sasl_ssl_broker
    b.create_topics({DATA: 2, EVENTS: 1})
    producer = KafkaProducer(**b.connection().kafka_python(), linger_ms=20)
    try:
        for i in range(RECORDS):
            producer.send(DATA, json.dumps({"i": i}).encode(), partition=i % 2)
        for event in stable_group(group=EVENTS_GROUP, start=int(time.time() * 1000) - 60_000):
            producer.send(EVENTS, json.dumps(event).encode(), partition=0)
        producer.flush(30)
    finally:
        producer.close()
    log = tmp_path_factory.mktemp("sasl-group") / "console-consumer.log"
    proc = console_consumer(b.bootstrap, DATA, GROUP, "sasl-java-member",
                            properties={**b.java_properties(), "auto.commit.interval.ms": "200"}, log_path=log)
    admin = KafkaAdminClient(**b.connection().kafka_python())
    try:
        eventually(lambda: _committed(admin) == RECORDS, 120, "the Java group's commits of every record")
    finally:
        admin.close()
        stop_gracefully(proc)  # it closes its consumer: a last commit and LeaveGroup, so the group's generation 1
        # is followed by an Empty one
    return b


@pytest.mark.parametrize("client", CLIENTS)
def test_the_kafka_probe_answers_through_sasl_ssl(secured, client):
    cfg = load_config(env={}, overrides={**secured.overrides(), "kafka.client": client})
    reach = KafkaReach(cfg.kafka.connection(), client)
    assert reach.check() is None and reach.down_since is None


@pytest.mark.parametrize("client", CLIENTS)
def test_a_wrong_password_is_an_authentication_failure_without_the_secret(secured, client):
    wrong = "wrong-" + secured.password[::-1]
    cfg = load_config(env={}, overrides={**secured.overrides(password=wrong), "kafka.client": client})
    reach = KafkaReach(cfg.kafka.connection(), client, timeout_s=4)
    error = reach.check()
    assert error is not None and "\n" not in error
    assert "authentication" in error.lower() and "SCRAM-SHA-512" in error, error
    line = reach.reason(error, 2)
    assert wrong not in line and secured.password not in line
    assert line.startswith(f"Kafka at {secured.bootstrap} is not reachable (security protocol SASL_SSL): ")


@pytest.mark.parametrize("client", CLIENTS)
def test_a_ca_that_did_not_sign_the_broker_is_a_certificate_failure(secured, client, tmp_path):
    from dataclasses import replace

    from helpers.tls_files import make_tls_files

    other = make_tls_files(tmp_path / "other-ca")
    reach = KafkaReach(replace(secured.connection(), ssl_cafile=str(other.ca_file)), client, timeout_s=4)
    error = reach.check()
    assert error is not None and "certificate verify failed" in error.lower(), error


def test_scram_users_the_storage_tool_cannot_take_are_refused(tmp_path):
    from rebalance_monitor.testing.sasl_listener import SaslSslListener

    listener = SaslSslListener(str(tmp_path / "k.pem"), {"monitor": "p4ss-word"})
    assert listener.format_args() == ["--add-scram", "SCRAM-SHA-512=[name=monitor,password=p4ss-word]"]
    props = listener.server_properties("127.0.0.1", 1, 2, 3)
    assert props["listeners"] == "SASL_SSL://127.0.0.1:1,PLAINTEXT://127.0.0.1:2,CONTROLLER://127.0.0.1:3"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    for users in ({"monitor": "a,b"}, {"monitor": "x]"}, {"a=b": "pw"}):
        with pytest.raises(ValueError):
            SaslSslListener("k.pem", users)
    with pytest.raises(ValueError):
        SaslSslListener("k.pem", {}, mechanism="PLAIN")

def _kafka_python_conf(b) -> dict:
    """kafka-python's settings as `run` makes them for its pollers: from the monitor's configuration."""
    conf = load_config(env={}, overrides={**b.overrides(), "kafka.events_topic": EVENTS}).kafka.connection() \
        .kafka_python()
    conf.pop("client_id", None)
    return conf


def test_the_broker_poller_asks_its_questions_through_sasl_ssl(secured):
    """DescribeConfigs of the brokers and of the group, ApiVersions (the release), the group's description."""
    from kafka import KafkaAdminClient

    from rebalance_monitor.broker_facts.poller import BrokerFactsPoller

    admin = KafkaAdminClient(client_id="rebalance-monitor-broker-facts", **_kafka_python_conf(secured))
    published, failures = [], []
    poller = BrokerFactsPoller(admin, lambda key, value: published.append(json.loads(value)), note=failures.append,
                               event_time=False)
    try:
        poller.note_batch([{"kind": "generation", "group": GROUP, "ts": int(time.time() * 1000)}])
        assert poller.poll_once() > 0
    finally:
        admin.close()
    assert failures == [] and not poller.denied
    assert [(f["release"], f["source"]) for f in published if f["type"] == "broker_release"] == [
        ("4.4.0", "api_versions")]
    assert {"group": "", "group_type": "consumer", "session_timeout_ms": 10_000} in [
        {k: f.get(k) for k in ("group", "group_type", "session_timeout_ms")} for f in published]
    assert [f for f in published if f["group"] == GROUP], published


def test_the_lag_poller_reads_committed_and_end_offsets_through_sasl_ssl(secured):
    from rebalance_monitor.metrics.broker_offsets import BrokerOffsets

    conf = _kafka_python_conf(secured)
    offsets = BrokerOffsets(conf.pop("bootstrap_servers"), **conf)
    try:
        records = offsets.records([GROUP], now_ms=1)
    finally:
        offsets.close()
    half = RECORDS // 2
    assert [(r["kind"], r["group"], r["offsets"]) for r in records] == [
        ("offsets_committed", GROUP, [[DATA, 0, half], [DATA, 1, half]]),
        ("end_offsets", "", [[DATA, 0, half], [DATA, 1, half]])]


@pytest.mark.spark
@pytest.mark.parametrize("client", CLIENTS)
def test_the_python_source_reads_consumer_offsets_and_events_through_sasl_ssl(spark, secured, client, tmp_path):
    """A short job (`run --once`) of the Python source with `client`: the Java group's generations from the
    broker's own `__consumer_offsets`, the events topic's group from its canonical events."""
    from helpers.in_process_job import make_cfg

    from rebalance_monitor.spark.job import StreamingQueryJob

    cfg = make_cfg(secured, EVENTS, tmp_path, **secured.overrides(), **{
        "kafka.client": client, "kafka.offsets_topic": "__consumer_offsets", "kafka.offsets_topic_partitions": 10,
        "groups.allow": f"{GROUP}|{EVENTS_GROUP}"})
    collected = []
    job = StreamingQueryJob(cfg, spark=spark, on_records=lambda b, recs, dead: collected.append((recs, dead)))
    job.run_once(timeout_s=300)
    records = [r for recs, _ in collected for r in recs]
    assert [d for _, dead in collected for d in dead] == []
    java = [r for r in records if r["group"] == GROUP and r["kind"] == "generation"]
    # the Java member joined (generation 1, Kafka's range assignor, both partitions), then left (an Empty one)
    assert [(g["generation"], g["protocol"], len(g["members"])) for g in java] == [(1, "range", 1), (2, None, 0)], java
    member = java[0]["members"][0]
    assert member.startswith("sasl-java-member-") and java[0]["assignment"] == {member: [[DATA, 0], [DATA, 1]]}
    assert java[0]["mismatched_partitions"] == 0
    assert [c["cause"] for c in java[1]["causes"]] == ["member_left"]
    assert any(r["kind"] == "offsets_committed" and r["group"] == GROUP for r in records)
    events = [r for r in records if r["group"] == EVENTS_GROUP and r["kind"] == "generation"]
    assert [(g["generation"], g["members"]) for g in events] == [(1, ["a", "b"])], events
