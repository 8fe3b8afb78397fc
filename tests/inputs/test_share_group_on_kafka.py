"""A share group (KIP-932) on a real Apache Kafka 4.4 broker, from `__consumer_offsets` alone: two members of
Kafka's own console share consumer (`kafka-console-share-consumer`, ConsoleShareConsumer) join, one is killed
with `kill -9` and removed by the coordinator after its session (`group.share.session.timeout.ms`, 6 s on this
test's broker of its own), the other stops gracefully. The project's decoder reads every ShareGroup* record the
broker wrote, and the core's generations are held against what the broker's own share group tool
(`kafka-share-groups --describe`, ShareGroupCommand) said at each step: the group epochs, the members' ids, client
ids and partitions; each epoch is recomputed with Kafka's SimpleAssignor (core/assignors/share_simple.py) and agrees
with what the broker assigned. The same group is then reconstructed from
the broker's coordinator log alone (its INFO lines of the share group: a member joining, the epoch's bump and
target assignment, each member's new assignment, the fence on session expiry, the leave) and held against
`__consumer_offsets`."""
from __future__ import annotations

import re
import subprocess
import time

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import kill_hard, stop_gracefully
from helpers.replay import decode_offsets_topic, group_records
from helpers.share_broker import SESSION_MS, share_broker as started_share_broker

from rebalance_monitor.broker_facts.describe import describe_groups
from rebalance_monitor.broker_facts.poller import described_event
from rebalance_monitor.config import load_config
from rebalance_monitor.core.events import parse_event
from rebalance_monitor.decoding.reference import decode_record
from rebalance_monitor.inputs.coordinator_log import decode_log_record
from rebalance_monitor.inputs.offsets_topic import OffsetsTopicDecoder
from rebalance_monitor.testing.kafka_install import classpath, java_binary
from rebalance_monitor.testing.witnesses import read_topic

pytestmark = pytest.mark.integration

TOPIC, GROUP = "share-orders", "share-group-1"


@pytest.fixture(scope="module")
def share_broker():
    with started_share_broker({TOPIC: 2}) as b:
        yield b


def _java(*args: str) -> list[str]:
    return [java_binary(), "-Xmx256m", "-cp", classpath(), *args]


def _member(bootstrap: str, client_id: str, log_path) -> subprocess.Popen:
    cmd = _java("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap,
                "--topic", TOPIC, "--group", GROUP, "--command-property", f"client.id={client_id}")
    return subprocess.Popen(cmd, stdout=open(log_path, "w"), stderr=subprocess.STDOUT, start_new_session=True)


def _describe(bootstrap: str, what: str) -> list[list[str]]:
    """ShareGroupCommand's table (`--members` or `--state`, verbose) as rows of cells, the header left out."""
    done = subprocess.run(_java("org.apache.kafka.tools.consumer.group.ShareGroupCommand", "--bootstrap-server",
                                bootstrap, "--describe", "--group", GROUP, what, "--verbose"),
                          capture_output=True, text=True, timeout=120)
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith(GROUP + " ")]
    return rows


def _members(bootstrap: str) -> dict:
    """member id -> (client id, member epoch, partitions) as the broker describes them."""
    out = {}
    for row in _describe(bootstrap, "--members"):
        parts = set()
        if len(row) > 6:
            for chunk in re.findall(r"([^,:]+):([\d,]+)", row[6]):
                parts.update((chunk[0], int(p)) for p in chunk[1].split(","))
        out[row[1]] = (row[3], int(row[5]), parts)
    return out


def _state(bootstrap: str) -> tuple[str, int, int, int]:
    """(state, group epoch, assignment epoch, members) as the broker describes the group."""
    row = _describe(bootstrap, "--state")[0]
    return row[-4], int(row[-3]), int(row[-2]), int(row[-1])


def _replay(bootstrap: str) -> list[dict]:
    """The core's records of the group from `__consumer_offsets` (replay, no Spark), topic ids named from the
    topic's own records as the job's decoder names them."""
    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10})
    topic_names: dict = {}
    events = []
    for key, value, ts in read_topic(bootstrap, "__consumer_offsets"):
        evs, _rejects = decode_record("offsets-topic", value, key=key, ts_ms=ts, topic_names=topic_names)
        events.extend(e for e in evs if e.group in (GROUP, ""))
    return group_records(events, cfg, GROUP)


@pytest.fixture(scope="module")
def share_run(share_broker, tmp_path_factory):
    """The scenario, once for the module's tests: what the broker's share group tool said at each step."""
    tmp_path = tmp_path_factory.mktemp("share-members")
    bootstrap = share_broker.bootstrap
    procs = []
    try:
        a = _member(bootstrap, "share-a", tmp_path / "a.log")
        procs.append(a)
        # the first member alone until the topic's partitions are initialised for the group and handed to it: that
        # epoch's bump is the coordinator's own (no member's coming or going), which the test holds below; a second
        # member joining before it would share its rebalance (seen once, in a base-install run)
        eventually(lambda: (m := _members(bootstrap)) and len(m) == 1 and all(v[2] for v in m.values()), 90,
                   lambda: f"the first share member holding the initialised partitions: {_members(bootstrap)}")
        b = _member(bootstrap, "share-b", tmp_path / "b.log")
        procs.append(b)

        def both_stable():  # both members hold their partitions of the group's epoch
            members, state = _members(bootstrap), _state(bootstrap)
            ok = len(members) == 2 and state[0] == "Stable" and state[1] == state[2] \
                and all(m[1] == state[1] and m[2] for m in members.values())
            return (members, state) if ok else None

        both, state_both = eventually(both_stable, 90, lambda: f"two stable members: {_members(bootstrap)}")
        described_both = _described(bootstrap)   # the monitor's own ShareGroupDescribe, at the same moment
        described_ts = int(time.time() * 1000)
        ids = {client: mid for mid, (client, _e, _p) in both.items()}
        # the simple assignor gives each of the two members one of the two partitions; together, all of them
        assert set().union(*(p for _c, _e, p in both.values())) == {(TOPIC, 0), (TOPIC, 1)}

        killed_at_ms = int(time.time() * 1000)
        kill_hard(a)

        def b_alone():  # share-a removed, and share-b at the group's new epoch (its partitions of that epoch)
            members, state = _members(bootstrap), _state(bootstrap)
            ok = list(members) == [ids["share-b"]] and state[0] == "Stable" and state[1] == state[2] \
                and members[ids["share-b"]][1] == state[1]
            return (members, state) if ok else None

        alone, state_alone = eventually(b_alone, 60, lambda: f"share-a removed: {_members(bootstrap)}")
        stop_gracefully(b)
        final = eventually(lambda: (s := _state(bootstrap))[0] == "Empty" and s, 60, "the group empty")
    finally:
        for p in procs:
            if p.poll() is None:
                kill_hard(p)

    return {"both": both, "state_both": state_both, "ids": ids, "killed_at_ms": killed_at_ms, "alone": alone,
            "state_alone": state_alone, "final": final, "described_both": described_both,
            "described_ts": described_ts}


def _described(bootstrap: str):
    """The group as the monitor's broker poller asks it (describe_groups: ListGroups v5 names it a share group,
    ShareGroupDescribe v1 describes it), through kafka-python's admin client (the base install's)."""
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="rm-test-share-describe",
                              request_timeout_ms=15000)
    try:
        return describe_groups(client, [GROUP])[GROUP]
    finally:
        client.close()


def test_the_monitors_share_group_describe_agrees_with_the_brokers_tool_and_the_reconstruction(share_broker,
                                                                                                share_run):
    """ShareGroupDescribe (API 77), asked by the project's own encoding: the group's epochs, assignor, members,
    client ids and partitions as Kafka's share group tool printed them at the same moment; and, read beside
    `__consumer_offsets` as the broker poller publishes it, the core holds it against its reconstruction at the
    same group epoch and finds them agreeing."""
    desc, both, state_both = share_run["described_both"], share_run["both"], share_run["state_both"]
    assert (desc.error, desc.api, desc.api_version, desc.group_type) == (None, "ShareGroupDescribe", 1, "share")
    assert (desc.state, desc.group_epoch, desc.assignment_epoch, desc.protocol) == \
        (state_both[0], state_both[1], state_both[2], "simple"), desc
    assert {m.member_id: (m.client_id, m.member_epoch, set(m.assignment)) for m in desc.members} == both
    assert all(m.subscribed_topics == (TOPIC,) and m.target_assignment is None for m in desc.members), desc.members
    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10})
    events = [parse_event(described_event(desc, share_run["described_ts"]))]
    topic_names: dict = {}   # filled from the topic's own records, as the job's decoder names topic ids
    for key, value, ts in read_topic(share_broker.bootstrap, "__consumer_offsets"):
        evs, _rejects = decode_record("offsets-topic", value, key=key, ts_ms=ts, topic_names=topic_names)
        events.extend(e for e in evs if e.group in (GROUP, ""))
    views = [r for r in group_records(events, cfg, GROUP) if r["kind"] == "broker_view"]
    assert [(v["agrees"], v["differences"], v["broker_epoch"], v["monitor_epoch"], v["group_type"]) for v in views] \
        == [(True, [], state_both[1], state_both[1], "share")], views


def test_a_share_groups_rebalances_from_consumer_offsets_match_the_broker(share_broker, share_run):
    bootstrap = share_broker.bootstrap
    both, state_both, ids, killed_at_ms, alone, state_alone, final = (share_run[k] for k in (
        "both", "state_both", "ids", "killed_at_ms", "alone", "state_alone", "final"))
    # every record the coordinator wrote of the group decodes, none rejected
    kinds_seen, decoder = decode_offsets_topic(bootstrap)
    assert {"ShareGroupMetadata v0", "ShareGroupMemberMetadata v0", "ShareGroupTargetAssignmentMetadata v0",
            "ShareGroupTargetAssignmentMember v0", "ShareGroupCurrentMemberAssignment v0",
            "ShareGroupStatePartitionMetadata v0", "ShareGroupMemberMetadata tombstone"} <= kinds_seen, kinds_seen
    assert decoder.topic_names and set(decoder.topic_names.values()) == {TOPIC}

    records = _replay(bootstrap)
    gens = [r for r in records if r["kind"] == "generation"]
    by_epoch = {g["generation"]: g for g in gens}
    # one generation per group epoch the broker went through, the last its final epoch, with no member
    assert gens[-1]["generation"] == final[1] == final[2] and gens[-1]["members"] == [], gens[-1]
    assert sorted(by_epoch) == [g["generation"] for g in gens] and len(by_epoch) == len(gens)
    for g in gens[:-1]:  # (the last, empty, has nothing to assign: the core's rule for an empty group)
        # the simple assignor recomputed: what the broker assigned, partition for partition (topic ids from the
        # members' records, the broker's tie-breaks); no partition "moved" between members that share them
        assert (g["protocol"], g["expected_assignment"], g["mismatched_partitions"], g["expected_reason"],
                g["expected_assignor_release"], g["partitions_moved"]) == \
            ("simple", g["assignment"], 0, None, "4.4.0", None), g
    # the epoch before the topic's partitions were initialised for the group: nothing to hand out yet
    assert gens[0]["assignment"] == {ids["share-a"]: []} and gens[0]["expected_assignment"] == gens[0]["assignment"]
    # the epoch where both were in: the broker's members, client ids and partitions (one each, as the simple
    # assignor splits two partitions between two members: the expected assignment, which agrees)
    two = by_epoch[state_both[1]]
    assert sorted(two["members"]) == sorted(both), two
    assert sorted(len(tps) for tps in two["expected_assignment"].values()) == [1, 1], two
    assert {mid: {tuple(tp) for tp in tps} for mid, tps in two["assignment"].items()} == \
        {mid: parts for mid, (_c, _e, parts) in both.items()}
    joined = {c["member_id"]: c.get("client_id") for g in gens for c in g["causes"] if c["cause"] == "member_joined"}
    assert joined == {ids["share-a"]: "share-a", ids["share-b"]: "share-b"}, joined
    # an epoch without a member's coming or going: the topic's partitions initialised for the group
    assert any(c.get("reason", "").startswith("share group epoch bumped to") and "member_id" not in c
               for g in gens for c in g["causes"]), [g["causes"] for g in gens]
    # share-a's removal: the first epoch without it, after its session ran out
    gone = next(g for g in gens if g["generation"] > state_both[1] and ids["share-a"] not in g["members"])
    assert gone["members"] == [ids["share-b"]] and gone["generation"] <= state_alone[1], gone
    assert {tuple(tp) for tp in by_epoch[state_alone[1]]["assignment"][ids["share-b"]]} == alone[ids["share-b"]][2]
    assert [c.get("member_id") for c in gone["causes"]] == [ids["share-a"]], gone["causes"]
    assert SESSION_MS - 1500 <= gone["started_ms"] - killed_at_ms <= SESSION_MS + 15000, \
        (gone["started_ms"] - killed_at_ms)
    # share-b's graceful stop: the last epoch, b named as its cause
    assert [c.get("member_id") for c in gens[-1]["causes"]] == [ids["share-b"]], gens[-1]["causes"]


def _log_replay(broker) -> tuple[list[dict], list[dict]]:
    """(the group's decoded events, the core's records of the group) from the broker's coordinator log alone."""
    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10})
    events, group_lines = [], []
    for line in broker.coordinator_log.read_text(errors="replace").splitlines():
        d = decode_log_record(line)
        assert d.rejected_reason is None, (d.rejected_reason, d.detail, line)
        if f"[GroupId {GROUP}]" in line:
            assert d.events or d.record_type, line  # every line of the group read: events, or a counted kind
            group_lines.extend({k: v for k, v in e.items() if k != "v"} for e in d.events)
        parsed, rejects = decode_record("coordinator-log", line)
        assert not rejects, rejects
        events.extend(e for e in parsed if e.group in (GROUP, ""))
    return group_lines, group_records(events, cfg, GROUP)


def test_a_share_groups_rebalances_from_the_coordinator_log_alone_match_consumer_offsets(share_broker, share_run):
    """The same group from the coordinator's INFO lines only: each group epoch the coordinator logged, its members
    and partitions, as `__consumer_offsets` and the share group tool give them; the killed member fenced on its
    session's expiry, the stopped one leaving. The log prints no epoch for the last member's leave (a share
    group's leave bumps the epoch without a line): its last generation is the one before."""
    ids, state_both, state_alone = share_run["ids"], share_run["state_both"], share_run["state_alone"]
    names = OffsetsTopicDecoder()
    for key, value, ts in read_topic(share_broker.bootstrap, "__consumer_offsets"):
        names.decode(key, value, ts)
    lines, records = _log_replay(share_broker)
    joins = [e for e in lines if e["type"] == "join"]
    assert {e["member_id"] for e in joins} == set(ids.values()) and \
        all((e["group_protocol"], e["protocols"]) == ("share", ["simple"]) for e in joins), joins
    gens = [r for r in records if r["kind"] == "generation"]
    from_offsets = [g for g in _replay(share_broker.bootstrap) if g["kind"] == "generation"]
    # every epoch up to share-b's last one alone: the same generations, members, causes' members and partitions
    assert [g["generation"] for g in gens] == [g["generation"] for g in from_offsets[:-1]], \
        ([g["generation"] for g in gens], [g["generation"] for g in from_offsets])
    assert gens[-1]["generation"] == state_alone[1]
    for log_gen, off_gen in zip(gens, from_offsets):
        assert sorted(log_gen["members"]) == sorted(off_gen["members"]), (log_gen, off_gen)
        # the log names no member's subscribed topics: its epochs are not recomputed
        assert (log_gen["protocol"], log_gen["expected_assignment"], log_gen["expected_reason"]) == \
            ("simple", None, f"subscription unknown for {len(log_gen['members'])} member(s)"), log_gen
        assert [c.get("member_id") for c in log_gen["causes"]] == [c.get("member_id") for c in off_gen["causes"]]
        named = {mid: sorted((names.topic_names.get(t, t), p) for t, p in tps)
                 for mid, tps in (log_gen["assignment"] or {}).items()}
        assert named == {mid: sorted(map(tuple, tps)) for mid, tps in off_gen["assignment"].items()}, \
            (log_gen, off_gen)
    two = next(g for g in gens if g["generation"] == state_both[1])
    assert {mid: {(names.topic_names[t], p) for t, p in tps} for mid, tps in two["assignment"].items()} == \
        {mid: parts for mid, (_c, _e, parts) in share_run["both"].items()}
    gone = gens[-1]
    assert gone["members"] == [ids["share-b"]], gone
    assert [(c["cause"], c.get("member_id")) for c in gone["causes"]] == [("session_timeout", ids["share-a"])]
    assert SESSION_MS - 1500 <= gone["started_ms"] - share_run["killed_at_ms"] <= SESSION_MS + 15000
    timeouts = [r for r in records if r["kind"] == "member_timeout"]
    assert [r["member_id"] for r in timeouts] == [ids["share-a"]], timeouts
    # share-b's graceful stop: the group's last line, a leave
    assert (lines[-1]["type"], lines[-1]["member_id"], lines[-1]["cause"]) == \
        ("member_removed", ids["share-b"], "member_left"), lines[-1]
