"""`__consumer_offsets` decoder: round trips of every record version built by the test encoder, tombstones,
KIP-848 records, truncation / corruption (each gives a rejection naming the field), and a bounded fuzz run."""
from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import helpers.offsets_encoder as enc

from rebalance_monitor.core.events import Rejected, event_to_dict, parse_event
from rebalance_monitor.inputs.offsets_topic import (
    OffsetsTopicDecoder, decode_dump_line, decode_offsets_record)

TS = 1_700_000_000_000
T1 = "5f0e7c1e-5d6b-4a54-9e57-0d2b5c8e2c11"
T2 = "0b9d8f1a-1111-4c4c-8888-abcdefabcdef"


def canonical(ev: dict) -> dict:
    """The event must pass the canonical parser; return its re-serialised form."""
    parsed = parse_event(ev)
    assert not isinstance(parsed, Rejected), (parsed, ev)
    return event_to_dict(parsed)


def only_event(d):
    assert d.rejected_reason is None, (d.rejected_reason, d.detail)
    assert len(d.events) == 1, d.events
    canonical(d.events[0])
    return d.events[0]


# --- OffsetCommit ----------------------------------------------------------------------------------
@pytest.mark.parametrize("key_version", [0, 1])
@pytest.mark.parametrize("value_version", [0, 1, 2, 3, 4])
def test_offset_commit_all_versions(key_version, value_version):
    key = enc.offset_commit_key("g1", "orders", 7, key_version)
    value = enc.offset_commit_value(value_version, 12345, "meta", commit_ts=TS - 5, leader_epoch=3, expire_ts=TS + 9)
    d = decode_offsets_record(key, value, TS)
    ev = only_event(d)
    assert d.record_type == f"OffsetCommit v{value_version}"
    assert ev == {"v": 1, "type": "commit", "ts": TS, "group": "g1", "offsets": [["orders", 7, 12345]]}


def test_offset_commit_flexible_with_unknown_tagged_fields_and_newer_version():
    value = enc.offset_commit_value(4, 9, "", commit_ts=TS, extra_tags={3: b"\x01\x02", 9: b""})
    ev = only_event(decode_offsets_record(enc.offset_commit_key("g", "t", 0), value, TS))
    assert ev["offsets"] == [["t", 0, 9]]
    # KIP-915: a newer flexible version only adds tagged fields, so it is read with the v4 layout
    newer = b"\x00\x05" + value[2:]
    d = decode_offsets_record(enc.offset_commit_key("g", "t", 0), newer, TS)
    assert d.record_type == "OffsetCommit v5" and only_event(d)["offsets"] == [["t", 0, 9]]


def test_offset_commit_timestamp_fallback_to_commit_timestamp():
    value = enc.offset_commit_value(2, 1, "", commit_ts=TS - 1000)
    ev = only_event(decode_offsets_record(enc.offset_commit_key("g", "t", 0), value, -1))
    assert ev["ts"] == TS - 1000
    d = decode_offsets_record(enc.offset_commit_key("g", "t", 0), enc.offset_commit_value(2, 1, "", -1), -1)
    assert d.rejected_reason == "bad_timestamp"


def test_offset_tombstone_is_counted_without_event():
    d = decode_offsets_record(enc.offset_commit_key("g", "t", 3), None, TS)
    assert d.rejected_reason is None and d.events == [] and d.record_type == "OffsetCommit tombstone"


# --- GroupMetadata -------------------------------------------------------------------------------
def _members(version_sub: int, protocol: str):
    a = {"member_id": "consumer-1-aaa", "group_instance_id": "inst-a", "client_id": "consumer-1",
         "client_host": "/10.0.0.1", "rebalance_timeout": 300000, "session_timeout": 45000}
    b = {"member_id": "consumer-2-bbb", "group_instance_id": None, "client_id": "consumer-2",
         "client_host": "host-b/10.0.0.2", "rebalance_timeout": 60000, "session_timeout": 10000}
    owned_a = [("orders", 0), ("orders", 1)]
    user_a = user_b = None
    if protocol == "sticky":
        user_a = enc.sticky_user_data(owned_a, 6)
        user_b = enc.sticky_user_data([("payments", 2)], None)  # v0 user data: no generation
    elif protocol == "cooperative-sticky" and version_sub < 2:
        user_a = enc.cooperative_user_data(6)
        user_b = enc.cooperative_user_data(6)
    a["subscription"] = enc.consumer_subscription(version_sub, ["orders", "payments"], user_a,
                                                  owned=owned_a, generation=6, rack="rack-1")
    b["subscription"] = enc.consumer_subscription(version_sub, ["orders", "payments"], user_b,
                                                  owned=[("payments", 2)], generation=6)
    a["assignment"] = enc.consumer_assignment(min(version_sub, 3), [("orders", 0), ("orders", 1), ("payments", 0)])
    b["assignment"] = enc.consumer_assignment(min(version_sub, 3), [("orders", 2), ("payments", 1), ("payments", 2)])
    return [a, b]


@pytest.mark.parametrize("gm_version", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("sub_version", [0, 1, 2, 3])
def test_group_metadata_all_versions(gm_version, sub_version):
    members = _members(sub_version, "range")
    value = enc.group_metadata_value(gm_version, "consumer", 7, "range", "consumer-1-aaa", members,
                                     current_state_ts=TS - 3)
    d = decode_offsets_record(enc.group_metadata_key("grp"), value, TS)
    ev = only_event(d)
    assert d.record_type == f"GroupMetadata v{gm_version}"
    assert (ev["type"], ev["generation"], ev["protocol"], ev["leader"], ev["protocol_type"]) == \
        ("generation_completed", 7, "range", "consumer-1-aaa", "consumer")
    a, b = ev["members"]
    assert a["member_id"] == "consumer-1-aaa" and a["client_id"] == "consumer-1" and a["host"] == "10.0.0.1"
    assert b["host"] == "host-b/10.0.0.2"
    assert a["session_timeout_ms"] == 45000 and b["session_timeout_ms"] == 10000
    assert ("rebalance_timeout_ms" in a) == (gm_version >= 1)
    if gm_version >= 1:
        assert a["rebalance_timeout_ms"] == 300000
    if gm_version >= 3:
        assert a["group_instance_id"] == "inst-a" and b["group_instance_id"] is None
    else:
        assert "group_instance_id" not in a
    assert a["topics"] == ["orders", "payments"]
    assert a["assignment"] == [["orders", 0], ["orders", 1], ["payments", 0]]
    assert b["assignment"] == [["orders", 2], ["payments", 1], ["payments", 2]]
    if sub_version >= 1:
        assert a["owned"] == [["orders", 0], ["orders", 1]] and b["owned"] == [["payments", 2]]
    else:
        assert "owned" not in a
    assert (a.get("generation") == 6) == (sub_version >= 2)
    assert (a.get("rack") == "rack-1") == (sub_version >= 3)


def test_sticky_user_data_gives_owned_partitions_and_generation():
    value = enc.group_metadata_value(3, "consumer", 7, "sticky", "consumer-1-aaa", _members(0, "sticky"))
    ev = only_event(decode_offsets_record(enc.group_metadata_key("grp"), value, TS))
    a, b = ev["members"]
    assert a["owned"] == [["orders", 0], ["orders", 1]] and a["generation"] == 6
    assert b["owned"] == [["payments", 2]] and "generation" not in b  # v0 user data has no generation


def test_cooperative_sticky_generation_from_user_data_before_subscription_v2():
    value = enc.group_metadata_value(3, "consumer", 7, "cooperative-sticky", "consumer-1-aaa",
                                     _members(1, "cooperative-sticky"))
    ev = only_event(decode_offsets_record(enc.group_metadata_key("grp"), value, TS))
    assert [m["generation"] for m in ev["members"]] == [6, 6]
    assert ev["members"][0]["owned"] == [["orders", 0], ["orders", 1]]


def test_unreadable_sticky_user_data_is_ignored_like_kafka_does():
    m = _members(1, "range")
    m[0]["subscription"] = enc.consumer_subscription(1, ["orders"], b"\x00\x00\x00\x05xx", owned=[("orders", 1)])
    value = enc.group_metadata_value(3, "consumer", 2, "sticky", "consumer-1-aaa", m)
    ev = only_event(decode_offsets_record(enc.group_metadata_key("grp"), value, TS))
    assert ev["members"][0]["owned"] == [["orders", 1]]


def test_newer_consumer_protocol_version_is_read_with_v3_layout():
    m = _members(3, "range")
    sub = enc.consumer_subscription(3, ["orders"], None, owned=[], generation=4, rack="r") + b"\x00\x07future"
    m[0]["subscription"] = b"\x00\x04" + sub[2:]
    value = enc.group_metadata_value(4, "consumer", 2, "range", "consumer-1-aaa", m)
    ev = only_event(decode_offsets_record(enc.group_metadata_key("grp"), value, TS))
    assert ev["members"][0]["topics"] == ["orders"] and ev["members"][0]["rack"] == "r"


def test_non_consumer_protocol_type_keeps_member_fields_only():
    members = [{"member_id": "connect-1", "client_id": "c", "client_host": "/h", "subscription": b"\x01\x02",
                "assignment": b"\x03"}]
    value = enc.group_metadata_value(2, "connect", 3, "sessioned", "connect-1", members)
    ev = only_event(decode_offsets_record(enc.group_metadata_key("connect-cluster"), value, TS))
    assert ev["protocol_type"] == "connect" and "topics" not in ev["members"][0]


def test_empty_group_metadata_gives_group_empty_and_tombstone_gives_group_deleted():
    value = enc.group_metadata_value(3, "consumer", 12, None, None, [], current_state_ts=TS)
    d = decode_offsets_record(enc.group_metadata_key("grp"), value, TS)
    assert only_event(d) == {"v": 1, "type": "group_empty", "ts": TS, "group": "grp", "generation": 12}
    d = decode_offsets_record(enc.group_metadata_key("grp"), None, TS)
    assert d.record_type == "GroupMetadata tombstone"
    assert only_event(d) == {"v": 1, "type": "group_deleted", "ts": TS, "group": "grp"}


def test_member_with_empty_assignment_bytes():
    m = _members(1, "range")
    m[1]["assignment"] = b""
    value = enc.group_metadata_value(3, "consumer", 2, "range", "consumer-1-aaa", m)
    ev = only_event(decode_offsets_record(enc.group_metadata_key("grp"), value, TS))
    assert ev["members"][1]["assignment"] == []


# --- KIP-848 -----------------------------------------------------------------------------------------
def test_kip848_records_decode_and_resolve_topic_ids():
    dec = OffsetsTopicDecoder()
    d = dec.decode(enc.group_key(4, "cg"), enc.cg_partition_metadata_value(
        [(T1, "orders", 3), (T2, "payments", 2)], racks={T1: {0: ["r1", "r2"]}}), TS)
    assert d.record_type == "ConsumerGroupPartitionMetadata v0" and d.events == [] and d.rejected_reason is None
    assert dec.topic_names == {T1: "orders", T2: "payments"}

    d = dec.decode(enc.group_key(3, "cg"), enc.cg_metadata_value(5, metadata_hash=123456789), TS)
    assert d.record_type == "ConsumerGroupMetadata v0"
    assert only_event(d) == {"v": 1, "type": "rebalance_started", "ts": TS, "group": "cg", "generation": 4,
                             "reason": "group epoch bumped to 5"}

    d = dec.decode(enc.group_key(5, "cg", "m-1"), enc.cg_member_metadata_value(
        "client-1", "/10.1.1.1", ["orders", "payments"], instance_id="i-1", rack_id="r1",
        rebalance_timeout_ms=120000, server_assignor="uniform"), TS)
    ev = only_event(d)
    assert (ev["type"], ev["member_id"], ev["protocols"], ev["topics"], ev["host"], ev["rack"],
            ev["group_instance_id"], ev["rebalance_timeout_ms"]) == \
        ("join", "m-1", ["uniform"], ["orders", "payments"], "10.1.1.1", "r1", "i-1", 120000)

    d = dec.decode(enc.group_key(5, "cg", "m-2"), enc.cg_member_metadata_value(
        "client-2", "/h", ["orders"], server_assignor=None, classic=(30000, [("range", b"\x00\x01"),
                                                                           ("cooperative-sticky", b"")])), TS)
    ev = only_event(d)
    assert ev["protocols"] == ["range", "cooperative-sticky"] and ev["session_timeout_ms"] == 30000

    d = dec.decode(enc.group_key(7, "cg", "m-1"), enc.cg_target_member_value([(T1, [0, 1]), (T2, [1])]), TS)
    assert d.record_type == "ConsumerGroupTargetAssignmentMember v0" and d.events == []

    d = dec.decode(enc.group_key(6, "cg"), enc.cg_target_metadata_value(5), TS)
    ev = only_event(d)
    assert (ev["type"], ev["generation"], ev["protocol_type"]) == ("generation_completed", 5, "consumer")

    d = dec.decode(enc.group_key(8, "cg", "m-1"), enc.cg_current_assignment_value(
        5, 4, 0, [(T1, [0, 1]), (T2, [1])], pending=[(T1, [2])]), TS)
    ev = only_event(d)
    assert (ev["type"], ev["member_id"], ev["generation"]) == ("sync", "m-1", 5)
    assert ev["assignment"] == [["orders", 0], ["orders", 1], ["payments", 1]]

    d = dec.decode(enc.group_key(5, "cg", "m-1"), None, TS)
    ev = only_event(d)
    assert (ev["type"], ev["member_id"], ev["cause"]) == ("member_removed", "m-1", "unknown")
    d = dec.decode(enc.group_key(3, "cg"), None, TS)
    assert only_event(d)["type"] == "group_deleted"


def test_kip848_unknown_topic_id_is_kept_as_uuid():
    d = decode_offsets_record(enc.group_key(8, "cg", "m"), enc.cg_current_assignment_value(3, 2, 0, [(T2, [4])]), TS)
    assert only_event(d)["assignment"] == [[T2, 4]]


@pytest.mark.parametrize("key_version,name", [  # their values: test_offsets_share/streams_groups.py
    (17, "StreamsGroupMetadata"), (18, "StreamsGroupPartitionMetadata"), (19, "StreamsGroupMemberMetadata"),
    (20, "StreamsGroupTargetAssignmentMetadata"), (21, "StreamsGroupTargetAssignmentMember"),
    (22, "StreamsGroupCurrentMemberAssignment"), (23, "StreamsGroupTopology")])
def test_streams_records_tombstones(key_version, name):
    member_keyed = key_version in (19, 21, 22)  # keys with a MemberId after the GroupId
    key = enc.group_key(key_version, "sg", "m-1" if member_keyed else None)
    d = decode_offsets_record(key, None, TS)
    assert d.record_type == f"{name} tombstone"
    if name == "StreamsGroupMetadata":
        assert only_event(d)["type"] == "group_deleted"
    elif name == "StreamsGroupMemberMetadata":
        assert only_event(d)["type"] == "member_removed"
    else:
        assert d.events == []


def test_regular_expression_record_recognised():
    key = enc.Writer().int16(16).string("cg").string("orders-.*").done()
    d = decode_offsets_record(key, b"\x00\x00\x00", TS)
    assert d.record_type == "ConsumerGroupRegularExpression v0" and d.rejected_reason is None


# --- malformed input ---------------------------------------------------------------------------------
def _full_group_record():
    members = _members(3, "sticky") + [{
        "member_id": "consumer-3-ccc", "group_instance_id": None, "client_id": "consumer-3",
        "client_host": "/10.0.0.3", "subscription": enc.consumer_subscription(3, ["orders"], None),
        "assignment": enc.consumer_assignment(3, [])}]
    return enc.group_metadata_key("grp"), enc.group_metadata_value(3, "consumer", 7, "sticky", "consumer-1-aaa",
                                                                   members, current_state_ts=TS)


def test_truncation_names_the_field():
    key, value = _full_group_record()
    # find where members[2].client_id starts: cut the value right inside it
    cut = value.index(b"consumer-3", value.index(b"consumer-3-ccc") + len(b"consumer-3-ccc")) + 3
    d = decode_offsets_record(key, value[:cut], TS)
    assert d.rejected_reason == "truncated:GroupMetadataValue.members[2].client_id", d.rejected_reason
    assert decode_offsets_record(key[:5], value, TS).rejected_reason == "truncated:GroupMetadataKey.group"
    assert decode_offsets_record(b"\x00", value, TS).rejected_reason == "truncated:key.version"
    assert decode_offsets_record(key, b"\x00", TS).rejected_reason == "truncated:GroupMetadataValue.version"


def test_every_truncation_is_rejected_with_a_field_path():
    key, value = _full_group_record()
    for cut in range(len(value)):
        d = decode_offsets_record(key, value[:cut], TS)
        assert d.rejected_reason is not None and d.events == [], cut
        cls, _, path = d.rejected_reason.partition(":")
        assert cls in ("truncated", "bad_length", "bad_null"), d.rejected_reason
        assert path.startswith("GroupMetadataValue"), d.rejected_reason


def test_truncated_embedded_subscription_is_rejected():
    m = _members(2, "range")
    m[0]["subscription"] = m[0]["subscription"][:-3]
    value = enc.group_metadata_value(3, "consumer", 2, "range", "consumer-1-aaa", m)
    d = decode_offsets_record(enc.group_metadata_key("g"), value, TS)
    assert d.rejected_reason == "truncated:GroupMetadataValue.members[0].subscription.generation_id"


def test_corrupted_fields():
    key = enc.offset_commit_key("g", "t", 0)
    assert decode_offsets_record(enc.offset_commit_key("g", "t", -2), enc.offset_commit_value(1, 0), TS) \
        .rejected_reason == "bad_value:OffsetCommitKey.partition"
    bad_utf8 = b"\x00\x01\x00\x02\xff\xfe\x00\x01t\x00\x00\x00\x00"
    assert decode_offsets_record(bad_utf8, enc.offset_commit_value(1, 0), TS).rejected_reason == \
        "bad_utf8:OffsetCommitKey.group"
    assert decode_offsets_record(b"\x00\x01\xff\xf0", b"", TS).rejected_reason == "bad_length:OffsetCommitKey.group"
    assert decode_offsets_record(b"\x00\x01\xff\xff", b"", TS).rejected_reason == "bad_null:OffsetCommitKey.group"
    v4 = enc.offset_commit_value(4, 1, "m", TS)
    bad_varint = v4[:14] + b"\xff\xff\xff\xff\xff\x01"
    assert decode_offsets_record(key, bad_varint, TS).rejected_reason == "bad_varint:OffsetCommitValue.metadata"
    assert decode_offsets_record(key, b"\xff\xfe" + v4[2:], TS).rejected_reason == \
        "unsupported_value_version:OffsetCommitValue"
    assert decode_offsets_record(b"\x00\x63abc", None, TS).rejected_reason == "unknown_key_version:99"
    assert decode_offsets_record(None, None, TS).rejected_reason == "missing_key"
    huge_array = enc.Writer().int16(3).string("consumer").int32(1).string(None).string(None).int64(0) \
        .int32(1_000_000).done()
    assert decode_offsets_record(enc.group_metadata_key("g"), huge_array, TS).rejected_reason == \
        "truncated:GroupMetadataValue.members"


# --- dump lines ------------------------------------------------------------------------------------
def test_dump_lines():
    key = base64.b64encode(enc.offset_commit_key("g", "t", 1)).decode()
    value = base64.b64encode(enc.offset_commit_value(3, 77, "", TS)).decode()
    d = decode_dump_line(json.dumps({"ts": TS, "key": key, "value": value}))
    assert only_event(d)["offsets"] == [["t", 1, 77]]
    d = decode_dump_line(json.dumps({"ts": TS, "key": base64.b64encode(enc.group_metadata_key("g")).decode(),
                                     "value": None}))
    assert only_event(d)["type"] == "group_deleted"
    assert decode_dump_line("{nope").rejected_reason == "not_json"
    assert decode_dump_line("[1]").rejected_reason == "bad_dump_line:value"
    assert decode_dump_line(json.dumps({"key": key})).rejected_reason == "bad_dump_line:ts"
    assert decode_dump_line(json.dumps({"ts": TS, "key": "!!"})).rejected_reason == "bad_base64:key"
    assert decode_dump_line(json.dumps({"ts": TS, "key": None})).rejected_reason == "missing_key"
    assert decode_dump_line(b"\xff").rejected_reason == "not_json"


# --- fuzz ----------------------------------------------------------------------------------------------
_SEEDS = [
    (enc.offset_commit_key("g", "t", 1), enc.offset_commit_value(4, 5, "x", TS)),
    _full_group_record(),
    (enc.group_key(5, "cg", "m"), enc.cg_member_metadata_value("c", "/h", ["t"], classic=(1, [("range", b"")]))),
    (enc.group_key(8, "cg", "m"), enc.cg_current_assignment_value(3, 2, 0, [(T1, [0, 1])])),
    (enc.group_key(4, "cg"), enc.cg_partition_metadata_value([(T1, "t", 2)], racks={T1: {0: ["r"]}})),
]


def _check_no_escape(key, value):
    d = decode_offsets_record(key, value, TS)
    assert d.rejected_reason is None or not d.rejected_reason.startswith("decoder_error"), d.detail
    for ev in d.events:
        canonical(ev)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=64), st.one_of(st.none(), st.binary(max_size=256)))
def test_fuzz_random_bytes(key, value):
    _check_no_escape(key, value)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(range(len(_SEEDS))), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                                                     max_size=6), st.integers(0, 10_000))
def test_fuzz_mutated_records(seed, flips, cut):
    key, value = _SEEDS[seed]
    buf = bytearray(value)
    for pos, byte in flips:
        buf[pos % len(buf)] = byte
    _check_no_escape(key, bytes(buf[: max(cut, 2)]) if cut < len(buf) else bytes(buf))
