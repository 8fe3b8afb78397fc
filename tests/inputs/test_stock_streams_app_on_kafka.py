"""A Streams application the project did not write, on the streams protocol (KIP-1071): Kafka's own WordCountDemo
(org.apache.kafka:kafka-streams-examples 4.0.0, the newest on Maven Central, run on Kafka 4.4's kafka-streams and
kafka-clients; scripts/fetch_kafka.sh fetches its jar) with `group.protocol=streams` in its properties file, on a
real Apache Kafka 4.4 broker of this module's own (streams sessions of 6 s: `group.streams.session.timeout.ms`).
Its topology is stateful: words re-keyed through a repartition topic, then counted in a state store, so two
subtopologies, each a task per input partition. Two instances join, a third scales the group out, one is killed
with `kill -9` and fenced when its session expires, one closes gracefully (Streams' `close()` from its shutdown
hook), then the last.

The core's generations from `__consumer_offsets` are held against what Kafka's streams group tool
(`kafka-streams-groups --describe`, StreamsGroupCommand) said at each stable point: the epochs, the members, their
process ids and active tasks, every generation judged by the project's sticky task assignor with no task mismatched.
The broker's coordinator log (its own file, as the harness keeps it) names why each member went: the killed one's
session timeout and the closed one's leave, each with its client id and process id."""
from __future__ import annotations

import threading
import time

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import kill_hard, stop_gracefully
from helpers import streams_group_kafka as sk
from helpers.replay import decode_offsets_topic

from rebalance_monitor.inputs.coordinator_log import decode_log_record
from rebalance_monitor.testing import java_telemetry as jt

pytestmark = pytest.mark.integration

GROUP = "streams-wordcount"  # the demo's application id: its properties file here does not set one
TOPICS, PARTITIONS = jt.WORD_COUNT_TOPICS, 3
ALL_TASKS = {(sub, p) for sub in ("0", "1") for p in range(PARTITIONS)}  # the re-keying, then the count
CLIENTS = ("w-a", "w-b", "w-c")


@pytest.fixture(scope="module")
def streams_broker():
    yield from sk.module_broker(TOPICS, PARTITIONS)


def _start(bootstrap: str, client: str, work):
    # commits every half second: the offsets topic's commits of a member's tasks are its signs of life
    props = {"bootstrap.servers": bootstrap, "client.id": client, "group.protocol": "streams",
             "state.dir": str(work / f"state-{client}"), "commit.interval.ms": "500"}
    return jt.word_count_demo(props, work / f"{client}.properties", work / f"{client}.log")


def _stable(bootstrap: str, clients: tuple[str, ...]):
    """(the broker's members, (state, group epoch, target epoch, members)) once the members are exactly the
    `clients`' StreamThreads, each at the group's epoch holding its target's active tasks, every task once; else
    None."""
    st = sk.state(bootstrap, GROUP)
    if st is None or st[0] != "Stable" or st[1] != st[2] or st[3] != len(clients):
        return None
    ms = sk.members(bootstrap, GROUP)
    active = [t for m in ms.values() for t in m["tasks"].get("active", ())]
    ok = sorted(m["client_id"] for m in ms.values()) == [f"{c}-StreamThread-1-consumer" for c in sorted(clients)] \
        and all(m["epoch"] == st[1] and m["tasks"].get("active") == m["tasks"].get("target-active")
                for m in ms.values()) and sorted(active) == sorted(ALL_TASKS)
    return (ms, st) if ok else None


@pytest.fixture(scope="module")
def word_count_run(streams_broker, tmp_path_factory):
    """The scenario, once for the module's tests: what the broker's streams group tool said at each stable point."""
    work = tmp_path_factory.mktemp("word-count")
    bootstrap = streams_broker.bootstrap
    procs, steps = {}, {}

    def settle(clients, what):
        return eventually(lambda: _stable(bootstrap, clients), 120,
                          lambda: f"{what}: {sk.members(bootstrap, GROUP)} {sk.state(bootstrap, GROUP)}")

    stop = threading.Event()
    feeder = threading.Thread(target=_feed, args=(bootstrap, stop), daemon=True)
    feeder.start()
    try:
        for c in CLIENTS[:2]:
            procs[c] = _start(bootstrap, c, work)
        steps["two"] = settle(CLIENTS[:2], "w-a and w-b")
        procs["w-c"] = _start(bootstrap, "w-c", work)  # the scale-out
        steps["three"] = settle(CLIENTS, "w-c in")
        steps["killed_at_ms"] = int(time.time() * 1000)
        kill_hard(procs["w-a"])
        steps["fenced"] = settle(("w-b", "w-c"), "w-a fenced")
        stop_gracefully(procs["w-b"])
        steps["alone"] = settle(("w-c",), "w-b gone")
        stop_gracefully(procs["w-c"])
        steps["final"] = eventually(lambda: (s := sk.state(bootstrap, GROUP)) and s[0] == "Empty" and s, 60,
                                    "the group empty")
    finally:
        stop.set()
        feeder.join(30)
        sk.end_scenario(procs, streams_broker, work)
    return steps


def _feed(bootstrap: str, stop: threading.Event) -> None:
    """Lines of words into every input partition, ten a second, while the scenario runs: each task has records
    to count and offsets to commit."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        i = 0
        while not stop.wait(0.1):
            producer.send(TOPICS[0], f"all streams flow from line {i}".encode(), partition=i % PARTITIONS)
            i += 1
    finally:
        producer.close(10)


def _active(g: dict) -> dict:
    return {mid: sorted(map(tuple, t["active"])) for mid, t in g["tasks"].items()}


def test_kafkas_own_word_count_on_the_streams_protocol_matches_the_broker(streams_broker, word_count_run):
    bootstrap, steps = streams_broker.bootstrap, word_count_run
    ids = {m["client_id"].split("-StreamThread-")[0]: mid for mid, m in steps["three"][0].items()}
    process = {mid: m["process_id"] for mid, m in steps["three"][0].items()}
    kinds, _decoder = decode_offsets_topic(bootstrap)  # every record the coordinator wrote decodes, none rejected
    assert {"StreamsGroupTopology v0", "StreamsGroupMemberMetadata tombstone"} <= kinds, kinds

    # the monitor told the brokers' streams session (as the broker poller tells a running one)
    gens = [g for g in sk.replay(bootstrap, GROUP, **{"core.kip848_session_timeout": f"{sk.SESSION_MS}ms"})
            if g["kind"] == "generation"]
    by_epoch = {g["generation"]: g for g in gens}
    assert [g["generation"] for g in gens] == sorted(by_epoch), [g["generation"] for g in gens]
    assert gens[-1]["generation"] == steps["final"][1] and gens[-1]["members"] == [], gens[-1]
    for g in gens[:-1]:  # judged by the sticky task assignor, none by a consumer assignor
        assert (g["protocol"], g["group_type"], g["expected_assignment"]) == ("sticky", "streams", None), g
        assert g["mismatched_tasks"] == 0 or (g["mismatched_tasks"] is None and
                                             "not reconciled yet" in g["expected_reason"]), g
    # each stable point: the epoch the broker described, its members, processes and tasks
    for key in ("two", "three", "fenced", "alone"):
        described, st = steps[key]
        g = by_epoch[st[1]]
        assert sorted(g["members"]) == sorted(described), (key, g, described)
        assert {mid: t["process_id"] for mid, t in g["tasks"].items()} == \
            {mid: m["process_id"] for mid, m in described.items()}, key
        assert _active(g) == sk.active_tasks_of(described), (key, g)
        for kind in ("standby", "warmup"):
            assert {mid: {tuple(t) for t in g["tasks"][mid][kind]} for mid in g["members"]} == \
                {mid: m["tasks"].get(kind, set()) for mid, m in described.items()}, (key, kind, g)
        assert g["mismatched_tasks"] == 0
        assert _active({"tasks": g["expected_tasks"]}) == sk.active_tasks_of(described)
    joined = {c["member_id"]: c.get("client_id") for g in gens for c in g["causes"] if c["cause"] == "member_joined"}
    assert joined == {mid: f"{c}-StreamThread-1-consumer" for c, mid in ids.items()}, joined
    # the scale-out: w-c joined at an epoch after the two-member one, by the three-member one
    scaled = next(g for g in gens if ids["w-c"] in g["members"])
    assert steps["two"][1][1] < scaled["generation"] <= steps["three"][1][1], scaled
    # w-a's fence: the first epoch without it, after its session ran out; its tasks, and only they, went to the
    # other processes (each instance a process of one thread)
    gone = next(g for g in gens if g["generation"] > steps["three"][1][1] and ids["w-a"] not in g["members"])
    assert [c.get("member_id") for c in gone["causes"]] == [ids["w-a"]], gone["causes"]
    # why, from __consumer_offsets alone: the commits of its tasks' input partitions stopped a session before
    assert gone["causes"][0]["cause"] == "session_timeout", gone["causes"][0].get("reason")
    assert (gone["tasks_moved_between_processes"], gone["tasks_moved_within_process"]) == (
        sk.held_before(gens, gone, ids["w-a"]), 0), gone
    assert sk.SESSION_MS - 1500 <= gone["started_ms"] - steps["killed_at_ms"] <= sk.SESSION_MS + 15000
    left = next(g for g in gens if g["generation"] > steps["fenced"][1][1] and ids["w-b"] not in g["members"])
    assert [c.get("member_id") for c in left["causes"]] == [ids["w-b"]], left["causes"]
    assert left["causes"][0]["cause"] == "member_left", left["causes"]  # it committed until it closed
    assert (left["tasks_moved_between_processes"], left["tasks_moved_within_process"]) == (
        sk.held_before(gens, left, ids["w-b"]), 0), left
    assert [c.get("member_id") for c in gens[-1]["causes"]] == [ids["w-c"]], gens[-1]["causes"]

    # the coordinator's log: why each went, naming its client and process
    records = sk.log_replay(streams_broker, GROUP)
    timeouts = [r for r in records if r["kind"] == "member_timeout"]
    assert [(r["member_id"], r["timeout"], r.get("client_id")) for r in timeouts] == \
        [(ids["w-a"], "session", "w-a-StreamThread-1-consumer")], timeouts
    removed = {c["member_id"]: (c["cause"], c.get("client_id")) for g in records if g["kind"] == "generation"
               for c in g["causes"] if c["cause"] in ("session_timeout", "member_left")}
    assert {mid: removed.get(mid) for mid in (ids["w-a"], ids["w-b"])} == {
        ids["w-a"]: ("session_timeout", "w-a-StreamThread-1-consumer"),
        ids["w-b"]: ("member_left", "w-b-StreamThread-1-consumer")}, removed
    # the last, w-c: the group's last removal is its leave (the empty group has no generation to judge)
    removals = [e for line in streams_broker.coordinator_log.read_text(errors="replace").splitlines()
                if f"[GroupId {GROUP}]" in line for e in decode_log_record(line).events if e["type"] == "member_removed"]
    assert [(e["member_id"], e["cause"]) for e in removals] == [
        (ids["w-a"], "session_timeout"), (ids["w-b"], "member_left"), (ids["w-c"], "member_left")], removals
    log_gens = {g["generation"]: g for g in records if g["kind"] == "generation"}
    for key in ("two", "three", "fenced", "alone"):
        g = log_gens[steps[key][1][2]]
        assert {mid: t["process_id"] for mid, t in g["tasks"].items()} == \
            {mid: m["process_id"] for mid, m in steps[key][0].items()}, (key, g)
        assert _active(g) == sk.active_tasks_of(steps[key][0]), (key, g)
    assert len(set(process.values())) == len(CLIENTS)  # each instance a process of its own
    # the timed-out member's process: the one the broker described it with, in the core's last epoch of it
    last_of_a = max((g for g in log_gens.values() if ids["w-a"] in g["members"]), key=lambda g: g["generation"])
    assert last_of_a["tasks"][ids["w-a"]]["process_id"] == process[ids["w-a"]], last_of_a
