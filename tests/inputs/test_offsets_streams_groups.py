"""Streams groups (KIP-1071) from `__consumer_offsets`: every StreamsGroup* record Apache Kafka 4.4 writes (4.1's
layouts, which lack only tagged fields, and the pre-4.1 partition metadata) decoded into the events a KIP-848
group's records give, with the members' processes and tasks; tombstones; malformed values rejected with the
field's name; and a streams group's generations through the core: its members take the streams family's session,
and no consumer assignor judges them (the expected assignment is unknown, with the reason)."""
from __future__ import annotations

import json

import pytest

import helpers.offsets_encoder as enc
import helpers.streams_encoder as senc
from helpers.events import ev, kinds, run, stable_group

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.settings import CoreSettings
from rebalance_monitor.inputs.offsets_topic import OffsetsTopicDecoder, decode_offsets_record

TS = 1_700_000_000_000
T1 = "0b6f1c2e-8c1a-4d3e-9f00-112233445566"
K = enc.group_key


def only_event(d):
    assert d.rejected_reason is None, (d.rejected_reason, d.detail)
    assert len(d.events) == 1, d.events
    event = d.events[0]
    assert not isinstance(parse_event(event), Rejected), event  # every event is one the core takes
    return event


def counted_only(d, record_type):
    assert d.rejected_reason is None, (d.rejected_reason, d.detail)
    assert d.record_type == record_type and d.events == []


# --- each record type --------------------------------------------------------------------------------
@pytest.mark.parametrize("kafka41", [False, True], ids=["4.4", "4.1"])
def test_streams_group_metadata_gives_the_epoch_bump(kafka41):
    value = senc.metadata_value(7, metadata_hash=-5, validated_topology_epoch=2,
                                configs=[("num.standby.replicas", "1")], kafka41=kafka41)
    d = decode_offsets_record(K(17, "app"), value, TS)
    assert d.record_type == "StreamsGroupMetadata v0"
    bump = {"v": 1, "type": "rebalance_started", "ts": TS, "group": "app", "generation": 6,
            "reason": "streams group epoch bumped to 7", "metadata_hash": -5}
    if kafka41:  # (4.1 wrote no LastAssignmentConfigs, nor the validated topology epoch)
        assert only_event(d) == bump
    else:  # 4.4's: the num.standby.replicas the coordinator's last assignment used
        bump["topology_epoch"] = 2
        assert d.events == [{"v": 1, "type": "streams_topology", "ts": TS, "group": "app",
                             "num_standby_replicas": 1}, bump]
        assert not isinstance(parse_event(d.events[0]), Rejected)
    d = decode_offsets_record(K(17, "app"), None, TS)
    assert d.record_type == "StreamsGroupMetadata tombstone" and only_event(d)["type"] == "group_deleted"


def test_streams_member_metadata_is_a_join_with_its_process_and_tags():
    value = senc.member_metadata_value("app-StreamThread-1-consumer", "/127.0.0.1", "p-1", instance_id="i-1",
                                       rack_id="r1", rebalance_timeout_ms=20000, topology_epoch=3,
                                       endpoint=("localhost", 65535), client_tags=[("zone", "a"), ("az", "1")])
    d = decode_offsets_record(K(19, "app", "m-1"), value, TS)
    assert d.record_type == "StreamsGroupMemberMetadata v0"
    assert only_event(d) == {
        "v": 1, "type": "join", "ts": TS, "group": "app", "member_id": "m-1", "group_instance_id": "i-1",
        "client_id": "app-StreamThread-1-consumer", "host": "127.0.0.1", "protocols": ["sticky"], "topics": [],
        "rebalance_timeout_ms": 20000, "group_protocol": "streams", "process_id": "p-1", "topology_epoch": 3,
        "client_tags": {"zone": "a", "az": "1"}, "rack": "r1"}
    ev_ = only_event(decode_offsets_record(K(19, "app", "m-2"), senc.member_metadata_value("c", "h", "p-2"), TS))
    assert ev_["group_instance_id"] is None and "rack" not in ev_ and ev_["client_tags"] == {}
    d = decode_offsets_record(K(19, "app", "m-1"), None, TS)
    assert d.record_type == "StreamsGroupMemberMetadata tombstone"
    assert only_event(d) == {"v": 1, "type": "member_removed", "ts": TS, "group": "app", "member_id": "m-1",
                             "cause": "unknown", "reason": "member metadata deleted (streams group protocol)"}


@pytest.mark.parametrize("assignment_ts", [None, TS - 5])
def test_streams_target_assignment_metadata_completes_the_generation(assignment_ts):
    d = decode_offsets_record(K(20, "app"), senc.target_metadata_value(9, assignment_ts), TS)
    assert d.record_type == "StreamsGroupTargetAssignmentMetadata v0"
    assert only_event(d) == {"v": 1, "type": "generation_completed", "ts": TS, "group": "app", "generation": 9,
                             "protocol": "sticky", "leader": None, "protocol_type": "streams"}
    d = decode_offsets_record(K(20, "app"), None, TS)
    assert d.record_type == "StreamsGroupTargetAssignmentMetadata tombstone" and d.events == []


def test_streams_target_assignment_member_is_decoded_and_counted():
    value = senc.target_member_value([("0", [0, 1]), ("1", [2])], standby=[("0", [2])])
    counted_only(decode_offsets_record(K(21, "app", "m-1"), value, TS), "StreamsGroupTargetAssignmentMember v0")
    d = decode_offsets_record(K(21, "app", "m-1"), value[:-5], TS)
    assert d.rejected_reason.startswith("truncated:StreamsGroupTargetAssignmentMemberValue."), d.rejected_reason
    counted_only(decode_offsets_record(K(21, "app", "m-1"), None, TS), "StreamsGroupTargetAssignmentMember tombstone")


@pytest.mark.parametrize("kafka41", [False, True], ids=["4.4", "4.1"])
def test_streams_current_assignment_is_a_sync_with_the_members_tasks(kafka41):
    value = senc.current_assignment_value(
        4, 3, 1, [("0", [0, 1]), ("1", [0])], standby=[("0", [2])], warmup=[("1", [1])],
        pending=([("0", [3])], (), ()), epochs=None if kafka41 else {"0": [2, 4], "1": [4]})
    d = decode_offsets_record(K(22, "app", "m-1"), value, TS)
    assert d.record_type == "StreamsGroupCurrentMemberAssignment v0"
    assert only_event(d) == {
        "v": 1, "type": "sync", "ts": TS, "group": "app", "member_id": "m-1", "generation": 4, "protocol": "sticky",
        "leader": None, "assignment": [], "member_state": "stable", "active_tasks": [["0", 0], ["0", 1], ["1", 0]],
        "standby_tasks": [["0", 2]], "warmup_tasks": [["1", 1]]}
    states = [only_event(decode_offsets_record(K(22, "app", "m-1"), senc.current_assignment_value(5, 4, code, []),
                                               TS))["member_state"] for code in (2, 3, 127, 0)]
    assert states == ["unrevoked_tasks", "unreleased_tasks", "unknown", "unknown"]
    counted_only(decode_offsets_record(K(22, "app", "m-1"), None, TS), "StreamsGroupCurrentMemberAssignment tombstone")


def test_streams_topology_gives_the_subtopologies():
    value = senc.topology_value(2, [
        {"id": "0", "sources": ["words"], "changelogs": ["app-store-changelog"],
         "repartition_sinks": ["app-repartition"], "copartition": [[0]]},
        {"id": "1", "repartition_sources": [("app-repartition", 3)]}])
    d = decode_offsets_record(K(23, "app"), value, TS)
    assert d.record_type == "StreamsGroupTopology v0"
    assert only_event(d) == {"v": 1, "type": "streams_topology", "ts": TS, "group": "app", "topology_epoch": 2,
                             "subtopologies": [
        {"subtopology_id": "0", "source_topics": ["words"], "repartition_source_topics": {},
         "state_changelog_topics": ["app-store-changelog"], "source_topic_regex": []},
        {"subtopology_id": "1", "source_topics": [], "repartition_source_topics": {"app-repartition": 3},
         "state_changelog_topics": [], "source_topic_regex": []}]}
    counted_only(decode_offsets_record(K(23, "app"), None, TS), "StreamsGroupTopology tombstone")
    d = decode_offsets_record(K(23, "app"), value[:-9], TS)
    assert d.rejected_reason.startswith("truncated:StreamsGroupTopologyValue.subtopologies[1]"), d.rejected_reason


def test_pre_release_partition_metadata_names_topics():
    dec = OffsetsTopicDecoder()
    value = enc.cg_partition_metadata_value([(T1, "words", 3)])  # the consumer group's layout
    counted_only(dec.decode(K(18, "app"), value, TS), "StreamsGroupPartitionMetadata v0")
    assert dec.topic_names == {T1: "words"}
    d = dec.decode(K(18, "app"), value[:-3], TS)
    assert d.rejected_reason.startswith("truncated:StreamsGroupPartitionMetadataValue.topics[0]"), d.rejected_reason


def test_a_newer_value_version_is_read_with_the_known_layout():
    value = bytearray(senc.current_assignment_value(3, 2, 1, [("0", [1])]))
    value[1] = 1  # version 1: only tagged fields may have been added
    d = decode_offsets_record(K(22, "app", "m"), bytes(value), TS)
    assert d.record_type == "StreamsGroupCurrentMemberAssignment v1" and only_event(d)["active_tasks"] == [["0", 1]]


# --- malformed values --------------------------------------------------------------------------------
@pytest.mark.parametrize("key_version,member,value,prefix", [
    (17, None, senc.metadata_value(3, 1, 2, [("k", "v")]), "StreamsGroupMetadataValue"),
    (19, "m", senc.member_metadata_value("c", "/h", "p", instance_id="i", rack_id="r", endpoint=("h", 80),
                                         client_tags=[("k", "v")]), "StreamsGroupMemberMetadataValue"),
    (20, None, senc.target_metadata_value(3, TS), "StreamsGroupTargetAssignmentMetadataValue"),
    (21, "m", senc.target_member_value([("0", [0])], [("1", [1])], [("2", [2])]),
     "StreamsGroupTargetAssignmentMemberValue"),
    (22, "m", senc.current_assignment_value(3, 2, 1, [("0", [0, 1])], [("1", [0])], [("1", [1])],
                                            pending=([("0", [2])], [("1", [2])], [("1", [3])]), epochs={"0": [1, 2]}),
     "StreamsGroupCurrentMemberAssignmentValue"),
    (23, None, senc.topology_value(1, [{"id": "0", "sources": ["t"], "changelogs": ["c"], "copartition": [[0]]}]),
     "StreamsGroupTopologyValue"),
])
def test_every_truncation_is_rejected_naming_the_field(key_version, member, value, prefix):
    key = K(key_version, "app", member)
    assert decode_offsets_record(key, value, TS).rejected_reason is None
    for cut in range(len(value)):
        d = decode_offsets_record(key, value[:cut], TS)
        assert d.rejected_reason is not None and d.events == [], cut
        cls, _, path = d.rejected_reason.partition(":")
        assert cls in ("truncated", "bad_length", "bad_null"), d.rejected_reason
        assert path.startswith(prefix), d.rejected_reason
    d = decode_offsets_record(key, value + b"\x00", TS)  # a byte left over
    assert d.rejected_reason == f"bad_length:{prefix}", d.rejected_reason


def test_corrupted_streams_values_name_the_field():
    key = K(19, "app", "m")
    value = bytearray(senc.member_metadata_value("c\u00e9", "/h", "p"))
    at = value.index("c\u00e9".encode())
    value[at + 1] = 0xFF  # not UTF-8
    assert decode_offsets_record(key, bytes(value), TS).rejected_reason == \
        "bad_utf8:StreamsGroupMemberMetadataValue.client_id"
    value = bytearray(senc.member_metadata_value("c", "/h", "p"))
    at = value.index(b"p", 6) - 1
    value[at] = 0  # process_id: compact length 0 is null, which the schema does not allow
    assert decode_offsets_record(key, bytes(value), TS).rejected_reason == \
        "bad_null:StreamsGroupMemberMetadataValue.process_id"
    value = senc.current_assignment_value(3, 2, 1, [("0", [0])])
    at = value.index(b"\x00\x00\x00\x00", 11)  # the partition 0 of task 0_0
    bad = value[:at] + b"\xff\xff\xff\xff" + value[at + 4:]
    assert decode_offsets_record(K(22, "app", "m"), bad, TS).rejected_reason == \
        "bad_value:StreamsGroupCurrentMemberAssignmentValue.active_tasks[0].partitions[0]"
    d = decode_offsets_record(K(17, "app"), b"\x00\x00\x00\x00\x00\x01", TS)  # 4.0's ShareGroup-like epoch only
    assert d.rejected_reason == "truncated:StreamsGroupMetadataValue.metadata_hash"
    d = decode_offsets_record(K(17, "app"), b"\xff\xff\x00\x00\x00\x01\x00", TS)
    assert d.rejected_reason == "unsupported_value_version:StreamsGroupMetadataValue"
    assert decode_offsets_record(K(22, "app"), None, TS).rejected_reason == \
        "truncated:StreamsGroupCurrentMemberAssignmentKey.member_id"
    d = decode_offsets_record(K(24, "app"), b"\x00\x00", TS)  # trunk's StreamsGroupTargetAssignmentResolvedTopicIds
    assert d.rejected_reason == "unknown_key_version:24"


# --- through the core --------------------------------------------------------------------------------
STANDBY_1 = [("num.standby.replicas", "1")]


def _member(client: str, process: str) -> bytes:
    return senc.member_metadata_value(client, "/127.0.0.1", process, rebalance_timeout_ms=20000, topology_epoch=0)


def _streams_group_records():
    """A streams group's records in a 4.4 coordinator's order: thread a (process p-1) joins and takes every task
    (epoch 1); thread b (process p-2) joins, a gives up 0_1 (revoking it first) and b takes it (epoch 2); a is
    fenced: tombstones of its current assignment, target assignment and metadata, then the epoch's bump (3).
    A stateful subtopology (a changelog), one standby replica (the group metadata's last assignment configs)."""
    k, g = K, "app"
    both = [("0", [0, 1])]
    return [
        (k(19, g, "m-a"), _member("app-1-StreamThread-1-consumer", "p-1")),
        (k(23, g), senc.topology_value(0, [{"id": "0", "sources": ["words"], "changelogs": ["app-counts-changelog"]}])),
        (k(17, g), senc.metadata_value(1, 11, 0, configs=STANDBY_1)),
        (k(21, g, "m-a"), senc.target_member_value(both)),
        (k(20, g), senc.target_metadata_value(1)),
        (k(22, g, "m-a"), senc.current_assignment_value(1, 0, 1, both)),
        (k(19, g, "m-b"), _member("app-2-StreamThread-1-consumer", "p-2")),
        (k(17, g), senc.metadata_value(2, 11, 0, configs=STANDBY_1)),
        (k(21, g, "m-a"), senc.target_member_value([("0", [0])], standby=[("0", [1])])),
        (k(21, g, "m-b"), senc.target_member_value([("0", [1])], standby=[("0", [0])])),
        (k(20, g), senc.target_metadata_value(2)),
        (k(22, g, "m-b"), senc.current_assignment_value(2, 0, 3, [], pending=((), (), ()))),
        (k(22, g, "m-a"), senc.current_assignment_value(2, 1, 1, [("0", [0])], standby=[("0", [1])])),
        (k(22, g, "m-b"), senc.current_assignment_value(2, 2, 1, [("0", [1])], standby=[("0", [0])])),
        (k(22, g, "m-a"), None), (k(21, g, "m-a"), None), (k(19, g, "m-a"), None),
        (k(17, g), senc.metadata_value(3, 11, 0, configs=STANDBY_1)),
        (k(21, g, "m-b"), senc.target_member_value(both)),
        (k(20, g), senc.target_metadata_value(3)),
        (k(22, g, "m-b"), senc.current_assignment_value(3, 2, 1, both)),
    ]


def _decoded_events():
    dec = OffsetsTopicDecoder()
    events = []
    for i, (key, value) in enumerate(_streams_group_records()):
        d = dec.decode(key, value, TS + i * 1000)
        assert d.rejected_reason is None, (i, d.rejected_reason)
        events.extend(d.events)
    return events


def test_a_streams_groups_generations_carry_tasks_and_are_judged_by_the_sticky_task_assignor():
    events = [ev("topic_partitions", TS - 1, "app", topics={"words": 2})] + _decoded_events()
    gens = kinds(run(events), "generation")
    assert [g["generation"] for g in gens] == [1, 2, 3]
    assert [g["members"] for g in gens] == [["m-a"], ["m-a", "m-b"], ["m-b"]]
    for g in gens:  # no consumer assignor judges it: partitions are not what a streams member is given
        assert (g["protocol"], g["group_type"], g["expected_assignment"], g["mismatched_partitions"],
                g["partitions_moved"]) == ("sticky", "streams", None, None, None), g
        assert (g["mismatched_tasks"], g["expected_reason"], g["expected_assignor_release"]) == (0, None, "4.4.0"), g
        assert (g["num_standby_replicas"], g["num_standby_replicas_source"]) == (1, "coordinator")
    assert gens[1]["tasks"] == {
        "m-a": {"process_id": "p-1", "client_id": "app-1-StreamThread-1-consumer", "epoch": 2, "active": [["0", 0]], "standby": [["0", 1]], "warmup": []},
        "m-b": {"process_id": "p-2", "client_id": "app-2-StreamThread-1-consumer", "epoch": 2, "active": [["0", 1]], "standby": [["0", 0]], "warmup": []}}
    assert gens[1]["expected_tasks"] == {mid: {k: t[k] for k in ("active", "standby", "warmup")}
                                         for mid, t in gens[1]["tasks"].items()}
    # epoch 2: b took active 0_1 from a, a move between processes (a's new standby of 0_1 and b's of 0_0 are new
    # replicas, which move nothing); epoch 3: b took active 0_0 from a, gone (b's standby of 0_0 gave way to it)
    assert [(g["tasks_moved"], g["tasks_moved_between_processes"], g["tasks_moved_within_process"])
            for g in gens] == [(0, 0, 0), (1, 1, 0), (1, 1, 0)]
    assert gens[2]["tasks"] == {"m-b": {"process_id": "p-2", "client_id": "app-2-StreamThread-1-consumer", "epoch": 3,
                                        "active": [["0", 0], ["0", 1]], "standby": [], "warmup": []}}
    assert gens[2]["expected_tasks"] == {"m-b": {"active": [["0", 0], ["0", 1]], "standby": [], "warmup": []}}
    assert [c["cause"] for c in gens[1]["causes"]] == ["member_joined"]
    assert gens[1]["causes"][0]["client_id"] == "app-2-StreamThread-1-consumer"
    # the member whose metadata was deleted; whether it crashed or left, only a commit of its partitions would tell
    assert [(c["cause"], c["member_id"]) for c in gens[2]["causes"]] == [("unknown", "m-a")]


def test_without_partition_counts_the_tasks_held_bound_the_task_counts():
    gens = kinds(run(_decoded_events()), "generation")
    assert [g["mismatched_tasks"] for g in gens] == [0, 0, 0]
    assert {g["expected_reason"] for g in gens} == {
        "task counts bounded below by the tasks held for subtopology 0 (words)"}


def test_the_same_generations_of_a_consumer_assignors_name_are_judged():
    """The contrast that shows the streams group's null is the streams rule: a classic group whose assignor is the
    consumer's `sticky` (the same name) is recomputed."""
    events = [ev("topic_partitions", 900, topics={"t": 4})] + stable_group(protocol="sticky")
    gen = kinds(run(events), "generation")[-1]
    assert gen["protocol"] == "sticky" and gen["expected_assignment"] is not None and gen["group_type"] == "classic"
    # judged (its range-like split is not sticky's)
    assert gen["mismatched_partitions"] is not None and gen["partitions_moved"] == 0


def test_streams_members_take_the_streams_familys_session():
    """group.streams.session.timeout.ms (and a group's streams.session.timeout.ms) time its streams members; the
    consumer family's settings do not."""
    g = GroupMonitor("app", CoreSettings())
    for e in _decoded_events()[:2]:
        g.process(parse_event(e))
    m = g.members["m-a"]
    assert m.kip848 and m.streams == {"process_id": "p-1", "topology_epoch": 0, "client_tags": {}}
    assert (m.session_timeout_ms, m.timeout_source) == (45_000, "config")
    g.process(parse_event(ev("group_config", TS + 10, "", source="broker", group_type="consumer",
                             session_timeout_ms=50_000)))
    assert (m.session_timeout_ms, m.timeout_source) == (45_000, "config")
    g.process(parse_event(ev("group_config", TS + 20, "", source="broker", group_type="streams",
                             session_timeout_ms=30_000, heartbeat_interval_ms=4_000)))
    assert (m.session_timeout_ms, m.timeout_source, m.heartbeat_interval_ms) == (30_000, "broker", 4_000)
    g.process(parse_event(ev("group_config", TS + 30, "app", source="group", group_type="streams",
                             session_timeout_ms=12_000)))
    assert (m.session_timeout_ms, m.timeout_source) == (12_000, "group")
    assert g.counters.get("group_config_streams") == 2


def test_a_streams_members_process_and_tasks_survive_the_groups_snapshot():
    g = GroupMonitor("app", CoreSettings())
    for e in _decoded_events()[:8]:  # a's tasks of epoch 1, b joined
        g.process(parse_event(e))
    assert g.members["m-a"].streams["tasks"] == {"active": [["0", 0], ["0", 1]], "standby": [], "warmup": []}
    again = GroupMonitor.from_state(json.loads(json.dumps(g.to_state())), CoreSettings())
    assert {mid: m.streams for mid, m in again.members.items()} == {mid: m.streams for mid, m in g.members.items()}
    rest = [parse_event(e) for e in _decoded_events()[8:]]
    assert [g.process(e) for e in rest] == [again.process(e) for e in rest]
