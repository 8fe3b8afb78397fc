"""One monitor (`rebalance-monitor run`, a real process) watching three real clusters at once: two Apache Kafka 4.4
clusters (one of them behind a SASL_SSL listener with SCRAM, TLS files made by the test) and one 3.9.

A fourth cluster entry reaches the SASL_SSL cluster with a wrong password: it stays down, says why in the log at
each back-off step, and holds up none of the others.

1. The upgrade: the monitor first runs with a single-cluster configuration (no `clusters:`), on the first 4.4
   cluster; its configuration then becomes a list of three clusters, the first one named `default`. Its
   checkpoint and its exported counters carry over: the counters at the first scrape are the ones before, and
   no generation it had already recorded is recorded again.
2. The same group name runs on the first 4.4 cluster and on the 3.9 one, with different members (Kafka's own
   console consumer). Each cluster's generations are held against that cluster's own describe (its members) and,
   at the end, against the replay of that cluster's `__consumer_offsets` (nothing lost, nothing doubled); their
   series carry their own `kafka_cluster`, with nothing mixed.
3. The 3.9 cluster is stopped for longer than a trigger interval: its `rebalance_monitor_kafka_cluster_up` goes to
   0 while the first cluster's stays 1, and a member killed on the first cluster meanwhile is still reported (a
   generation caused by its session timeout). The 3.9 cluster is started again: its group goes on, with the
   generations it made while the monitor could not read it, once each.
"""
from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import yaml

from helpers.eventually import eventually
from helpers.exposition import parse
from helpers.monitor_process import history, scrape, start_job

from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing.broker import Broker
from rebalance_monitor.testing.processes import free_port
from rebalance_monitor.testing.witnesses import reconstruct, read_topic

pytestmark = [pytest.mark.integration]

OLD_RELEASE = "3.9.2"
CONSUMER = {"session.timeout.ms": "6000", "heartbeat.interval.ms": "1000"}


@pytest.fixture(scope="module")
def old_broker(tmp_path_factory):
    """An Apache Kafka 3.9 cluster of one node."""
    log = tmp_path_factory.mktemp("kafka39") / "broker.log"
    b = Broker(version=OLD_RELEASE, log_path=str(log), heap="512m").start()
    yield b
    b.stop()


def _cluster(name: str, bootstrap: str, events: str, **kafka) -> dict:
    return {"name": name, "kafka": {"bootstrap_servers": bootstrap, "events_topic": events, **kafka}}


def _config(tmp_path: Path, port: int, kafka: dict, clusters: list | None = None) -> Path:
    conf = {
        "kafka": {"starting_offsets": "earliest", "connector": "python", "offsets_topic": "__consumer_offsets",
                  "offsets_topic_partitions": 10, **kafka},
        "spark": {"trigger_interval": "1s", "local_dir": str(tmp_path / "spark")},
        "state": {"checkpoint_location": str(tmp_path / "ck"), "watermark_delay": "1s"},
        "core": {"settle": "1s"},
        "sinks": {"history": {"parquet_path": str(tmp_path / "history")},
                  "dead_letter": {"path": str(tmp_path / "dlq")}},
        "exporter": {"port": port},
        "lag": {"enabled": False},
        "broker_facts": {"enabled": False},
        "logging": {"progress_interval": "5s"},
    }
    if clusters is not None:
        conf["clusters"] = clusters
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(conf))
    return path


def _generations(path: Path, group: str) -> list[dict]:
    return [r for r in history(path) if r["kind"] == "generation" and r["group"] == group]


def _sample(port: int, name: str, **labels):
    text = scrape(port)
    if text is None:
        return None
    want = {k: str(v) for k, v in labels.items()}
    found = [v for (n, lbl), v in parse(text).items() if n == name and want.items() <= dict(lbl).items()]
    return found[0] if len(found) == 1 else None


def _described_members(bootstrap: str, group: str) -> set[str]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="rm-test-describe")
    try:
        desc = admin.describe_groups([group])[group]
        return {m["member_id"] for m in desc["members"]} if desc.get("group_state") == "Stable" else set()
    finally:
        admin.close()


def _latest_members(path: Path, group: str) -> set[str]:
    gens = _generations(path, group)
    return set(gens[-1]["members"]) if gens else set()


def _replayed_generations(bootstrap: str, group: str) -> list[int]:
    records = read_topic(bootstrap, "__consumer_offsets")
    out = reconstruct("offsets-topic", records, groups={group})
    return [r["generation"] for r in out if r["kind"] == "generation"]


def _secure_cluster(name: str, secure, events: str, password: str | None = None) -> dict:
    """The cluster entry of the SASL_SSL broker: its `kafka.*` overrides as the item's nested keys."""
    kafka: dict = {"events_topic": events}
    for dotted, value in secure.overrides(password).items():
        node = kafka
        *parents, leaf = dotted.split(".")[1:]
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return {"name": name, "kafka": kafka}


def test_one_monitor_watches_three_clusters_apart_and_one_outage_stays_inside_its_cluster(
        tmp_path, broker, old_broker, sasl_ssl_broker, unique):
    group, topic, events = f"orders-{unique}", f"in-{unique}", f"ev-{unique}"
    payments = f"payments-{unique}"
    for b in (broker, old_broker, sasl_ssl_broker):
        b.create_topics({topic: 3, events: 1})
    secure_name = "Kafka.B-sasl"   # mixed case and a dot, kept exactly
    procs: dict[str, object] = {}
    job = None
    port = free_port()
    hist_a = tmp_path / "history"
    hist_c = hist_a / "clusters" / "kafka-c"
    hist_b = hist_a / "clusters" / secure_name
    log = tmp_path / "monitor.log"
    try:
        # --- 1. the single-cluster deployment, then the same one as a list of clusters -------------------------
        procs["a1"] = jt.console_consumer(broker.bootstrap, topic, group, "a1", CONSUMER)
        single = _config(tmp_path, port, {"bootstrap_servers": broker.bootstrap, "events_topic": events})
        job = start_job(single, log)
        first = eventually(lambda: _generations(hist_a, group), 180, "the single-cluster run's first generation")
        rebalances = eventually(lambda: _sample(port, "kafka_consumergroup_generations_total", group=group),
                                60, "the generation counter")
        job.send_signal(signal.SIGTERM)
        assert job.wait(timeout=90) == 0
        several = _config(tmp_path, port, {}, [
            _cluster("default", broker.bootstrap, events),
            _secure_cluster(secure_name, sasl_ssl_broker, events),
            _cluster("kafka-c", old_broker.bootstrap, events, broker_release=OLD_RELEASE),
            # the SASL_SSL cluster again, with a wrong password: refused, and nothing else held up by it
            _secure_cluster("wrong-password", sasl_ssl_broker, events, password="not-" + sasl_ssl_broker.password)])
        job = start_job(several, log)
        # the counters carried over: the first scrape already has them, under the default cluster's name
        eventually(lambda: scrape(port), 120, "the exporter after the upgrade")
        assert _sample(port, "kafka_consumergroup_generations_total", group=group,
                       kafka_cluster="default") == rebalances
        # --- 2. the same group name on the 3.9 cluster, other members --------------------------------------------
        procs["c1"] = jt.console_consumer(old_broker.bootstrap, topic, group, "c1", CONSUMER)
        procs["b1"] = jt.console_consumer(sasl_ssl_broker.bootstrap, topic, payments, "b1",
                                          {**CONSUMER, **sasl_ssl_broker.java_properties()})
        procs["a2"] = jt.console_consumer(broker.bootstrap, topic, group, "a2", CONSUMER)
        for bootstrap, path, n in ((broker.bootstrap, hist_a, 2), (old_broker.bootstrap, hist_c, 1)):
            eventually(lambda: len(_latest_members(path, group)) == n
                       and _latest_members(path, group) == _described_members(bootstrap, group), 180,
                       lambda: f"{path}: {_latest_members(path, group)} vs the describe of {bootstrap}")
        assert not _latest_members(hist_a, group) & _latest_members(hist_c, group)
        # the SASL_SSL cluster's group, through its own connection
        eventually(lambda: len(_latest_members(hist_b, payments)) == 1, 180, "the SASL_SSL cluster's group")
        assert _sample(port, "kafka_consumergroup_members", group=payments, kafka_cluster=secure_name) == 1
        assert {r.get("kafka_cluster") for r in history(hist_b)} == {secure_name}
        assert _sample(port, "kafka_consumergroup_members", group=payments, kafka_cluster="default") is None
        # the cluster whose credentials are refused: down, said in the log with the reason, per back-off step
        assert _sample(port, "rebalance_monitor_kafka_cluster_up", kafka_cluster="wrong-password") == 0
        refused = [line for line in log.read_text(errors="replace").splitlines() if "[wrong-password]" in line
                   and "not reachable" in line]
        assert refused and all("SCRAM-SHA-512" in line and sasl_ssl_broker.password not in line for line in refused)
        assert not history(hist_a / "clusters" / "wrong-password")
        assert _sample(port, "kafka_consumergroup_members", group=group, kafka_cluster="default") == 2
        assert _sample(port, "kafka_consumergroup_members", group=group, kafka_cluster="kafka-c") == 1
        assert all(r.get("kafka_cluster", "default") == "default" for r in history(hist_a))
        assert {r.get("kafka_cluster") for r in history(hist_c)} == {"kafka-c"}
        # --- 3. the 3.9 cluster goes away; the first one's session timeout is still reported --------------------
        old_broker.kill(signal.SIGTERM)
        eventually(lambda: _sample(port, "rebalance_monitor_kafka_cluster_up", kafka_cluster="kafka-c") == 0, 120,
                   "the 3.9 cluster reported down")
        before = max(g["generation"] for g in _generations(hist_a, group))
        jt_kill(procs.pop("a2"))
        timed_out = eventually(
            lambda: [g for g in _generations(hist_a, group)
                     if g["generation"] > before and any(c["cause"] == "session_timeout" for c in g["causes"])], 120,
            "the first cluster's session timeout while the 3.9 cluster is down")
        assert len(timed_out[0]["members"]) == 1
        assert _sample(port, "rebalance_monitor_kafka_cluster_up", kafka_cluster="default") == 1
        assert _sample(port, "rebalance_monitor_kafka_cluster_up", kafka_cluster=secure_name) == 1
        assert _sample(port, "rebalance_monitor_kafka_cluster_up", kafka_cluster="kafka-c") == 0
        time.sleep(2)  # not a wait: the outage lasts longer than a trigger interval whatever the machine's speed
        old_broker.start()
        procs["c2"] = jt.console_consumer(old_broker.bootstrap, topic, group, "c2", CONSUMER)
        # the cluster's watch probes it at its back-off steps (up to 60 s apart by now), then starts its query again
        eventually(lambda: _sample(port, "rebalance_monitor_kafka_cluster_up", kafka_cluster="kafka-c") == 1, 300,
                   lambda: "the 3.9 cluster back: " + "\n".join(
                       line for line in log.read_text(errors="replace").splitlines()[-400:] if "[kafka-c]" in line))
        eventually(lambda: len(_latest_members(hist_c, group)) == 2
                   and _latest_members(hist_c, group) == _described_members(old_broker.bootstrap, group), 180,
                   "the 3.9 cluster's group after the outage")
        # nothing lost, nothing doubled: each cluster's generations are those of its own __consumer_offsets, once
        for bootstrap, path in ((broker.bootstrap, hist_a), (old_broker.bootstrap, hist_c)):
            def held(bootstrap=bootstrap, path=path):
                seen = [g["generation"] for g in _generations(path, group)]
                return seen if seen == _replayed_generations(bootstrap, group) else None
            seen = eventually(held, 120, lambda: f"{path}: the generations of the replay of its __consumer_offsets")
            assert len(seen) == len(set(seen)), seen
        assert _generations(hist_a, group)[0] == first[0]   # kept from the single-cluster run, not written again
        job.send_signal(signal.SIGTERM)
        assert job.wait(timeout=90) == 0
        job = None
    finally:
        for p in procs.values():
            jt_kill(p)
        if job is not None and job.poll() is None:
            import os

            os.killpg(job.pid, signal.SIGKILL)
        if old_broker.proc is None:
            old_broker.start()


def jt_kill(proc) -> None:
    import os

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)
