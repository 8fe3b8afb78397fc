"""A real Prometheus scrapes the real exporter while real consumers on the real broker rebalance and lag.

Two kafka-python consumers (each polling on its own thread) form a group, commit part of what they read, then
one leaves. What the consumers saw (their assignment callbacks) becomes canonical events; the core
(`rebalance_monitor.core.reconstruct`) turns them into output records, or, where the core is not installed,
the test builds the `generation` records from the callbacks itself. Committed and end offsets come from the
brokers through `broker_offsets`. Prometheus' HTTP API must then show one rebalance per generation and lag
equal to end minus committed as the broker reports them.
"""
from __future__ import annotations

import threading
import time

import pytest

from helpers.eventually import eventually

pytestmark = pytest.mark.integration

RECORDS_PER_PARTITION = 10
PARTITIONS = 4


class Member(threading.Thread):
    """One consumer, polling on its own thread, committing once after its first non-empty poll."""

    def __init__(self, bootstrap, group, topic, name, log, lock):
        super().__init__(name=name, daemon=True)
        self.bootstrap, self.group, self.topic, self.client = bootstrap, group, topic, name
        self.log, self.lock = log, lock
        self.stop_evt = threading.Event()
        self.committed = threading.Event()
        self.member_id = ""
        self.error = None

    def run(self):
        # confluent-kafka (librdkafka): its heartbeats run on native threads, so a loaded machine does not make a
        # member miss its session (kafka-python's did, in about one full-suite run in three)
        from confluent_kafka import Consumer

        from rebalance_monitor.instrument.confluent import decode_group_metadata

        try:
            c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": self.client,
                          "enable.auto.commit": False, "auto.offset.reset": "earliest",
                          "session.timeout.ms": 15000, "heartbeat.interval.ms": 1000,
                          "max.poll.interval.ms": 30000, "partition.assignment.strategy": "range"})
            member = self

            def on_assign(consumer, partitions):
                info = decode_group_metadata(consumer.consumer_group_metadata()) or {}
                member.member_id = consumer.memberid() or info.get("member_id") or ""
                with member.lock:
                    member.log.append({
                        "ts": int(time.time() * 1000), "client": member.client, "member_id": member.member_id,
                        "generation": info.get("generation"), "protocol": "range",
                        "leader": False,  # librdkafka does not say which member led
                        "assignment": sorted([tp.topic, tp.partition] for tp in partitions)})

            with self.lock:
                self.log.append({"ts": int(time.time() * 1000), "client": self.client, "join": True})
            c.subscribe([self.topic], on_assign=on_assign)
            while not self.stop_evt.is_set():
                msgs = [m for m in c.consume(3, timeout=0.1) if m.error() is None]
                if msgs and not self.committed.is_set():
                    c.commit(asynchronous=False)
                    self.committed.set()
            c.close()
            with self.lock:
                self.log.append({"ts": int(time.time() * 1000), "client": self.client, "leave": True,
                                 "member_id": self.member_id})
        except Exception as exc:  # surfaced by the test
            self.error = exc


def assignments(log):
    return [e for e in log if "generation" in e]


def to_events(log, group, topic):
    """The canonical events (contract section 1) of what the consumers did."""
    evs = []
    member_of = {}
    for e in sorted(log, key=lambda x: x["ts"]):
        if e.get("join"):
            evs.append({"v": 1, "type": "join", "ts": e["ts"], "group": group, "member_id": "",
                        "client_id": e["client"], "host": "/127.0.0.1", "protocols": ["range", "roundrobin"],
                        "topics": [topic], "owned": [], "session_timeout_ms": 15000, "rebalance_timeout_ms": 30000,
                        "heartbeat_interval_ms": 1000})
        elif "generation" in e:
            member_of[e["client"]] = e["member_id"]
            leaders = [x["member_id"] for x in assignments(log)
                       if x["generation"] == e["generation"] and x["leader"]]
            evs.append({"v": 1, "type": "sync", "ts": e["ts"], "group": group, "member_id": e["member_id"],
                        "client_id": e["client"], "host": "/127.0.0.1", "generation": e["generation"],
                        "protocol": e["protocol"] or "range", "leader": leaders[0] if leaders else None,
                        "assignment": e["assignment"]})
        elif e.get("leave"):
            evs.append({"v": 1, "type": "leave", "ts": e["ts"], "group": group,
                        "member_id": member_of.get(e["client"], ""), "client_id": e["client"],
                        "host": "/127.0.0.1", "reason": "the consumer is being closed"})
    return evs


def records_from_core(events):
    from rebalance_monitor.core.events import parse_event
    from rebalance_monitor.core.reconstruct import Reconstructor

    rc = Reconstructor(max_disorder_ms=0, emit_status=True)
    out = []
    for ev in events:
        out.extend(rc.feed(parse_event(ev)))
    out.extend(rc.finish())
    return out


def records_from_callbacks(log, group):
    """`generation` records built directly from the consumers' assignment callbacks (no core needed)."""
    by_gen: dict[int, list] = {}
    for e in assignments(log):
        by_gen.setdefault(e["generation"], []).append(e)
    recs, prev_members, prev_owner = [], set(), {}
    for gen in sorted(by_gen):
        es = by_gen[gen]
        members = {e["member_id"] for e in es}
        owner = {tuple(tp): e["member_id"] for e in es for tp in e["assignment"]}
        causes = []
        if members - prev_members:
            causes.append({"cause": "member_joined"})
        if prev_members - members:
            causes.append({"cause": "member_left"})
        done = max(e["ts"] for e in es)
        recs.append({"kind": "generation", "group": group, "generation": gen, "protocol": es[0]["protocol"],
                     "leader": next((e["member_id"] for e in es if e["leader"]), None), "started_ms": None,
                     "completed_ms": done, "ts": done, "duration_ms": None, "causes": causes or [{"cause": "unknown"}],
                     "members": sorted(members), "assignment": {e["member_id"]: e["assignment"] for e in es},
                     "expected_assignment": None, "mismatched_partitions": None, "unassigned_partitions": 0,
                     "partitions_moved": sum(1 for tp, m in owner.items() if tp in prev_owner and prev_owner[tp] != m),
                     "imbalance": None})
        prev_members, prev_owner = members, owner
    return recs


def _sample(text: str, name: str, group: str) -> float | None:
    from prometheus_client.parser import text_string_to_metric_families

    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            if smp.name == name and smp.labels.get("group") == group:
                return smp.value
    return None


def test_prometheus_scrapes_rebalances_and_lag(broker, unique):
    from kafka import KafkaProducer

    from rebalance_monitor.metrics.broker_offsets import BrokerOffsets, BrokerOffsetsPoller
    from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter
    from rebalance_monitor.testing.prometheus import PrometheusServer

    topic, group = f"{unique}-t", f"{unique}-g"
    broker.create_topics({topic: PARTITIONS})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(RECORDS_PER_PARTITION * PARTITIONS):
        producer.send(topic, value=b"x%d" % i, partition=i % PARTITIONS)
        producer.flush()   # one record per batch
    producer.close()

    exporter = MetricsExporter(ExporterSettings(port=0)).start()
    prom = PrometheusServer(targets=[exporter.url.split("://", 1)[1]]).start()
    log, lock = [], threading.Lock()
    a = Member(broker.bootstrap, group, topic, "member-a", log, lock)
    b = Member(broker.bootstrap, group, topic, "member-b", log, lock)
    offsets = BrokerOffsets(broker.bootstrap)
    try:
        a.start()
        b.start()

        def gens_of(client):
            with lock:
                return {e["generation"] for e in assignments(log) if e["client"] == client}

        # both members in one generation, both committed
        # (a generous bound: on this shared 2-core machine a loaded run can take tens of seconds)
        eventually(lambda: gens_of("member-a") & gens_of("member-b") and a.committed.is_set() and b.committed.is_set(),
                   120, lambda: f"the group to form: {log} (errors: {a.error!r}, {b.error!r})", interval_s=0.1)
        first_common = max(gens_of("member-a") & gens_of("member-b"))
        b.stop_evt.set()
        b.join(15)
        # member-a alone in a newer generation
        eventually(lambda: any(g > first_common for g in gens_of("member-a")), 120,
                   lambda: f"a rebalance after the leave: {log}", interval_s=0.1)
        assert a.error is None and b.error is None, (a.error, b.error)
        with lock:
            snapshot = list(log)      # member-a stays in the group (stopped at the end)
        try:
            import rebalance_monitor.core.reconstruct  # noqa: F401
            records = records_from_core(to_events(snapshot, group, topic))
            source = "core"
        except ImportError:
            records = records_from_callbacks(snapshot, group)
            source = "callbacks"
        generations = [r for r in records if r["kind"] == "generation"]
        print(f"records from {source}:", [(r["generation"], [c["cause"] for c in r["causes"]]) for r in generations])
        observed = {e["generation"] for e in assignments(snapshot)}
        assert {r["generation"] for r in generations} == observed, (source, generations, snapshot)

        # the exporter gets every record twice (a replayed batch) and the broker's offsets
        exporter.updater.apply(records)
        exporter.updater.apply(records)
        poller = BrokerOffsetsPoller(exporter.updater, offsets, interval_s=3600)
        poller.poll_once()
        assert group in exporter.updater.groups_without_commits()

        committed = offsets.committed([group])[group]
        ends = offsets.end_offsets(committed)
        assert committed and all(ends[tp] == RECORDS_PER_PARTITION for tp in committed)
        expected_lag = {tp: max(0, ends[tp] - committed[tp]) for tp in committed}
        assert sum(expected_lag.values()) > 0

        # --- what Prometheus stored -------------------------------------------------------------------------
        sel = f'{{group="{group}"}}'
        prom.wait_for(f"kafka_consumergroup_lag_sum{sel}", lambda r: len(r) == 1, timeout_s=30)
        assert prom.values(f"kafka_consumergroup_generations_total{sel}", "group") == {group: float(len(observed))}
        by_cause = prom.values(f"kafka_consumergroup_rebalances_total{sel}", "cause")
        expected_causes: dict = {}
        for r in generations:
            for c in {c["cause"] for c in r["causes"]} or {"unknown"}:
                expected_causes[c] = expected_causes.get(c, 0) + 1
        assert by_cause == {c: float(n) for c, n in expected_causes.items()}
        assert by_cause.get("member_left", 0) >= 1            # member-b's leave triggered the last rebalance
        last = max(generations, key=lambda r: r["generation"])
        assert prom.values(f"kafka_consumergroup_generation{sel}", "group") == {group: float(last["generation"])}
        assert prom.values(f"kafka_consumergroup_members{sel}", "group") == {group: 1.0}

        lag = prom.values(f"kafka_consumergroup_lag{sel}", ("topic", "partition"))
        assert lag == {(t, str(p)): float(v) for (t, p), v in expected_lag.items()}
        assert prom.values(f"kafka_consumergroup_lag_sum{sel}", "group") == {group: float(sum(expected_lag.values()))}
        assert prom.values(f"kafka_consumergroup_committed_offset{sel}", ("topic", "partition")) == \
            {(t, str(p)): float(v) for (t, p), v in committed.items()}
        assert prom.values(f'kafka_topic_partition_end_offset{{topic="{topic}"}}', "partition") == \
            {str(p): float(v) for (t, p), v in ends.items()}
        assert prom.values("rebalance_monitor_up", "job") == {"rebalance-monitor": 1.0}
        assert prom.values("up", "job") == {"rebalance-monitor": 1.0}

        # --- time lag: the log end moves on while the committed offsets stay ----------------------------------
        a.stop_evt.set()
        a.join(15)
        first_poll = time.time()
        time.sleep(1.5)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
        for i in range(PARTITIONS):
            producer.send(topic, value=b"more", partition=i)
        producer.flush()
        producer.close()
        poller.poll_once()
        seconds = _sample(exporter.updater.render(), "kafka_consumergroup_lag_seconds", group)
        # the committed offsets were behind the log end already at the first poll: the time lag is at least the
        # time since then (older records are dated by extrapolating the sampled produce rate backwards, an
        # estimate: see metrics/lag.py)
        assert seconds is not None and seconds >= time.time() - first_poll - 1, seconds
    finally:
        a.stop_evt.set()
        b.stop_evt.set()
        offsets.close()
        prom.stop()
        exporter.stop()


def test_prometheus_scrapes_over_tls_with_basic_auth(tmp_path):
    """Prometheus' own TLS client and basic auth against the exporter (self-signed certificate)."""
    import shutil
    import subprocess

    from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter
    from rebalance_monitor.testing.prometheus import PrometheusServer

    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a self-signed test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    settings = ExporterSettings(port=0, tls_cert_file=str(cert), tls_key_file=str(key), basic_auth_user="prom",
                                basic_auth_password="correct horse")
    with MetricsExporter(settings) as exp:
        exp.updater.apply([{"kind": "group_status", "group": "tls-group", "state": "Stable", "members": 2}])
        target = exp.url.split("://", 1)[1]
        with PrometheusServer([target], job="good", scheme="https", tls_insecure=True,
                              basic_auth=("prom", "correct horse")) as good, \
                PrometheusServer([target], job="bad", scheme="https", tls_insecure=True,
                                 basic_auth=("prom", "wrong")) as bad:
            good.wait_for('kafka_consumergroup_members{group="tls-group"}', lambda r: len(r) == 1, timeout_s=30)
            assert good.values('kafka_consumergroup_members{group="tls-group"}', "group") == {"tls-group": 2.0}
            bad.wait_for('up{job="bad"}', lambda r: len(r) == 1, timeout_s=30)
            assert bad.values('up{job="bad"}', "job") == {"bad": 0.0}     # 401: the scrape fails
            assert bad.query('kafka_consumergroup_members') == []
