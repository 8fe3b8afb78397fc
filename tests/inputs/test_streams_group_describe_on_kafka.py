"""The third witness of a streams group (KIP-1071) on a real Apache Kafka 4.4 broker: the monitor's own
StreamsGroupDescribe (API 89, asked by describe_groups through kafka-python's admin client, the base install's),
held against Kafka's own streams group tool (`kafka-streams-groups --describe`, StreamsGroupCommand) at the same
moment, and, as the broker poller publishes it, against the core's reconstruction from `__consumer_offsets`.

Two instances of the project's Kafka Streams test application on `group.protocol=streams` (a broker of its own,
tests/helpers/streams_group_kafka.py): `ra` with two StreamThreads (two members of one process) and `rb` with one,
on an input topic of four partitions (one subtopology, a task per partition). The group is described once the
three members are stable, and again once `rb` has closed (leaving the group) and `ra`'s two threads hold the four
tasks."""
from __future__ import annotations

import time

import pytest

from helpers import streams_group_kafka as sk
from helpers.eventually import eventually
from helpers.java_telemetry import kill_hard, stop_gracefully
from helpers.raw_answer import raw_answer

from rebalance_monitor.broker_facts import streams_group_describe as stgd
from rebalance_monitor.broker_facts.describe import describe_groups
from rebalance_monitor.broker_facts.poller import described_event
from rebalance_monitor.core.events import parse_event

pytestmark = pytest.mark.integration

TOPICS, GROUP, PARTITIONS = ("describe-in", "describe-out"), "streams-describe-1", 4


@pytest.fixture(scope="module")
def streams_broker():
    yield from sk.module_broker(TOPICS, PARTITIONS)


def _stable(bootstrap: str, n: int):
    """(the tool's members, its state) once `n` members hold their target active tasks at the group's epoch, every
    task once; None before."""
    st = sk.state(bootstrap, GROUP)
    if st is None or st[0] != "Stable" or st[1] != st[2] or st[3] != n:
        return None
    ms = sk.members(bootstrap, GROUP)
    active = [t for m in ms.values() for t in m["tasks"].get("active", ())]
    ok = len(ms) == n and all(m["epoch"] == st[1] and m["tasks"].get("active") == m["tasks"].get("target-active")
                              for m in ms.values()) and sorted(active) == [("0", p) for p in range(PARTITIONS)]
    return (ms, st) if ok else None


def _described(bootstrap: str):
    """The group as the broker poller asks it (describe_groups), and when (the time of its group_described event)."""
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="rm-test-streams-describe",
                              request_timeout_ms=15000)
    try:
        return describe_groups(client, [GROUP])[GROUP], int(time.time() * 1000)
    finally:
        client.close()


def _witnessed(bootstrap: str, n: int) -> dict:
    """The tool's members and state once stable, the monitor's description just after, and the tool's again."""
    tool, state = eventually(lambda: _stable(bootstrap, n), 150,
                             lambda: f"{n} stable members: {sk.members(bootstrap, GROUP)}")
    desc, ts = _described(bootstrap)
    return {"tool": tool, "state": state, "desc": desc, "ts": ts, "tool_after": sk.members(bootstrap, GROUP),
            "raw": raw_answer(bootstrap, stgd.request([GROUP]), 1)}


@pytest.fixture(scope="module")
def described(streams_broker, tmp_path_factory):
    work = tmp_path_factory.mktemp("streams-describe")
    bootstrap = streams_broker.bootstrap
    procs = {}
    try:
        procs["ra"] = sk.start_instance(bootstrap, GROUP, "ra", TOPICS, work, threads=2)
        procs["rb"] = sk.start_instance(bootstrap, GROUP, "rb", TOPICS, work)
        three = _witnessed(bootstrap, 3)
        stop_gracefully(procs["rb"])
        two = _witnessed(bootstrap, 2)
    finally:
        for p in procs.values():
            if p.poll() is None:
                kill_hard(p)
    return [three, two]


@pytest.mark.parametrize("step", [0, 1], ids=["three-members", "rb-gone"])
def test_the_description_agrees_with_the_streams_group_tool(described, step):
    """StreamsGroupDescribe v1 as describe_groups asks it: the state, epochs and members, each member's client id,
    epoch, process and tasks (active and target active; none standby or warm-up: a stateless topology), as the
    tool printed them at the same moment."""
    w = described[step]
    desc, tool, state = w["desc"], w["tool"], w["state"]
    assert w["tool_after"] == tool  # nothing moved while the monitor asked
    assert (desc.error, desc.api, desc.api_version, desc.group_type, desc.protocol_type, desc.protocol) == (
        None, "StreamsGroupDescribe", 1, "streams", "streams", "sticky"), desc
    assert (desc.state, desc.group_epoch, desc.assignment_epoch, len(desc.members)) == state, desc
    assert (desc.generation, desc.topology_epoch) == (state[1], 0)
    assert {m.member_id: {"client_id": m.client_id, "epoch": m.member_epoch, "process_id": m.process_id,
                          "tasks": {"active": set(m.active_tasks), "target-active": set(m.target_active_tasks)}}
            for m in desc.members} == tool
    for m in desc.members:
        assert (m.standby_tasks, m.warmup_tasks, m.target_standby_tasks, m.target_warmup_tasks) == ((),) * 4, m
        assert (m.member_type, m.topology_epoch, m.assignment, m.group_instance_id) == ("streams", 0, None, None)
        assert m.client_id.split("-StreamThread-")[0] in ("ra", "rb") and m.client_host.endswith("127.0.0.1")
    # ra's two threads are two members of one process
    processes = {m.client_id.split("-StreamThread-")[0]: m.process_id for m in desc.members}
    assert len({m.process_id for m in desc.members}) == len(processes) == (2 if step == 0 else 1)
    # the bytes the broker sent for it decode strictly to the same description
    assert stgd.described(stgd.decode_response(w["raw"], 1).groups[0], 1, desc.coordinator) == desc


def test_the_core_holds_the_descriptions_against_the_reconstruction_and_they_agree(streams_broker, described):
    """The two descriptions, as the broker poller publishes them (group_described), read beside
    `__consumer_offsets`: the core compares each at its group epoch (members, processes, active and standby tasks)
    and finds it agreeing with the reconstruction."""
    extra = [parse_event(described_event(w["desc"], w["ts"])) for w in described]
    events = extra + _offsets_events(streams_broker.bootstrap)
    records = sk_group_records(events)
    views = [r for r in records if r["kind"] == "broker_view"]
    assert [(v["agrees"], v["differences"], v["broker_epoch"], v["monitor_epoch"], v["group_type"], v["members"])
            for v in views] == [(True, [], w["state"][1], w["state"][1], "streams", w["state"][3])
                                for w in described], views
    # the generation the core reconstructed at each epoch names the members and tasks the broker described
    gens = {g["generation"]: g for g in records if g["kind"] == "generation"}
    for w in described:
        g = gens[w["state"][1]]
        assert {mid: (t["process_id"], sorted(map(tuple, t["active"]))) for mid, t in g["tasks"].items()} == {
            m.member_id: (m.process_id, list(m.active_tasks)) for m in w["desc"].members}


def _offsets_events(bootstrap: str) -> list:
    from rebalance_monitor.decoding.reference import decode_record
    from rebalance_monitor.testing.witnesses import read_topic

    events = []
    for key, value, ts in read_topic(bootstrap, "__consumer_offsets"):
        evs, _rejects = decode_record("offsets-topic", value, key=key, ts_ms=ts, topic_names={})
        events.extend(e for e in evs if e.group in (GROUP, ""))
    return events


def sk_group_records(events) -> list[dict]:
    from helpers.replay import group_records
    from rebalance_monitor.config import load_config

    return group_records(events, load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10}), GROUP)
