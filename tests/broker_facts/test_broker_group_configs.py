"""What the monitor asks the broker, on a real Apache Kafka 4.4 broker configured by hand (the test broker's
group.consumer.session.timeout.ms is 10 s, not Kafka's 45 s) with one group's own override set by Kafka's
`kafka-configs` tool (ConfigCommand): the broker poller publishes the brokers' settings and the group's override as
`group_config` events, and a `kill -9` of a stock Java KIP-848 member (Kafka's console consumer,
group.protocol=consumer) in each group is then reported from `__consumer_offsets` alone as a session timeout
naming it, with the session the broker applied and where it came from. Without the poller's events the
configuration's fallback (45 s) reads the same crashes as leaves: the test fails if the broker's word is not used."""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import kill_hard

from rebalance_monitor.broker_facts.describe import describe_groups
from rebalance_monitor.broker_facts.poller import BrokerFactsPoller
from rebalance_monitor.config import load_config
from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.decoding.reference import decode_record
from rebalance_monitor.inputs.topic_ids import resolver_for
from rebalance_monitor.kafka_connection import KafkaConnection
from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing import witnesses as W
from rebalance_monitor.testing.kafka_install import classpath, java_binary

pytestmark = pytest.mark.integration
# commits every second: what `__consumer_offsets` shows of a member's liveness (its partitions' commits)
K848 = {"group.protocol": "consumer", "auto.commit.interval.ms": "1000"}


def _reconciled(admin, groups, n: int, committed: int = 0) -> bool:
    """Each of `groups` as its coordinator describes it: `n` members, every one at the group's epoch owning its
    target (the last rebalance reconciled), and commits on `committed` partitions (the members' liveness as
    `__consumer_offsets` shows it)."""
    for d in describe_groups(admin, list(groups)).values():
        if d.error is not None or len(d.members) != n or d.assignment_epoch != d.group_epoch:
            return False
        if any(m.member_epoch != d.group_epoch or set(m.assignment or ()) != set(m.target_assignment or ())
               for m in d.members):
            return False
        if committed and len(_committed(admin, d.group)) < committed:
            return False
    return True


def _committed(admin, group: str) -> dict:
    """{(topic, partition): committed offset} of `group`."""
    offsets = admin.list_group_offsets({group: None}).get(group) or {}
    return {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()
            if om is not None and om.offset is not None and om.offset >= 0}


def _each_owner_committed(admin, groups) -> None:
    """Every partition of `groups` committed again after now: each member, its partitions reconciled, commits its
    own (its liveness as `__consumer_offsets` shows it, which the core's inference of a crash reads)."""
    before = {g: _committed(admin, g) for g in groups}
    eventually(lambda: all(all(_committed(admin, g).get(k, -1) > v for k, v in before[g].items()) for g in groups),
               60, "each partition committed by its owner")


class _Traffic:
    """Records to `topic` every 100 ms while it runs, so that the members commit."""

    def __init__(self, bootstrap: str, topic: str):
        import threading

        from kafka import KafkaProducer

        self._producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        self._topic = topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.wait(0.1):
            for p in (0, 1):
                self._producer.send(self._topic, value=b"x%d" % i, partition=p)
            i += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._producer.close()


def _set_group_config(bootstrap: str, group: str, setting: str) -> None:
    done = subprocess.run(
        [java_binary(), "-Xmx128m", "-cp", classpath(), "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server",
         bootstrap, "--entity-type", "groups", "--entity-name", group, "--alter", "--add-config", setting],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def _records(bootstrap: str, facts: list[bytes], groups: set[str], log=None) -> list[dict]:
    """The core's records of `__consumer_offsets` as the broker holds it (or of the coordinator's `log` file), with
    the poller's events beside it."""
    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10})
    names = resolver_for("cluster", KafkaConnection(bootstrap_servers=bootstrap))
    events = [parse_event(v) for v in facts]
    if log is not None:
        records = [("coordinator-log", None, line.encode(), None) for line in open(log, errors="replace")]
    else:
        records = [("offsets-topic", *r) for r in W.read_topic(bootstrap, "__consumer_offsets")]
    for source, key, value, ts in records:
        evs, _ = decode_record(source, value, key=key, ts_ms=ts, topic_names=names)
        events.extend(e for e in evs if not e.group or e.group in groups)
    events.sort(key=lambda e: e.ts)
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=2000, offsets_partitions=10)
    out = []
    for e in events:
        out.extend(recon.feed(e))
    out.extend(recon.finish())
    return [r for r in out if r.get("group") in groups]


def _crash_causes(records, group):
    return [(c["cause"], c.get("timeout_source"), c.get("client_id")) for r in records
            if r["kind"] == "generation" and r["group"] == group and r["members"] for c in r["causes"]
            if c.get("cause_source") == "inferred"]


def test_a_killed_kip848_member_is_a_session_timeout_on_the_brokers_and_the_groups_own_session(broker, unique,
                                                                                                tmp_path):
    from kafka.admin import KafkaAdminClient

    bootstrap = broker.bootstrap
    topic = f"t-{unique}"
    plain, own = f"g-plain-{unique}", f"g-own-{unique}"
    broker.create_topics({topic: 2})
    _set_group_config(bootstrap, own, "consumer.session.timeout.ms=20000")
    published: list[bytes] = []
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    poller = BrokerFactsPoller(admin, lambda key, value: published.append(value), event_time=False)
    procs = {}
    traffic = _Traffic(bootstrap, topic)
    try:
        poller.note_groups([plain, own])
        assert poller.poll_once() >= 3
        facts = [json.loads(v) for v in published]
        assert {"group": "", "group_type": "consumer", "session_timeout_ms": 10_000} in [
            {k: f.get(k) for k in ("group", "group_type", "session_timeout_ms")} for f in facts]
        assert [f for f in facts if f["group"] == own] == [
            {**next(f for f in facts if f["group"] == own), "session_timeout_ms": 20_000, "source": "group"}]
        assert "session_timeout_ms" not in next(f for f in facts if f["group"] == plain)
        # the streams family's num.standby.replicas, Kafka's default (0)
        assert [f.get("num_standby_replicas") for f in facts if f["group"] == "" and f.get("group_type") == "streams"] \
            == [0]
        # the brokers' release, as their ApiVersions answer tells it (a minor release: 4.4.x)
        assert [(f["release"], f["source"]) for f in facts if f["type"] == "broker_release"] == [
            ("4.4.0", "api_versions")]
        for group in (plain, own):
            for role in ("survivor", "victim"):
                procs[group, role] = jt.console_consumer(bootstrap, topic, group, f"{role}-{group}"[:60], K848,
                                                         log_path=tmp_path / f"{group}-{role}.log")
        # both members joined, own their partitions and commit
        eventually(lambda: _reconciled(admin, (plain, own), 2, committed=2), 120, "both groups' two members")
        _each_owner_committed(admin, (plain, own))
        for group in (plain, own):
            kill_hard(procs.pop((group, "victim")))
        # the broker fences each victim after its group's session (10 s and 20 s)
        eventually(lambda: _reconciled(admin, (plain, own), 1), 120, "each victim fenced")
        assert poller.poll_once() == 0  # nothing changed: nothing published again
    finally:
        traffic.stop()
        for proc in procs.values():
            kill_hard(proc)
        admin.close()
    records = _records(bootstrap, published, {plain, own})
    assert _crash_causes(records, plain) == [("session_timeout", "broker", f"victim-{plain}"[:60])], records
    assert _crash_causes(records, own) == [("session_timeout", "group", f"victim-{own}"[:60])], records
    timeouts = {r["group"]: r for r in records if r["kind"] == "member_timeout"}
    assert timeouts[plain]["timeout_source"] == "broker" and timeouts[own]["timeout_source"] == "group"
    # without what the broker said, the configuration's 45 s fallback reads both crashes as leaves
    blind = _records(bootstrap, [], {plain, own})
    assert [c[0] for g in (plain, own) for c in _crash_causes(blind, g)] == ["member_left", "member_left"]
    # the coordinator's log alone says whose session expired; the poller's events say which session it was
    logged = _records(bootstrap, published, {plain, own}, log=broker.coordinator_log)
    for group, source in ((plain, "broker"), (own, "group")):
        timeouts = [r for r in logged if r["group"] == group and r["kind"] == "member_timeout"]
        assert [(r["timeout"], r.get("timeout_source")) for r in timeouts] == [("session", source)], timeouts
        causes = [c["cause"] for r in logged if r["group"] == group and r["kind"] == "generation" and r["members"]
                  for c in r["causes"] if c["cause"] != "member_joined"]
        assert causes == ["session_timeout"], (group, causes)


def test_kip848_groups_on_each_server_assignor_are_judged_and_described_alike(broker, unique, tmp_path):
    """Two KIP-848 groups of stock Java consumers on a real 4.4 broker: one on the brokers' default assignor
    (`uniform`, its members name none) and one whose members ask for `range` (group.remote.assignor). From
    `__consumer_offsets` with the broker poller's events alone, every epoch with members is judged, with no
    mismatch; and each coordinator's description (ConsumerGroupDescribe) agrees with the reconstruction."""
    from kafka.admin import KafkaAdminClient

    bootstrap = broker.bootstrap
    topic = f"t-{unique}"
    default, ranged = f"g-uniform-{unique}", f"g-range-{unique}"
    broker.create_topics({topic: 5})
    published: list[bytes] = []
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    poller = BrokerFactsPoller(admin, lambda key, value: published.append(value), event_time=False)
    procs = []
    traffic = _Traffic(bootstrap, topic)
    try:
        poller.note_groups([default, ranged])
        poller.poll_once()
        for group, extra in ((default, {}), (ranged, {"group.remote.assignor": "range"})):
            for i in range(3):
                procs.append(jt.console_consumer(bootstrap, topic, group, f"m{i}-{group}"[:60], {**K848, **extra},
                                                 log_path=tmp_path / f"{group}-{i}.log"))
                time.sleep(4)
        eventually(lambda: _reconciled(admin, (default, ranged), 3), 120, "the last member reconciled")
        poller.note_batch([{"kind": "generation", "group": g, "ts": int(time.time() * 1000)} for g in (default, ranged)])
        assert poller.poll_once(everything=False) == 2
    finally:
        traffic.stop()
        for proc in procs:
            kill_hard(proc)
        admin.close()
    described = {e["group"]: e for e in map(json.loads, published) if e["type"] == "group_described"}
    assert (described[default]["protocol"], described[ranged]["protocol"]) == ("uniform", "range")
    assert all(len(described[g]["members"]) == 3 for g in (default, ranged))
    records = _records(bootstrap, published, {default, ranged})
    for group, assignor in ((default, "uniform"), (ranged, "range")):
        gens = [r for r in records if r["group"] == group and r["kind"] == "generation" and r["members"]]
        judged = [r for r in gens if r["mismatched_partitions"] is not None]
        assert gens and all(r["protocol"] == assignor for r in gens), [(r["generation"], r["protocol"]) for r in gens]
        assert judged and all(r["mismatched_partitions"] == 0 for r in judged), [
            (r["generation"], r["mismatched_partitions"], r["expected_reason"]) for r in gens]
        views = [r for r in records if r["group"] == group and r["kind"] == "broker_view"]
        assert [(v["agrees"], v["broker_epoch"] == v["monitor_epoch"]) for v in views] == [(True, True)], views
