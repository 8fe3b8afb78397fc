"""Share groups (KIP-932) from `__consumer_offsets`: every ShareGroup* record Apache Kafka 4.4 writes (and the
early-access layouts of 4.0) decoded into the events a KIP-848 group's records give, tombstones, malformed values
rejected with the field's name, and a share group's generations through the core: its members share partitions,
and each epoch is recomputed with Kafka's SimpleAssignor (core/assignors/share_simple.py) and held against what
the coordinator assigned."""
from __future__ import annotations

import pytest

import helpers.offsets_encoder as enc
from helpers.events import kinds, run

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.core.expected import SHARE_UNKNOWN_REASON
from rebalance_monitor.inputs.offsets_topic import OffsetsTopicDecoder, decode_offsets_record

TS = 1_700_000_000_000
T1 = "0b6f1c2e-8c1a-4d3e-9f00-112233445566"
T2 = "7a7a7a7a-1111-2222-3333-444455556666"


def only_event(d):
    assert d.rejected_reason is None, (d.rejected_reason, d.detail)
    assert len(d.events) == 1, d.events
    ev = d.events[0]
    assert not isinstance(parse_event(ev), Rejected), ev  # every event is one the core takes
    return ev


# --- each record type --------------------------------------------------------------------------------
@pytest.mark.parametrize("kafka40", [False, True], ids=["4.4", "4.0"])
def test_share_group_metadata_gives_the_epoch_bump(kafka40):
    d = decode_offsets_record(enc.group_key(11, "sg"), enc.sg_metadata_value(7, metadata_hash=-5, kafka40=kafka40), TS)
    assert d.record_type == "ShareGroupMetadata v0"
    assert only_event(d) == {"v": 1, "type": "rebalance_started", "ts": TS, "group": "sg", "generation": 6,
                             "reason": "share group epoch bumped to 7"}
    d = decode_offsets_record(enc.group_key(11, "sg"), None, TS)
    assert d.record_type == "ShareGroupMetadata tombstone" and only_event(d)["type"] == "group_deleted"


def test_share_group_member_metadata_is_a_join_of_a_share_member():
    d = decode_offsets_record(enc.group_key(10, "sg", "m-1"), enc.sg_member_metadata_value(
        "client-1", "/10.1.1.1", ["orders", "payments"], rack_id="r1"), TS)
    assert d.record_type == "ShareGroupMemberMetadata v0"
    assert only_event(d) == {"v": 1, "type": "join", "ts": TS, "group": "sg", "member_id": "m-1",
                             "group_instance_id": None, "client_id": "client-1", "host": "10.1.1.1",
                             "protocols": ["simple"], "topics": ["orders", "payments"], "group_protocol": "share",
                             "rack": "r1"}
    ev = only_event(decode_offsets_record(enc.group_key(10, "sg", "m-2"),
                                          enc.sg_member_metadata_value("c", "h/10.0.0.2", []), TS))
    assert "rack" not in ev and ev["host"] == "h/10.0.0.2" and ev["topics"] == []
    d = decode_offsets_record(enc.group_key(10, "sg", "m-1"), None, TS)
    assert d.record_type == "ShareGroupMemberMetadata tombstone"
    assert only_event(d) == {"v": 1, "type": "member_removed", "ts": TS, "group": "sg", "member_id": "m-1",
                             "cause": "unknown", "reason": "member metadata deleted (share group protocol)"}


@pytest.mark.parametrize("assignment_ts", [None, TS - 5])
def test_share_group_target_assignment_metadata_completes_the_generation(assignment_ts):
    d = decode_offsets_record(enc.group_key(12, "sg"), enc.sg_target_metadata_value(9, assignment_ts), TS)
    assert d.record_type == "ShareGroupTargetAssignmentMetadata v0"
    assert only_event(d) == {"v": 1, "type": "generation_completed", "ts": TS, "group": "sg", "generation": 9,
                             "protocol": "simple", "leader": None, "protocol_type": "share"}
    d = decode_offsets_record(enc.group_key(12, "sg"), None, TS)
    assert d.record_type == "ShareGroupTargetAssignmentMetadata tombstone" and d.events == []


def test_share_group_target_assignment_member_is_decoded_and_counted():
    d = decode_offsets_record(enc.group_key(13, "sg", "m-1"), enc.sg_target_member_value([(T1, [0, 1])]), TS)
    assert d.record_type == "ShareGroupTargetAssignmentMember v0" and d.events == [] and d.rejected_reason is None
    d = decode_offsets_record(enc.group_key(13, "sg", "m-1"), enc.sg_target_member_value([(T1, [0, 1])])[:-4], TS)
    assert d.rejected_reason.startswith("truncated:ShareGroupTargetAssignmentMemberValue.topic_partitions[0]")
    d = decode_offsets_record(enc.group_key(13, "sg", "m-1"), None, TS)
    assert d.record_type == "ShareGroupTargetAssignmentMember tombstone" and d.events == []


def test_share_group_current_assignment_is_a_sync_named_by_the_state_partition_metadata():
    dec = OffsetsTopicDecoder()
    d = dec.decode(enc.group_key(15, "sg"), enc.sg_state_partition_metadata_value(
        [(T1, "orders", [0, 1])], initializing=[(T2, "payments", [0])], deleting=[]), TS)
    assert d.record_type == "ShareGroupStatePartitionMetadata v0" and d.rejected_reason is None
    # the initialised partitions (not those still initialising): what the simple assignor may hand out
    assert d.events == [{"v": 1, "type": "share_partitions", "ts": TS, "group": "sg",
                         "initialized": [["orders", 0], ["orders", 1]]}]
    assert dec.topic_names == {T1: "orders", T2: "payments"}
    d = dec.decode(enc.group_key(14, "sg", "m-1"), enc.sg_current_assignment_value(
        4, 3, 0, [(T1, [0, 1]), (T2, [0])]), TS)
    assert d.record_type == "ShareGroupCurrentMemberAssignment v0"
    assert only_event(d) == {"v": 1, "type": "sync", "ts": TS, "group": "sg", "member_id": "m-1", "generation": 4,
                             "protocol": "simple", "leader": None, "member_state": "stable",
                             "assignment": [["orders", 0], ["orders", 1], ["payments", 0]],
                             # the named topics' ids as Kafka prints a Uuid (the simple assignor's tie-breaks)
                             "topic_ids": {"orders": "C28cLowaTT6fABEiM0RVZg", "payments": "enp6ehERIiIzM0REVVVmZg"}}
    # an id no record named stays its UUID (and names no topic id); an unknown state code is `unknown`
    ev = only_event(decode_offsets_record(enc.group_key(14, "sg", "m-1"),
                                          enc.sg_current_assignment_value(5, 4, 9, [(T1, [2])]), TS))
    assert ev["assignment"] == [[T1, 2]] and ev["member_state"] == "unknown"
    d = dec.decode(enc.group_key(14, "sg", "m-1"), None, TS)
    assert d.record_type == "ShareGroupCurrentMemberAssignment tombstone" and d.events == []


def test_state_partition_metadata_of_kafka_4_0_and_deleting_topics_name_topics():
    dec = OffsetsTopicDecoder()
    d = dec.decode(enc.group_key(15, "sg"), enc.sg_state_partition_metadata_value(
        [(T1, "orders", [0])], deleting=[(T2, "old")], kafka40=True), TS)
    assert d.rejected_reason is None and d.record_type == "ShareGroupStatePartitionMetadata v0"
    assert dec.topic_names == {T1: "orders", T2: "old"}
    d = dec.decode(enc.group_key(15, "sg"), None, TS)
    assert d.record_type == "ShareGroupStatePartitionMetadata tombstone" and d.events == []


def test_share_group_partition_metadata_of_kafka_4_0_names_topics():
    dec = OffsetsTopicDecoder()
    value = enc.cg_partition_metadata_value([(T1, "orders", 3)])  # 4.0's layout is the consumer group's
    d = dec.decode(enc.group_key(9, "sg"), value, TS)
    assert d.record_type == "ShareGroupPartitionMetadata v0" and d.events == [] and d.rejected_reason is None
    assert dec.topic_names == {T1: "orders"}
    d = dec.decode(enc.group_key(9, "sg"), value[:-3], TS)
    assert d.rejected_reason.startswith("truncated:ShareGroupPartitionMetadataValue.topics[0]"), d.rejected_reason


def test_a_newer_value_version_is_read_with_the_known_layout():
    value = bytearray(enc.sg_target_metadata_value(3))
    value[1] = 1  # version 1: only tagged fields may have been added
    d = decode_offsets_record(enc.group_key(12, "sg"), bytes(value), TS)
    assert d.record_type == "ShareGroupTargetAssignmentMetadata v1" and only_event(d)["generation"] == 3


# --- malformed values --------------------------------------------------------------------------------
@pytest.mark.parametrize("key_version,member,value,prefix", [
    (10, "m", enc.sg_member_metadata_value("client-1", "/h", ["orders"], rack_id="r"), "ShareGroupMemberMetadataValue"),
    (14, "m", enc.sg_current_assignment_value(3, 2, 0, [(T1, [0, 1])]), "ShareGroupCurrentMemberAssignmentValue"),
    (12, None, enc.sg_target_metadata_value(3, TS), "ShareGroupTargetAssignmentMetadataValue"),
    (13, "m", enc.sg_target_member_value([(T1, [0])]), "ShareGroupTargetAssignmentMemberValue"),
])
def test_every_truncation_is_rejected_naming_the_field(key_version, member, value, prefix):
    key = enc.group_key(key_version, "sg", member)
    for cut in range(len(value)):
        d = decode_offsets_record(key, value[:cut], TS)
        assert d.rejected_reason is not None and d.events == [], cut
        cls, _, path = d.rejected_reason.partition(":")
        assert cls in ("truncated", "bad_length", "bad_null"), d.rejected_reason
        assert path.startswith(prefix), d.rejected_reason


def test_corrupted_share_values_name_the_field():
    key = enc.group_key(10, "sg", "m")
    value = bytearray(enc.sg_member_metadata_value("c\u00e9", "/h", ["orders"]))
    at = value.index("c\u00e9".encode())
    value[at + 1] = 0xFF  # not UTF-8
    assert decode_offsets_record(key, bytes(value), TS).rejected_reason == \
        "bad_utf8:ShareGroupMemberMetadataValue.client_id"
    value = bytearray(enc.sg_member_metadata_value("c", "/h", []))
    value[3] = 0  # client_id: compact length 0 is null, which the schema does not allow
    assert decode_offsets_record(key, bytes(value), TS).rejected_reason == \
        "bad_null:ShareGroupMemberMetadataValue.client_id"
    value = enc.sg_current_assignment_value(3, 2, 0, [(T1, [0])])
    bad = value[:-6] + b"\xff\xff\xff\xff" + value[-2:]  # partition -1
    assert decode_offsets_record(enc.group_key(14, "sg", "m"), bad, TS).rejected_reason == \
        "bad_value:ShareGroupCurrentMemberAssignmentValue.assigned_partitions[0].partitions[0]"
    d = decode_offsets_record(enc.group_key(11, "sg"), enc.sg_metadata_value(3) + b"\x00\x00", TS)
    assert d.rejected_reason == "bad_length:ShareGroupMetadataValue"  # bytes left over in either layout
    d = decode_offsets_record(enc.group_key(11, "sg"), b"\x00\x00\x00\x00", TS)
    assert d.rejected_reason == "truncated:ShareGroupMetadataValue.epoch"
    d = decode_offsets_record(enc.group_key(15, "sg"), b"\x00\x00\x02", TS)
    assert d.rejected_reason.startswith("truncated:ShareGroupStatePartitionMetadataValue."), d.rejected_reason
    d = decode_offsets_record(enc.group_key(11, "sg"), b"\xff\xff\x00\x00\x00\x01\x00", TS)
    assert d.rejected_reason == "unsupported_value_version:ShareGroupMetadataValue"
    assert decode_offsets_record(enc.group_key(14, "sg"), None, TS).rejected_reason == \
        "truncated:ShareGroupCurrentMemberAssignmentKey.member_id"


# --- through the core --------------------------------------------------------------------------------
def _share_group_records():
    """A share group's records as Kafka 4.4 writes them (the order of a real broker's): a joins (epoch 1), its
    topic's partition is initialised (epoch 2), b joins (epoch 3, both hold orders-0), a is removed (epoch 4)."""
    k, sg = enc.group_key, "sg"
    return [
        (k(10, sg, "m-a"), enc.sg_member_metadata_value("share-a", "/127.0.0.1", ["orders"])),
        (k(11, sg), enc.sg_metadata_value(1, 77)),
        (k(13, sg, "m-a"), enc.sg_target_member_value([])),
        (k(12, sg), enc.sg_target_metadata_value(1)),
        (k(14, sg, "m-a"), enc.sg_current_assignment_value(1, 0, 0, [])),
        (k(15, sg), enc.sg_state_partition_metadata_value([], initializing=[(T1, "orders", [0])])),
        (k(15, sg), enc.sg_state_partition_metadata_value([(T1, "orders", [0])])),
        (k(11, sg), enc.sg_metadata_value(2, 78)),
        (k(12, sg), enc.sg_target_metadata_value(2)),
        (k(14, sg, "m-a"), enc.sg_current_assignment_value(2, 1, 0, [(T1, [0])])),
        (k(10, sg, "m-b"), enc.sg_member_metadata_value("share-b", "/127.0.0.1", ["orders"])),
        (k(11, sg), enc.sg_metadata_value(3, 79)),
        (k(12, sg), enc.sg_target_metadata_value(3)),
        (k(14, sg, "m-a"), enc.sg_current_assignment_value(3, 2, 0, [(T1, [0])])),
        (k(14, sg, "m-b"), enc.sg_current_assignment_value(3, 0, 0, [(T1, [0])])),
        (k(14, sg, "m-a"), None), (k(13, sg, "m-a"), None), (k(10, sg, "m-a"), None),
        (k(11, sg), enc.sg_metadata_value(4, 80)),
        (k(12, sg), enc.sg_target_metadata_value(4)),
        (k(14, sg, "m-b"), enc.sg_current_assignment_value(4, 3, 0, [(T1, [0])])),
    ]


def test_a_share_groups_generations_are_recomputed_with_the_simple_assignor():
    dec = OffsetsTopicDecoder()
    events = []
    for i, (key, value) in enumerate(_share_group_records()):
        d = dec.decode(key, value, TS + i * 1000)
        assert d.rejected_reason is None, (i, d.rejected_reason)
        events.extend(d.events)
    gens = kinds(run(events), "generation")
    assert [g["generation"] for g in gens] == [1, 2, 3, 4]
    assert [g["members"] for g in gens] == [["m-a"], ["m-a"], ["m-a", "m-b"], ["m-b"]]
    # both members hold orders-0: shared (the one partition wants both), as SimpleAssignor shares it; not moved
    assert gens[2]["assignment"] == {"m-a": [["orders", 0]], "m-b": [["orders", 0]]}
    for g in gens:  # epoch 1: nothing initialised yet, nothing to hand out; then orders-0, to whoever is in
        assert (g["protocol"], g["expected_assignment"], g["mismatched_partitions"], g["expected_reason"],
                g["expected_assignor_release"]) == ("simple", g["assignment"], 0, None, "4.4.0"), g
        assert g["partitions_moved"] is None
    assert gens[0]["assignment"] == {"m-a": []}
    assert [c["cause"] for c in gens[2]["causes"]] == ["member_joined"]
    assert gens[2]["causes"][0]["client_id"] == "share-b"
    assert gens[1]["causes"][0]["reason"] == "share group epoch bumped to 2"  # the partition's initialisation
    assert gens[3]["causes"][0]["member_id"] == "m-a"  # the member whose metadata was deleted


def test_the_same_sharing_in_a_consumer_group_would_be_a_mismatch():
    """The contrast that shows the share group's null is the share rule, not a missing input: a KIP-848 group whose
    two members both hold orders-0 is judged by its assignor and found wrong."""
    dec = OffsetsTopicDecoder()
    k = enc.group_key
    recs = [(k(5, "cg", "m-a"), enc.cg_member_metadata_value("a", "/h", ["orders"], server_assignor="uniform")),
            (k(5, "cg", "m-b"), enc.cg_member_metadata_value("b", "/h", ["orders"], server_assignor="uniform")),
            (k(4, "cg"), enc.cg_partition_metadata_value([(T1, "orders", 1)])),
            (k(3, "cg"), enc.cg_metadata_value(1)),
            (k(6, "cg"), enc.cg_target_metadata_value(1)),
            (k(8, "cg", "m-a"), enc.cg_current_assignment_value(1, 0, 0, [(T1, [0])])),
            (k(8, "cg", "m-b"), enc.cg_current_assignment_value(1, 0, 0, [(T1, [0])]))]
    events = []
    for i, (key, value) in enumerate(recs):
        events.extend(dec.decode(key, value, TS + i * 100).events)
    gen = kinds(run(events), "generation")[-1]
    assert gen["expected_assignment"] is not None and gen["mismatched_partitions"] == 1, gen


def _two_partition_records(b_holds):
    """a holds both partitions of orders (initialised, epoch 2); b joins (epoch 3) and the coordinator gives b
    `b_holds` and a the rest."""
    k, sg = enc.group_key, "sg2"
    both = [(T1, [0, 1])]
    return [
        (k(10, sg, "m-a"), enc.sg_member_metadata_value("share-a", "/127.0.0.1", ["orders"])),
        (k(15, sg), enc.sg_state_partition_metadata_value([(T1, "orders", [0, 1])])),
        (k(11, sg), enc.sg_metadata_value(2, 78)),
        (k(12, sg), enc.sg_target_metadata_value(2)),
        (k(14, sg, "m-a"), enc.sg_current_assignment_value(2, 1, 0, both)),
        (k(10, sg, "m-b"), enc.sg_member_metadata_value("share-b", "/127.0.0.1", ["orders"])),
        (k(11, sg), enc.sg_metadata_value(3, 79)),
        (k(12, sg), enc.sg_target_metadata_value(3)),
        (k(14, sg, "m-a"), enc.sg_current_assignment_value(3, 2, 0, [(T1, [p for p in (0, 1) if p not in b_holds
                                                                                    or len(b_holds) == 2])])),
        (k(14, sg, "m-b"), enc.sg_current_assignment_value(3, 0, 0, [(T1, list(b_holds))])),
    ]


def _generations(records):
    dec = OffsetsTopicDecoder()
    events = []
    for i, (key, value) in enumerate(records):
        d = dec.decode(key, value, TS + i * 1000)
        assert d.rejected_reason is None, (i, d.rejected_reason)
        events.extend(d.events)
    return events, kinds(run(events), "generation")


def test_a_share_members_sync_names_its_topics_ids():
    events, _gens = _generations(_two_partition_records([1]))
    syncs = [e for e in events if e["type"] == "sync"]
    # T1 as Kafka prints a Uuid (URL-safe base64 of its 16 bytes)
    assert syncs[-1]["topic_ids"] == {"orders": "C28cLowaTT6fABEiM0RVZg"}, syncs[-1]


def test_a_share_groups_epoch_is_held_against_the_simple_assignor():
    """Two members, two partitions: SimpleAssignor gives each member one (which one follows Kafka's hash orders
    of the topic's id and the members' ids); the coordinator's answer either agrees or is counted mismatched."""
    _events, gens = _generations(_two_partition_records([1]))
    expected = gens[-1]["expected_assignment"]
    assert sorted(len(tps) for tps in expected.values()) == [1, 1], expected
    ours = {"m-a": [["orders", 0]], "m-b": [["orders", 1]]}
    assert expected == ours  # Kafka's own class answers the same: tests/assignors/test_share_simple_assignor.py
    assert gens[-1]["mismatched_partitions"] == 0 and gens[-1]["partitions_moved"] is None
    _events, gens = _generations(_two_partition_records([0]))  # the other way round: both partitions differ
    assert gens[-1]["expected_assignment"] == ours and gens[-1]["mismatched_partitions"] == 2, gens[-1]
    _events, gens = _generations(_two_partition_records([0, 1]))  # both to both: over-shared
    assert gens[-1]["assignment"] == {"m-a": [["orders", 0], ["orders", 1]], "m-b": [["orders", 0], ["orders", 1]]}
    assert gens[-1]["mismatched_partitions"] == 2, gens[-1]



def test_an_initialised_partition_no_member_holds_is_a_mismatch():
    """The coordinator's state record lists the partitions whose share-group state is initialised: the simple
    assignor hands out each of them. A member holding fewer is found wrong (the partitions held alone, standing in
    for the initialised ones, could not show it)."""
    k, sg = enc.group_key, "sg3"
    recs = [(k(10, sg, "m-a"), enc.sg_member_metadata_value("share-a", "/127.0.0.1", ["orders"])),
            (k(15, sg), enc.sg_state_partition_metadata_value([(T1, "orders", [0, 1, 2])])),
            (k(11, sg), enc.sg_metadata_value(2, 78)),
            (k(12, sg), enc.sg_target_metadata_value(2)),
            (k(14, sg, "m-a"), enc.sg_current_assignment_value(2, 1, 0, [(T1, [0, 1])]))]
    _events, gens = _generations(recs)
    assert gens[-1]["expected_assignment"] == {"m-a": [["orders", 0], ["orders", 1], ["orders", 2]]}, gens[-1]
    assert gens[-1]["mismatched_partitions"] == 1, gens[-1]
