"""One `__consumer_offsets` record (key, value) to the canonical events it means: the record type table (the
key's int16) and, per record type, the value decoded and turned into events (`decode_record`)."""
from __future__ import annotations

from rebalance_monitor.core.vocabulary import SHARE_ASSIGNOR, GroupProtocol
from rebalance_monitor.decoding.decoded import Decoded

from .classic_values import group_metadata_value, member_info, offset_commit_key, offset_commit_value
from .consumer_group_values import (KIP848_MEMBER_STATES, cg_current_assignment_value, cg_member_metadata_value,
                                    cg_metadata_value, cg_partition_metadata_value, target_member_value,
                                    cg_target_metadata_value, resolve_topic_ids)
from .share_group_values import (learn_topic_names, named_topic_ids, sg_current_assignment_value,
                                 sg_member_metadata_value, sg_metadata_value, sg_state_partition_metadata_value, sg_target_member_value,
                                 sg_target_metadata_value)
from .streams_group_values import streams_group_events
from .wire import MAX_TS, DecodeError, Reader, host_of

SHARE = GroupProtocol.SHARE.value  # a share group's members' group_protocol and its generations' protocol_type


def event(etype: str, ts: int, group: str, **fields) -> dict:
    ev = {"v": 1, "type": etype, "ts": ts, "group": group}
    ev.update(fields)
    return ev



# key version -> (record name, key fields after the group id: "member" | "regex" | None, max value version)
RECORD_TYPES: dict[int, tuple[str, str | None, int | None]] = {
    0: ("OffsetCommit", "offset", 4),
    1: ("OffsetCommit", "offset", 4),
    2: ("GroupMetadata", None, 4),
    3: ("ConsumerGroupMetadata", None, 0),
    4: ("ConsumerGroupPartitionMetadata", None, 0),
    5: ("ConsumerGroupMemberMetadata", "member", 0),
    6: ("ConsumerGroupTargetAssignmentMetadata", None, 0),
    7: ("ConsumerGroupTargetAssignmentMember", "member", 0),
    8: ("ConsumerGroupCurrentMemberAssignment", "member", 0),
    9: ("ShareGroupPartitionMetadata", None, 0),  # Kafka 4.0 only
    10: ("ShareGroupMemberMetadata", "member", 0),
    11: ("ShareGroupMetadata", None, 0),
    12: ("ShareGroupTargetAssignmentMetadata", None, 0),
    13: ("ShareGroupTargetAssignmentMember", "member", 0),
    14: ("ShareGroupCurrentMemberAssignment", "member", 0),
    15: ("ShareGroupStatePartitionMetadata", None, 0),
    16: ("ConsumerGroupRegularExpression", "regex", None),
    17: ("StreamsGroupMetadata", None, 0),
    18: ("StreamsGroupPartitionMetadata", None, 0),  # builds before 4.1 only
    19: ("StreamsGroupMemberMetadata", "member", 0),
    20: ("StreamsGroupTargetAssignmentMetadata", None, 0),
    21: ("StreamsGroupTargetAssignmentMember", "member", 0),
    22: ("StreamsGroupCurrentMemberAssignment", "member", 0),
    23: ("StreamsGroupTopology", None, 0),
}
_GROUP_RECORDS_WITH_TOMBSTONE_DELETE = {"GroupMetadata", "ConsumerGroupMetadata", "ShareGroupMetadata",
                                        "StreamsGroupMetadata"}


def pick_ts(ts_ms, *fallbacks) -> int:
    for cand in (ts_ms, *fallbacks):
        if isinstance(cand, int) and not isinstance(cand, bool) and 0 <= cand < MAX_TS:
            return cand
    raise DecodeError("bad_timestamp", f"no usable timestamp (record ts {ts_ms!r})")


def decode_record(key: bytes, value: bytes | None, ts_ms: int, topic_names: dict | None) -> Decoded:
    kr = Reader(key)
    key_version = kr.int16("key.version")
    entry = RECORD_TYPES.get(key_version)
    if entry is None:
        return Decoded([], rejected_reason=f"unknown_key_version:{key_version}",
                       detail="not a record type this decoder knows (a newer Kafka?)")
    name, key_kind, max_value_version = entry

    # -- key --
    if key_kind == "offset":
        k = offset_commit_key(kr)
        group = k["group"]
    else:
        kp = f"{name}Key"
        group = kr.string(f"{kp}.group" if name == "GroupMetadata" else f"{kp}.group_id")
        k = {"group": group}
        if key_kind == "member":
            k["member_id"] = kr.string(f"{kp}.member_id")
        elif key_kind == "regex":
            k["regex"] = kr.string(f"{kp}.regular_expression")

    # -- tombstones --
    if value is None:
        rtype = f"{name} tombstone"
        events: list[dict] = []
        if name in _GROUP_RECORDS_WITH_TOMBSTONE_DELETE:
            events.append(event("group_deleted", pick_ts(ts_ms), group))
        elif name == "ConsumerGroupMemberMetadata":
            events.append(event("member_removed", pick_ts(ts_ms), group, member_id=k["member_id"],
                                 cause="unknown", reason="member metadata deleted (consumer group protocol)"))
        elif name in ("ShareGroupMemberMetadata", "StreamsGroupMemberMetadata"):
            family = "share" if name.startswith("Share") else "streams"
            events.append(event("member_removed", pick_ts(ts_ms), group, member_id=k["member_id"],
                                 cause="unknown", reason=f"member metadata deleted ({family} group protocol)"))
        return Decoded(events, record_type=rtype)

    vr = Reader(value)
    value_version = vr.int16(f"{name}Value.version")
    rtype = f"{name} v{value_version}"
    if max_value_version is None:  # recognised and counted only
        return Decoded([], record_type=rtype)
    if value_version < 0:
        raise DecodeError(f"unsupported_value_version:{name}Value", f"version {value_version}")
    # Every decoded value type is flexible at its newest version, and KIP-915 allows a newer version to add
    # only tagged fields: read a newer version with the newest known layout (unknown tags are skipped).
    effective = min(value_version, max_value_version)

    if name == "OffsetCommit":
        v = offset_commit_value(vr, effective)
        ts = pick_ts(ts_ms, v["commit_timestamp"])
        return Decoded([event("commit", ts, group, offsets=[[k["topic"], k["partition"], v["offset"]]])],
                       record_type=rtype)

    if name == "GroupMetadata":
        v = group_metadata_value(vr, effective)
        ts = pick_ts(ts_ms, v.get("current_state_timestamp"))
        if not v["members"]:
            return Decoded([event("group_empty", ts, group, generation=v["generation"])], record_type=rtype)
        members = [member_info(m, i, v["protocol_type"], v["protocol"]) for i, m in enumerate(v["members"])]
        ev = event("generation_completed", ts, group, generation=v["generation"], protocol=v["protocol"],
                    leader=v["leader"], protocol_type=v["protocol_type"], members=members)
        return Decoded([ev], record_type=rtype)

    if name == "ConsumerGroupMetadata":
        v = cg_metadata_value(vr)
        epoch = v["epoch"]
        ev = event("rebalance_started", pick_ts(ts_ms), group, generation=max(epoch - 1, 0),
                    reason=f"group epoch bumped to {epoch}")
        return Decoded([ev], record_type=rtype)

    if name.startswith("StreamsGroup"):
        return Decoded(streams_group_events(name, k, vr, lambda: pick_ts(ts_ms), topic_names, event),
                       record_type=rtype)

    if name.startswith("ShareGroup"):
        return Decoded(share_group_events(name, k, vr, ts_ms, topic_names), record_type=rtype)

    if name == "ConsumerGroupPartitionMetadata":
        v = cg_partition_metadata_value(vr)
        if topic_names is not None:
            for t in v["topics"]:
                topic_names[t["topic_id"]] = t["topic_name"]
        return Decoded([], record_type=rtype)

    if name == "ConsumerGroupMemberMetadata":
        v = cg_member_metadata_value(vr)
        classic = v.get("classic_member_metadata")
        protocols = classic["protocols"] if classic else ([v["server_assignor"]] if v["server_assignor"] else [])
        ev = event("join", pick_ts(ts_ms), group, member_id=k["member_id"],
                    group_instance_id=v["instance_id"], client_id=v["client_id"], host=host_of(v["client_host"]),
                    protocols=protocols, topics=v["subscribed_topic_names"],
                    rebalance_timeout_ms=v["rebalance_timeout_ms"])
        if not classic:  # a KIP-848 member: it never rejoins, every group epoch includes it until it leaves
            ev["group_protocol"] = "consumer"
        if classic:
            ev["session_timeout_ms"] = classic["session_timeout_ms"]
        if v["rack_id"] is not None:
            ev["rack"] = v["rack_id"]
        return Decoded([ev], record_type=rtype)

    if name == "ConsumerGroupTargetAssignmentMetadata":
        v = cg_target_metadata_value(vr)
        ev = event("generation_completed", pick_ts(ts_ms), group, generation=v["assignment_epoch"],
                    protocol=None, leader=None, protocol_type="consumer")
        return Decoded([ev], record_type=rtype)

    if name == "ConsumerGroupTargetAssignmentMember":
        target_member_value(vr)
        return Decoded([], record_type=rtype)

    if name == "ConsumerGroupCurrentMemberAssignment":
        v = cg_current_assignment_value(vr)
        ev = event("sync", pick_ts(ts_ms), group, member_id=k["member_id"], generation=v["member_epoch"],
                    protocol=None, leader=None, assignment=resolve_topic_ids(v["assigned_partitions"], topic_names),
                    member_state=KIP848_MEMBER_STATES.get(v["state"], "unknown"))
        return Decoded([ev], record_type=rtype)

    return Decoded([], record_type=rtype)  # pragma: no cover - every table entry is handled above


def share_group_events(name: str, k: dict, vr: Reader, ts_ms: int, topic_names: dict | None) -> list[dict]:
    """The events of a share group's record (KIP-932), as its consumer-group (KIP-848) twin gives them: the group
    epoch's bump starts a rebalance, a member's metadata is its join, the target assignment's epoch completes the
    generation, a member's current assignment is its sync. Members carry `group_protocol` `share` and the
    assignor `simple`; partitions are shared, nothing is revoked."""
    group = k["group"]
    if name == "ShareGroupMetadata":
        epoch = sg_metadata_value(vr)["epoch"]
        return [event("rebalance_started", pick_ts(ts_ms), group, generation=max(epoch - 1, 0),
                      reason=f"share group epoch bumped to {epoch}")]
    if name == "ShareGroupMemberMetadata":
        v = sg_member_metadata_value(vr)
        ev = event("join", pick_ts(ts_ms), group, member_id=k["member_id"], group_instance_id=None,
                   client_id=v["client_id"], host=host_of(v["client_host"]), protocols=[SHARE_ASSIGNOR],
                   topics=v["subscribed_topic_names"], group_protocol=SHARE)
        if v["rack_id"] is not None:
            ev["rack"] = v["rack_id"]
        return [ev]
    if name == "ShareGroupTargetAssignmentMetadata":
        v = sg_target_metadata_value(vr)
        return [event("generation_completed", pick_ts(ts_ms), group, generation=v["assignment_epoch"],
                      protocol=SHARE_ASSIGNOR, leader=None, protocol_type=SHARE)]
    if name == "ShareGroupTargetAssignmentMember":
        sg_target_member_value(vr)
        return []
    if name == "ShareGroupCurrentMemberAssignment":
        v = sg_current_assignment_value(vr)
        ev = event("sync", pick_ts(ts_ms), group, member_id=k["member_id"], generation=v["member_epoch"],
                   protocol=SHARE_ASSIGNOR, leader=None,
                   assignment=resolve_topic_ids(v["assigned_partitions"], topic_names),
                   member_state=KIP848_MEMBER_STATES.get(v["state"], "unknown"))
        ids = named_topic_ids(v["assigned_partitions"], topic_names)
        if ids:  # the simple assignor's tie-breaks follow the topics' ids
            ev["topic_ids"] = ids
        return [ev]
    if name == "ShareGroupStatePartitionMetadata":
        v = sg_state_partition_metadata_value(vr)
        learn_topic_names(v, topic_names)
        return [event("share_partitions", pick_ts(ts_ms), group, initialized=[
            [t["topic_name"], p] for t in v["initialized_topics"] for p in t["partitions"]])]
    # ShareGroupPartitionMetadata (Kafka 4.0): ConsumerGroupPartitionMetadataValue's layout
    v = cg_partition_metadata_value(vr, "ShareGroupPartitionMetadataValue")
    if topic_names is not None:
        for t in v["topics"]:
            topic_names[t["topic_id"]] = t["topic_name"]
    return []
