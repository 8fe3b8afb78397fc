"""Every input through the real job with every reader the configuration allows: the Python source with
kafka-python (what the base install has), with confluent-kafka, and Spark's own connector. The inputs are an
events topic, a coordinator-log topic, the broker's real `__consumer_offsets` (a real group of kafka-python
consumers commits there), and an events topic created after the job started. Each must give its group's
generations. The same module runs in the base install (`pip install .`, no extras; `make test` runs it there
with `scripts/test_base_install.sh`), where the confluent case says why it is skipped."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from helpers.eventually import eventually
from helpers.events import stable_group
from helpers.kafka_produce import produce
from helpers.monitor_process import history, kill_hard, start_job

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.job import StreamingQueryJob

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JARS = Path(__file__).resolve().parents[2] / "var" / "spark-jars"


def _confluent_installed() -> bool:
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return False
    return True


READERS = [
    pytest.param(("kafka-python", "python"), id="kafka-python"),
    pytest.param(("confluent", "python"), id="confluent", marks=pytest.mark.skipif(
        not _confluent_installed(), reason="confluent-kafka is an extra (fast); this environment is the base install")),
    pytest.param(("auto", "spark"), id="spark-connector"),
]


def coordinator_lines(group: str, t0: float) -> list[bytes]:
    """A broker's GroupCoordinator lines of one classic group's first generation, as a log shipper writes them."""
    def at(s):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t0 + s)) + f",{int((t0 + s) * 1000) % 1000:03d}"

    texts = [
        (0, f"Preparing to rebalance group {group} in state PreparingRebalance with old generation 0 "
            f"(__consumer_offsets-3) (reason: Adding new member consumer-{group}-1-77aa with group instance id "
            "None; client reason: need to re-join with the given member-id: consumer-x-1-77aa)"),
        (3, f"Stabilized group {group} generation 1 (__consumer_offsets-3) with 1 members"),
        (3.1, f"Assignment received from leader consumer-{group}-1-77aa for group {group} for generation 1. "
              "The group has 1 members, 0 of which are static."),
    ]
    return [json.dumps({"message": f"[{at(s)}] INFO [GroupCoordinator 1]: {text} "
                                   "(kafka.coordinator.group.GroupCoordinator)"}).encode() for s, text in texts]


def real_group_commits(broker, topic: str, group: str) -> None:
    """A real kafka-python consumer joins `group`, reads `topic` and commits, then leaves: generation 1 and its
    commits in `__consumer_offsets`."""
    from kafka import KafkaConsumer

    produce(broker, topic, [{"i": i} for i in range(10)])
    c = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False)
    try:
        read = []
        eventually(lambda: read.extend(r for rs in c.poll(timeout_ms=500).values() for r in rs) or len(read) >= 10,
                   60, "the real group's consumer reading")
        c.commit()
    finally:
        c.close()


@pytest.fixture(scope="module")
def inputs(broker, tmp_path_factory):
    import uuid

    tag = uuid.uuid4().hex[:6]
    names = {"events": f"each-events-{tag}", "logs": f"each-logs-{tag}",
             "data": f"each-data-{tag}", "g_events": f"each-ev-{tag}", "g_logs": f"each-log-{tag}",
             "g_real": f"each-real-{tag}"}
    broker.create_topics({names["events"]: 1, names["logs"]: 1, names["data"]: 3})
    now_ms = int(time.time() * 1000)
    produce(broker, names["events"], stable_group(group=names["g_events"], start=now_ms - 60_000))
    produce(broker, names["logs"], coordinator_lines(names["g_logs"], time.time() - 60))
    real_group_commits(broker, names["data"], names["g_real"])
    return names


def nested(flat: dict) -> dict:
    out: dict = {}
    for key, value in flat.items():
        *path, last = key.split(".")
        d = out
        for part in path:
            d = d.setdefault(part, {})
        d[last] = value
    return out


class InProcess:
    """The job in the test process on the shared SparkSession (the Python source)."""

    def __init__(self, spark, settings: dict, tmp_path):
        self.collected: list = []
        self.job = StreamingQueryJob(load_config(env={}, overrides=settings), spark=spark,
                              on_records=lambda b, recs, dead: self.collected.extend(recs))
        self.job.start()

    def records(self) -> list:
        return list(self.collected)

    def stop(self) -> None:
        self.job.stop()


class AsProcess:
    """`rebalance-monitor run` as a user starts it, with Spark's connector on its class path (the shared
    SparkSession has none: its in-process tests read with the Python source)."""

    def __init__(self, spark, settings: dict, tmp_path):
        import yaml

        self.hist = tmp_path / "history"
        config = tmp_path / "monitor.yaml"
        config.write_text(yaml.safe_dump(nested({**settings, "spark.jars_dir": str(JARS),
                                                 "spark.local_dir": str(tmp_path / "spark")})))
        self.log = tmp_path / "run.log"
        self.proc = start_job(config, self.log)

    def records(self) -> list:
        assert self.proc.poll() is None, self.log.read_text()[-3000:]
        return history(self.hist)

    def stop(self) -> None:
        kill_hard(self.proc)


@pytest.mark.parametrize("reader", READERS)
def test_every_input_with_every_reader(spark, broker, inputs, tmp_path, reader):
    client, connector = reader
    n = dict(inputs)
    n["late"] = f"{n['events']}-late-{client}-{connector}"  # each run's own, created after it started
    n["g_late"] = n["late"]
    settings = {
        "kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": f"{n['events']},{n['late']}",
        "kafka.starting_offsets": "earliest", "kafka.client": client, "kafka.connector": connector,
        "kafka.coordinator_log_topic": n["logs"], "kafka.offsets_topic": "__consumer_offsets",
        "kafka.offsets_topic_partitions": 10, "state.checkpoint_location": str(tmp_path / "ck"),
        "state.watermark_delay": "2s", "sinks.history.parquet_path": str(tmp_path / "history"),
        "sinks.dead_letter.path": str(tmp_path / "dlq"), "exporter.enabled": False, "spark.trigger_interval": "1s",
        "groups.allow": "|".join(n[k] for k in ("g_events", "g_logs", "g_real", "g_late"))}
    if connector == "spark" and not any(JARS.glob("spark-sql-kafka-0-10_2.13-*.jar")):
        pytest.fail(f"Spark's Kafka connector is not in {JARS}: run scripts/bootstrap.sh (scripts/fetch_spark_jars.sh)")
    run = (AsProcess if connector == "spark" else InProcess)(spark, settings, tmp_path)

    def generations(group):
        return [r for r in run.records() if r["group"] == group and r["kind"] == "generation"]

    try:
        for key, what in (("g_events", "events topic"), ("g_logs", "coordinator-log topic"),
                          ("g_real", "__consumer_offsets")):
            eventually(lambda: generations(n[key]), 240, f"a generation from the {what} ({reader})")
        # an events topic created after the job started (it was subscribed to before it existed)
        broker.create_topics({n["late"]: 1})
        produce(broker, n["late"], stable_group(group=n["g_late"], start=int(time.time() * 1000)))
        eventually(lambda: generations(n["g_late"]), 180, f"a generation from the late topic ({reader})")
        real = generations(n["g_real"])[0]
        logs = generations(n["g_logs"])
        events = generations(n["g_events"])
    finally:
        run.stop()
    assert real["protocol"] == "range" and len(real["members"]) == 1, real
    assert logs[0]["generation"] == 1
    assert [g["generation"] for g in events] == [1]


def test_topic_ids_are_named_with_the_base_install_client(broker):
    """KIP-848 records of `__consumer_offsets` name topics by id; `kafka.topic_ids: cluster` asks the cluster for
    the names with kafka-python where confluent-kafka (an extra) is missing, and both clients agree."""
    import uuid

    from rebalance_monitor.inputs import topic_ids as T
    from rebalance_monitor.kafka_connection import KafkaConnection

    name = f"ids-{uuid.uuid4().hex[:6]}"
    broker.create_topics({name: 2})
    conn = KafkaConnection(bootstrap_servers=broker.bootstrap)
    named = T._kafka_python_lookup(conn)()
    assert name in named.values() and all(str(uuid.UUID(i)) == i for i in named)
    if _confluent_installed():
        assert T.cluster_lookup(conn)() == named
