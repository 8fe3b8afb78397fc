"""A streams group (KIP-1071) on a real Apache Kafka 4.4 broker, from the broker's coordinator log alone: three
instances of the project's Kafka Streams test application on `group.protocol=streams` (its stateful topology,
a count per key in a state store; one StreamThread each, so one member each) join one after another (the scale-out), one is killed with `kill -9` and fenced by the
coordinator when its session (`group.streams.session.timeout.ms`, 6 s on this test's broker of its own) expires,
the group's `streams.num.standby.replicas` is changed to 1 with `kafka-configs --entity-type groups` (the epoch
bumped on the assignment configurations' change: each task gets a standby on the other instance), one instance closes gracefully (the scale-in: it leaves), then
the last. Every line the coordinator logged of the group is decoded (events, or a counted kind; none rejected),
and the core's generations, members, causes and tasks are held against what Kafka's streams group tool
(`kafka-streams-groups --describe`, StreamsGroupCommand) said at each step."""
from __future__ import annotations

import time

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import kill_hard, stop_gracefully
from helpers.replay import group_records
from helpers import streams_group_kafka as streams_kafka
from helpers.streams_group_kafka import SESSION_MS, members, set_group_config, start_instance, state

from rebalance_monitor.config import load_config
from rebalance_monitor.decoding.reference import decode_record
from rebalance_monitor.inputs.coordinator_log import decode_log_record

pytestmark = pytest.mark.integration

APP, TOPICS, PARTITIONS = "streams-app-1", ("streams-in", "streams-out"), 4
ALL_TASKS = {("0", p) for p in range(PARTITIONS)}


@pytest.fixture(scope="module")
def streams_broker():
    """A broker of its own: the shared one keeps Kafka's 45 s streams session."""
    yield from streams_kafka.module_broker(TOPICS, PARTITIONS)


def _settled(bootstrap: str, clients: list[str]):
    """The members of `clients` (client ids of their one StreamThread), and no other, each at the group's target
    assignment epoch, their active tasks all of the group's: (members, (state, group epoch, target epoch, members))
    once so, else None."""
    described, st = members(bootstrap, APP), state(bootstrap, APP)
    names = sorted(m["client_id"] for m in described.values())
    ok = st is not None and names == sorted(f"{c}-StreamThread-1-consumer" for c in clients) \
        and st[0] == "Stable" and all(m["epoch"] == st[2] for m in described.values()) \
        and set().union(*(m["tasks"].get("active", set()) for m in described.values())) == ALL_TASKS
    return (described, st) if ok else None


@pytest.fixture(scope="module")
def streams_run(streams_broker, tmp_path_factory):
    """The scenario, once for the module's tests: what the broker's streams group tool said at each step."""
    work = tmp_path_factory.mktemp("streams-instances")
    bootstrap = streams_broker.bootstrap
    procs = {}
    steps = {}

    def settle(clients, what, timeout_s=120):
        return eventually(lambda: _settled(bootstrap, clients), timeout_s,
                          lambda: f"{what}: {members(bootstrap, APP)} {state(bootstrap, APP)}")

    try:
        procs["s-a"] = start_instance(bootstrap, APP, "s-a", TOPICS, work, topology="count")
        steps["one"] = settle(["s-a"], "s-a alone")
        procs["s-b"] = start_instance(bootstrap, APP, "s-b", TOPICS, work, topology="count")
        steps["both"] = settle(["s-a", "s-b"], "s-b in")
        procs["s-c"] = start_instance(bootstrap, APP, "s-c", TOPICS, work, topology="count")
        steps["three"] = settle(["s-a", "s-b", "s-c"], "three members")
        steps["killed_at_ms"] = int(time.time() * 1000)
        kill_hard(procs["s-c"])
        steps["two"] = settle(["s-a", "s-b"], "s-c fenced")
        before = steps["two"][1][1]
        set_group_config(bootstrap, APP, "streams.num.standby.replicas", "1")
        steps["configured"] = eventually(
            lambda: (s := _settled(bootstrap, ["s-a", "s-b"])) and s[1][1] > before and s, 60,
            "the epoch bumped on the standby replicas' change")
        stop_gracefully(procs["s-b"])
        steps["alone"] = settle(["s-a"], "s-b left")
        stop_gracefully(procs["s-a"])
        steps["final"] = eventually(lambda: (s := state(bootstrap, APP)) and s[0] == "Empty" and s, 60,
                                    "the group empty")
    finally:
        streams_kafka.end_scenario(procs, streams_broker, work)
    return steps


def _log(broker) -> tuple[list[str], list[dict], list[dict]]:
    """(the group's lines, their decoded events, the core's records of the group) from the coordinator log alone."""
    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10})
    lines, decoded, events = [], [], []
    for line in broker.coordinator_log.read_text(errors="replace").splitlines():
        d = decode_log_record(line)
        assert d.rejected_reason is None, (d.rejected_reason, d.detail, line)
        if f"[GroupId {APP}]" in line:
            assert d.events or d.record_type, line  # every line of the group read: events, or a counted kind
            lines.append(line)
            decoded.extend({k: v for k, v in e.items() if k != "v"} for e in d.events)
        parsed, rejects = decode_record("coordinator-log", line)
        assert not rejects, rejects
        events.extend(e for e in parsed if e.group in (APP, ""))
    return lines, decoded, group_records(events, cfg, APP)


def _ids(steps) -> dict[str, str]:
    """client id (its instance's) -> member id, from the broker's descriptions."""
    return {m["client_id"].split("-StreamThread-")[0]: mid for key in ("one", "three")
            for mid, m in steps[key][0].items()}


def test_a_streams_groups_rebalances_from_the_coordinator_log_alone_match_the_broker(streams_broker, streams_run):
    steps = streams_run
    ids = _ids(steps)
    client = {mid: f"{c}-StreamThread-1-consumer" for c, mid in ids.items()}
    lines, decoded, records = _log(streams_broker)
    kinds = {decode_log_record(line).record_type for line in lines}
    assert {"log:member_joined", "log:member_metadata", "log:topology_initialized", "log:epoch_bumped",
            "log:target_assignment", "log:streams_member_assignment", "log:member_fenced", "log:member_left",
            "log:assignment_configs_changed"} <= kinds, kinds

    # the joins: each member a streams member, its metadata naming its client, host and process
    joins = [e for e in decoded if e["type"] == "join"]
    assert {e["member_id"] for e in joins} == set(ids.values())
    assert all((e["group_protocol"], e["protocols"]) == ("streams", ["sticky"]) for e in joins), joins
    described = {**steps["one"][0], **steps["three"][0]}
    told = {e["member_id"]: (e["client_id"], e["host"], e["process_id"]) for e in joins if "client_id" in e}
    assert told == {mid: (m["client_id"], "127.0.0.1", m["process_id"]) for mid, m in described.items()}, told

    gens = [r for r in records if r["kind"] == "generation"]
    by_epoch = {g["generation"]: g for g in gens}
    assert [g["generation"] for g in gens] == sorted(by_epoch), [g["generation"] for g in gens]
    for g in gens:  # judged by the sticky task assignor, never a consumer assignor (the log gives no topology:
        # the tasks held stand in for it); a generation not judged says why
        assert (g["protocol"], g["expected_assignment"], g.get("group_type")) == ("sticky", None, "streams"), g
        assert g["mismatched_tasks"] == 0 or (g["mismatched_tasks"] is None and g["expected_reason"]), g
    # each step the broker described: the log's generation of that epoch, its members and their active tasks
    for key in ("one", "both", "three", "two", "configured", "alone"):
        described_then, state_then = steps[key]
        g = by_epoch[state_then[2]]
        assert sorted(g["members"]) == sorted(described_then), (key, g)
        for kind in ("active", "standby", "warmup"):
            assert {mid: {tuple(t) for t in g["tasks"][mid][kind]} for mid in g["members"]} == \
                {mid: m["tasks"].get(kind, set()) for mid, m in described_then.items()}, (key, kind, g)

    def causes(g):
        return [(c["cause"], c.get("member_id"), c.get("client_id")) for c in g["causes"]]

    a, b, c = ids["s-a"], ids["s-b"], ids["s-c"]
    # the group's first epoch: s-a joined and initialised the topology (the next, before s-b, is the changelog
    # topic's creation: the log says only that the metadata hash changed)
    assert gens[0]["members"] == [a] and causes(gens[0]) == [("member_joined", a, client[a]),
                                                             ("topology_change", a, client[a])], causes(gens[0])
    joined = {m: cl for g in gens for x, m, cl in causes(g) if x == "member_joined"}
    assert joined == {a: client[a], b: client[b], c: client[c]}, joined
    for key, who in (("both", b), ("three", c)):  # each scale-out step: the epoch the newcomer joined at
        joined_at = next(g for g in gens if who in g["members"])
        assert causes(joined_at) == [("member_joined", who, client[who])], causes(joined_at)
        assert joined_at["generation"] <= steps[key][1][2]
    # s-c's removal: the first epoch without it, its session run out, naming it and its client
    gone = next(g for g in gens if g["generation"] > steps["three"][1][2] and c not in g["members"])
    assert causes(gone) == [("session_timeout", c, client[c])] and gone["causes"][0]["host"] == "127.0.0.1", gone
    assert SESSION_MS - 1500 <= gone["started_ms"] - steps["killed_at_ms"] <= SESSION_MS + 15000
    assert [r["member_id"] for r in records if r["kind"] == "member_timeout"] == [c]
    # the standby replicas' change: an epoch of its own, the operator's (no member's) doing
    configured = by_epoch[steps["configured"][1][2]]
    assert [x for x, _m, _c in causes(configured)] == ["assignment_config_change"], causes(configured)
    assert "num.standby.replicas=1" in configured["causes"][0]["reason"]
    # from that epoch on, each task a standby on the instance that does not run it
    for mid, tasks in configured["tasks"].items():
        assert tasks["standby"] and not set(map(tuple, tasks["standby"])) & set(map(tuple, tasks["active"])), tasks
    assert set().union(*(set(map(tuple, t["standby"])) for t in configured["tasks"].values())) == ALL_TASKS
    # s-b's graceful close: a leave naming it
    left = by_epoch[steps["alone"][1][2]]
    assert causes(left) == [("member_left", b, client[b])], causes(left)
    # s-a's close, the last: the group's last line is its leave
    last = [e for e in decoded if e["type"] == "member_removed"][-1]
    assert (last["member_id"], last["cause"]) == (a, "member_left"), last
