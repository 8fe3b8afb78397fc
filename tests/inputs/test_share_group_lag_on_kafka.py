"""A share group's lag (KIP-932) on a real Apache Kafka 4.4 broker, asked as the exporter asks it: N records go to
a two-partition topic, Kafka's own console share consumer (`kafka-console-share-consumer`, ConsoleShareConsumer)
consumes some of them (`--max-messages`) and stops; the group's records from `__consumer_offsets` tell the
exporter it is a share group, and its broker-offsets poller (kafka-python's admin client, the base install's) asks
DescribeShareGroupOffsets (API 90, version 1: Lag) at the group's coordinator. The exported lag per partition, its
sum and the committed offset (the share-partition start offset) are held against what Kafka's share group tool
printed (`kafka-share-groups --describe --offsets`, ShareGroupCommand: START-OFFSET and LAG), after each of two
consumer runs: the lag shrinks as records are consumed. The broker's own bytes of API 90 at versions 0 and 1 are
decoded strictly beside the tool's table each time."""
from __future__ import annotations

import subprocess

import pytest

from helpers.exposition import parse, value
from helpers.raw_answer import raw_answer
from helpers.replay import group_records
from helpers.share_broker import share_broker as started_share_broker

from rebalance_monitor.broker_facts import share_group_offsets as sgo
from rebalance_monitor.config import load_config
from rebalance_monitor.decoding.reference import decode_record
from rebalance_monitor.metrics.broker_offsets import BrokerOffsets, BrokerOffsetsPoller
from rebalance_monitor.metrics.updater import MetricsUpdater
from rebalance_monitor.testing.kafka_install import classpath, java_binary
from rebalance_monitor.testing.witnesses import read_topic

pytestmark = pytest.mark.integration

TOPIC, GROUP = "share-lag-orders", "share-lag-group"
PER_PARTITION = 30
TOTAL = 2 * PER_PARTITION


def _java(*args: str) -> list[str]:
    return [java_binary(), "-Xmx256m", "-cp", classpath(), *args]


@pytest.fixture(scope="module")
def share_broker():
    with started_share_broker({TOPIC: 2}) as b:
        yield b


def _produce(bootstrap: str) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for i in range(TOTAL):
        p.send(TOPIC, f"r{i}".encode(), partition=i % 2)
    p.flush()
    p.close()


def _earliest(bootstrap: str) -> None:
    """share.auto.offset.reset=earliest for the group (a share group starts at the log end by default)."""
    done = subprocess.run(_java("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap, "--alter",
                                "--entity-type", "groups", "--entity-name", GROUP,
                                "--add-config", "share.auto.offset.reset=earliest"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def _consume(bootstrap: str, n: int, log_path) -> None:
    """Kafka's console share consumer until it has printed `n` records (it then closes, acknowledging them)."""
    with open(log_path, "w") as out:
        done = subprocess.run(_java("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server",
                                    bootstrap, "--topic", TOPIC, "--group", GROUP, "--max-messages", str(n),
                                    "--timeout-ms", "60000"),
                              stdout=out, stderr=subprocess.STDOUT, timeout=180)
    assert done.returncode == 0, log_path.read_text()[-3000:]


def _tool_offsets(bootstrap: str) -> dict[tuple[str, int], tuple[int, int]]:
    """{(topic, partition): (START-OFFSET, LAG)} as `kafka-share-groups --describe --offsets` prints them."""
    done = subprocess.run(_java("org.apache.kafka.tools.consumer.group.ShareGroupCommand", "--bootstrap-server",
                                bootstrap, "--describe", "--group", GROUP, "--offsets"),
                          capture_output=True, text=True, timeout=120)
    lines = [line.split() for line in done.stdout.splitlines() if line.strip()]
    header = next(row for row in lines if row[:1] == ["GROUP"])
    col = {name: i for i, name in enumerate(header)}
    out = {}
    for row in lines:
        if row[:1] == [GROUP] and row[col["TOPIC"]] == TOPIC:
            out[(TOPIC, int(row[col["PARTITION"]]))] = (_number(row[col["START-OFFSET"]]), _number(row[col["LAG"]]))
    assert out, done.stdout + done.stderr
    return out


def _number(cell: str) -> int | None:
    """A cell of the tool's table: "-" where it has no value."""
    return None if cell == "-" else int(cell)


def _exported(bootstrap: str, updater: MetricsUpdater) -> tuple[dict, dict, int | None, list[dict]]:
    """The group's records from `__consumer_offsets` applied, then one poll of the broker-offsets poller: (lag,
    committed offset) per partition, the lag sum, and what the poller applied."""
    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10})
    topic_names: dict = {}
    events = []
    for key, value_, ts in read_topic(bootstrap, "__consumer_offsets"):
        evs, _rejects = decode_record("offsets-topic", value_, key=key, ts_ms=ts, topic_names=topic_names)
        events.extend(e for e in evs if e.group in (GROUP, ""))
    updater.apply(group_records(events, cfg, GROUP, status=True))
    assert updater.share_groups() == [GROUP]
    offsets = BrokerOffsets(bootstrap, client_id="rm-test-share-lag")
    try:
        applied = BrokerOffsetsPoller(updater, offsets, interval_s=3600).poll_once()
    finally:
        offsets.close()
    s = parse(updater.render())
    labels = {"group": GROUP, "group_type": "share"}
    lag = {(TOPIC, p): value(s, "kafka_consumergroup_lag", topic=TOPIC, partition=str(p), **labels) for p in (0, 1)}
    com = {(TOPIC, p): value(s, "kafka_consumergroup_committed_offset", topic=TOPIC, partition=str(p), **labels)
           for p in (0, 1)}
    return lag, com, value(s, "kafka_consumergroup_lag_sum", **labels), applied


def _float(v: int | None) -> float | None:
    return None if v is None else float(v)


def test_the_exported_share_lag_is_the_brokers_and_shrinks_as_records_are_consumed(share_broker, tmp_path):
    bootstrap = share_broker.bootstrap
    _earliest(bootstrap)
    _produce(bootstrap)
    updater = MetricsUpdater()
    consumed, waiting = 0, []
    for run, n in enumerate((12, 20)):
        _consume(bootstrap, n, tmp_path / f"consumer-{run}.log")
        consumed += n
        tool = _tool_offsets(bootstrap)
        lag, committed, lag_sum, applied = _exported(bootstrap, updater)
        assert _tool_offsets(bootstrap) == tool, "the share-partition state moved while no consumer ran"
        # the broker's own lag (v1: KIP-1226) per partition, and the start offset as the committed offset; a
        # share-partition the group has not fetched from yet has neither (the tool prints "-"), nor a series
        assert lag == {k: _float(v[1]) for k, v in tool.items()}, (applied, tool)
        assert committed == {k: _float(v[0]) for k, v in tool.items()}, (applied, tool)
        known = [v[1] for v in tool.values() if v[1] is not None]
        assert known and lag_sum == sum(known)
        share_recs = [r for r in applied if r.get("group") == GROUP]
        assert [r["group_type"] for r in share_recs] == ["share"]
        assert all(isinstance(e[2], int) for e in share_recs[0]["share_lag"]), share_recs  # given, not derived
        # the console consumer acknowledges each record it prints: the records not yet consumed are the lag of
        # the initialised share-partitions and every record of the others
        waiting.append(sum(v[1] if v[1] is not None else PER_PARTITION for v in tool.values()))
        assert waiting[-1] == TOTAL - consumed, tool
        # the broker's own bytes at each version it answers (0-1), strictly decoded: v0 has the tool's start
        # offsets and no lag; v1 the tool's lag too
        for version in (0, 1):
            body = raw_answer(bootstrap, sgo.request([GROUP]), version)
            (group,) = sgo.decode_response(body, version).groups
            got = sgo.group_offsets(group, version)
            # (a share-partition not initialised: start offset -1, no lag; the tool prints "-")
            want = {k: sgo.SharePartitionOffset(-1 if start is None else start, lag if version >= 1 else None)
                    for k, (start, lag) in tool.items()}
            assert (got.error, got.partitions, got.partition_errors) == (None, want, None), (version, got, tool)
            with pytest.raises(sgo.DecodeError):
                sgo.decode_response(body[:-1], version)
    assert waiting[0] > waiting[1], waiting
