"""Decoder for the records of Kafka's internal `__consumer_offsets` topic.

Each record's key starts with an int16 that names the record type (Kafka calls it the key version; from 4.0
on it is the coordinator record type's `apiKey`), and each non-null value starts with an int16 value version.
The layouts follow Kafka's JSON message definitions (core/src/main/resources/common/message/ before 3.5,
group-coordinator/src/main/resources/common/message/ after), every version:

| key | record | value versions decoded | event |
| --- | --- | --- | --- |
| 0, 1 | OffsetCommit (key: group, topic, partition) | 0-4 (4 is flexible) | `commit` |
| 2 | GroupMetadata (key: group) | 0-4 (4 is flexible) | `generation_completed`, or `group_empty` when no members |
| 3 | ConsumerGroupMetadata (KIP-848) | 0 | `rebalance_started` (epoch bump) |
| 4 | ConsumerGroupPartitionMetadata | 0 | none (learns topic id -> name) |
| 5 | ConsumerGroupMemberMetadata | 0 | `join`; tombstone -> `member_removed` |
| 6 | ConsumerGroupTargetAssignmentMetadata | 0 | `generation_completed` (assignment epoch) |
| 7 | ConsumerGroupTargetAssignmentMember | 0 | none (decoded, counted) |
| 8 | ConsumerGroupCurrentMemberAssignment | 0 | `sync` (member epoch as generation) |
| 9-15 | ShareGroup* records (KIP-932) | - | counted; ShareGroupMetadata tombstone -> `group_deleted` |
| 16 | ConsumerGroupRegularExpression | - | counted |
| 17-23 | StreamsGroup* records (KIP-1071) | - | counted; StreamsGroupMetadata tombstone -> `group_deleted` |

Tombstones: a GroupMetadata / ConsumerGroupMetadata tombstone gives `group_deleted`; an OffsetCommit tombstone
(offset deletion or expiry) is only counted.

Within GroupMetadataValue the members' `subscription` and `assignment` bytes are decoded when the protocol
type is `consumer` (ConsumerProtocolSubscription v0-v3: topics, user data, owned partitions, generation id,
rack; ConsumerProtocolAssignment v0-v3), plus the sticky assignors' user data (StickyAssignorUserData v0/v1
for `sticky`, the bare generation of `cooperative-sticky`). Like Kafka, a newer consumer-protocol version is
read with the newest known layout, and unreadable sticky user data is ignored (Kafka's assignor ignores it too).

KIP-848 records name topics by topic id. The ids are resolved to names with the ConsumerGroupPartitionMetadata
records seen so far when a `topic_names` map is passed (`OffsetsTopicDecoder` keeps one); an unknown id is
written as its canonical UUID string.

Malformed input never raises: the result carries a `rejected_reason` naming the field that failed, e.g.
`truncated:GroupMetadataValue.members[2].client_id`. Reason classes: `missing_key`, `truncated`, `bad_length`,
`bad_null`, `bad_utf8`, `bad_varint`, `bad_value`, `bad_version`, `unknown_key_version`, `unsupported_value_version`,
`bad_timestamp`, and for `decode_dump_line` also `not_json`, `bad_dump_line`, `bad_base64`.
"""
from __future__ import annotations

import base64
import binascii
import json
import struct
import uuid
from typing import Callable

from rebalance_monitor.inputs.decoded import Decoded

_MAX_TS = 1 << 53


class DecodeError(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class Reader:
    """A cursor over bytes that reads Kafka protocol primitives, raising DecodeError with the field path."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def _take(self, n: int, path: str) -> int:
        start = self.pos
        if n > self.end - start:
            raise DecodeError(f"truncated:{path}", f"need {n} bytes, {self.end - start} left")
        self.pos = start + n
        return start

    def int8(self, path: str) -> int:
        return struct.unpack_from(">b", self.buf, self._take(1, path))[0]

    def int16(self, path: str) -> int:
        return struct.unpack_from(">h", self.buf, self._take(2, path))[0]

    def int32(self, path: str) -> int:
        return struct.unpack_from(">i", self.buf, self._take(4, path))[0]

    def int64(self, path: str) -> int:
        return struct.unpack_from(">q", self.buf, self._take(8, path))[0]

    def uuid(self, path: str) -> str:
        start = self._take(16, path)
        return str(uuid.UUID(bytes=bytes(self.buf[start:start + 16])))

    def uvarint(self, path: str) -> int:
        value = 0
        shift = 0
        for i in range(5):
            b = self.buf[self._take(1, path)]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                if i == 4 and b > 0x0F:
                    raise DecodeError(f"bad_varint:{path}", "more than 32 bits")
                return value
            shift += 7
        raise DecodeError(f"bad_varint:{path}", "varint longer than 5 bytes")

    # -- lengths -----------------------------------------------------------------------------------
    def _length(self, path: str, compact: bool, wide: bool, nullable: bool) -> int | None:
        """A length prefix; None for null. `wide`: int32 (bytes, arrays) rather than int16 (strings)."""
        if compact:
            n = self.uvarint(path) - 1
        else:
            n = self.int32(path) if wide else self.int16(path)
        if n == -1:
            if nullable:
                return None
            raise DecodeError(f"bad_null:{path}", "null where the schema does not allow it")
        if n < 0:
            raise DecodeError(f"bad_length:{path}", f"length {n}")
        return n

    def string(self, path: str, compact: bool = False, nullable: bool = False) -> str | None:
        n = self._length(path, compact, False, nullable)
        if n is None:
            return None
        start = self._take(n, path)
        try:
            return bytes(self.buf[start:start + n]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"bad_utf8:{path}", str(exc)) from None

    def bytes_(self, path: str, compact: bool = False, nullable: bool = False) -> bytes | None:
        n = self._length(path, compact, True, nullable)
        if n is None:
            return None
        start = self._take(n, path)
        return bytes(self.buf[start:start + n])

    def array(self, path: str, item: Callable[["Reader", str], object], compact: bool = False,
              nullable: bool = False, min_item_bytes: int = 1) -> list | None:
        n = self._length(path, compact, True, nullable)
        if n is None:
            return None
        if n * min_item_bytes > self.remaining():
            raise DecodeError(f"truncated:{path}", f"{n} entries cannot fit in {self.remaining()} bytes")
        return [item(self, f"{path}[{i}]") for i in range(n)]

    def tagged_fields(self, path: str, handlers: dict | None = None) -> dict:
        """Skip (or, for tags in `handlers`, decode) the tagged-field section of a flexible struct."""
        out = {}
        count = self.uvarint(f"{path}._tagged_fields")
        last = -1
        for _ in range(count):
            tag = self.uvarint(f"{path}._tagged_fields.tag")
            if tag <= last:
                raise DecodeError(f"bad_value:{path}._tagged_fields.tag", "tags must be in ascending order")
            last = tag
            size = self.uvarint(f"{path}._tagged_fields.size")
            start = self._take(size, f"{path}._tagged_fields[{tag}]")
            if handlers and tag in handlers:
                name, fn = handlers[tag]
                sub = Reader(self.buf, start, start + size)
                out[name] = fn(sub, f"{path}.{name}")
        return out


# --- helpers ------------------------------------------------------------------------------------------
def _partition(r: Reader, path: str) -> int:
    p = r.int32(path)
    if p < 0:
        raise DecodeError(f"bad_value:{path}", f"negative partition {p}")
    return p


def _host(client_host: str | None) -> str | None:
    """Kafka logs and stores InetAddress.toString(), e.g. `/10.0.0.1` or `name/10.0.0.1`: drop a leading `/`."""
    if client_host is None:
        return None
    return client_host[1:] if client_host.startswith("/") else client_host


def _event(etype: str, ts: int, group: str, **fields) -> dict:
    ev = {"v": 1, "type": etype, "ts": ts, "group": group}
    ev.update(fields)
    return ev


def _topic_partitions(r: Reader, path: str, compact: bool = False) -> list:
    """[{topic, partitions[int32]}] -> [[topic, p], ...] (protocol order kept)."""
    def entry(rr: Reader, p: str):
        topic = rr.string(f"{p}.topic", compact=compact)
        parts = rr.array(f"{p}.partitions", _partition, compact=compact, min_item_bytes=4)
        if compact:
            rr.tagged_fields(p)
        return [[topic, x] for x in parts]
    out = []
    for chunk in r.array(path, entry, compact=compact, min_item_bytes=3 if compact else 6):
        out.extend(chunk)
    return out


# --- the consumer embedded protocol ----------------------------------------------------------------------
def decode_consumer_subscription(data: bytes, path: str) -> dict:
    """ConsumerProtocolSubscription v0-v3 (a newer version is read as v3, as the Java client does)."""
    r = Reader(data)
    version = r.int16(f"{path}.version")
    if version < 0:
        raise DecodeError(f"bad_version:{path}.version", f"version {version}")
    out = {"version": version}
    out["topics"] = r.array(f"{path}.topics", lambda rr, p: rr.string(p), min_item_bytes=2)
    out["user_data"] = r.bytes_(f"{path}.user_data", nullable=True)
    if version >= 1:
        out["owned"] = _topic_partitions(r, f"{path}.owned_partitions")
    if version >= 2:
        out["generation"] = r.int32(f"{path}.generation_id")
    if version >= 3:
        out["rack"] = r.string(f"{path}.rack_id", nullable=True)
    return out


def decode_consumer_assignment(data: bytes, path: str) -> dict:
    """ConsumerProtocolAssignment v0-v3."""
    r = Reader(data)
    version = r.int16(f"{path}.version")
    if version < 0:
        raise DecodeError(f"bad_version:{path}.version", f"version {version}")
    partitions = _topic_partitions(r, f"{path}.assigned_partitions")
    user_data = r.bytes_(f"{path}.user_data", nullable=True)
    return {"version": version, "partitions": partitions, "user_data": user_data}


def decode_sticky_user_data(data: bytes) -> dict | None:
    """StickyAssignorUserData v1 (previous assignment + generation), falling back to v0 (no generation).

    None when neither layout reads (the StickyAssignor then ignores the user data as well)."""
    for with_generation in (True, False):
        try:
            r = Reader(data)
            owned = _topic_partitions(r, "sticky_user_data.previous_assignment")
            generation = r.int32("sticky_user_data.generation") if with_generation else None
            return {"owned": owned, "generation": generation}
        except DecodeError:
            continue
    return None


def decode_cooperative_user_data(data: bytes) -> int | None:
    """CooperativeStickyAssignor user data: a bare int32 generation."""
    if data is not None and len(data) >= 4:
        return struct.unpack_from(">i", data, 0)[0]
    return None


# --- OffsetCommit -----------------------------------------------------------------------------------------
def _offset_commit_key(r: Reader) -> dict:
    return {"group": r.string("OffsetCommitKey.group"), "topic": r.string("OffsetCommitKey.topic"),
            "partition": _partition(r, "OffsetCommitKey.partition")}


def _offset_commit_value(r: Reader, version: int) -> dict:
    flexible = version >= 4
    p = "OffsetCommitValue"
    out = {"offset": r.int64(f"{p}.offset")}
    if version >= 3:
        out["leader_epoch"] = r.int32(f"{p}.leader_epoch")
    out["metadata"] = r.string(f"{p}.metadata", compact=flexible)
    out["commit_timestamp"] = r.int64(f"{p}.commit_timestamp")
    if version == 1:
        out["expire_timestamp"] = r.int64(f"{p}.expire_timestamp")
    if flexible:
        r.tagged_fields(p)
    return out


# --- GroupMetadata ----------------------------------------------------------------------------------------
def _group_metadata_value(r: Reader, version: int) -> dict:
    flexible = version >= 4
    p = "GroupMetadataValue"
    out = {"protocol_type": r.string(f"{p}.protocol_type", compact=flexible),
           "generation": r.int32(f"{p}.generation"),
           "protocol": r.string(f"{p}.protocol", compact=flexible, nullable=True),
           "leader": r.string(f"{p}.leader", compact=flexible, nullable=True)}
    if version >= 2:
        out["current_state_timestamp"] = r.int64(f"{p}.current_state_timestamp")

    def member(rr: Reader, mp: str) -> dict:
        m = {"member_id": rr.string(f"{mp}.member_id", compact=flexible)}
        if version >= 3:
            m["group_instance_id"] = rr.string(f"{mp}.group_instance_id", compact=flexible, nullable=True)
        m["client_id"] = rr.string(f"{mp}.client_id", compact=flexible)
        m["client_host"] = rr.string(f"{mp}.client_host", compact=flexible)
        if version >= 1:
            m["rebalance_timeout"] = rr.int32(f"{mp}.rebalance_timeout")
        m["session_timeout"] = rr.int32(f"{mp}.session_timeout")
        m["subscription"] = rr.bytes_(f"{mp}.subscription", compact=flexible)
        m["assignment"] = rr.bytes_(f"{mp}.assignment", compact=flexible)
        if flexible:
            rr.tagged_fields(mp)
        return m

    out["members"] = r.array(f"{p}.members", member, compact=flexible)
    if flexible:
        r.tagged_fields(p)
    return out


def _member_info(m: dict, index: int, protocol_type: str, protocol: str | None) -> dict:
    info = {"member_id": m["member_id"], "client_id": m["client_id"], "host": _host(m["client_host"]),
            "session_timeout_ms": m["session_timeout"]}
    if "group_instance_id" in m:
        info["group_instance_id"] = m["group_instance_id"]
    if "rebalance_timeout" in m:
        info["rebalance_timeout_ms"] = m["rebalance_timeout"]
    if protocol_type != "consumer":
        return info
    mp = f"GroupMetadataValue.members[{index}]"
    if m["subscription"]:
        sub = decode_consumer_subscription(m["subscription"], f"{mp}.subscription")
        info["topics"] = sub["topics"]
        owned = sub.get("owned")
        generation = sub.get("generation")
        if sub.get("rack") is not None:
            info["rack"] = sub["rack"]
        user_data = sub.get("user_data")
        if protocol == "sticky" and user_data:
            sticky = decode_sticky_user_data(user_data)
            if sticky is not None:
                owned = sticky["owned"]
                if sticky["generation"] is not None:
                    generation = sticky["generation"]
        elif protocol == "cooperative-sticky" and (generation is None or generation < 0) and user_data:
            coop = decode_cooperative_user_data(user_data)
            if coop is not None:
                generation = coop
        if owned is not None:
            info["owned"] = owned
        if generation is not None and generation >= 0:
            info["generation"] = generation
    if m["assignment"]:
        info["assignment"] = decode_consumer_assignment(m["assignment"], f"{mp}.assignment")["partitions"]
    elif m["assignment"] is not None:
        info["assignment"] = []
    return info


# --- KIP-848 records -----------------------------------------------------------------------------------
def _cg_metadata_value(r: Reader) -> dict:
    p = "ConsumerGroupMetadataValue"
    epoch = r.int32(f"{p}.epoch")
    tags = r.tagged_fields(p, {0: ("metadata_hash", lambda rr, pp: rr.int64(pp)),
                               1: ("creation_time_ms", lambda rr, pp: rr.int64(pp))})
    return {"epoch": epoch, **tags}


def _cg_partition_metadata_value(r: Reader) -> dict:
    p = "ConsumerGroupPartitionMetadataValue"

    def racks(rr: Reader, pp: str):
        part = _partition(rr, f"{pp}.partition")
        names = rr.array(f"{pp}.racks", lambda r3, p3: r3.string(p3, compact=True), compact=True)
        rr.tagged_fields(pp)
        return part, names

    def topic(rr: Reader, tp: str):
        tid = rr.uuid(f"{tp}.topic_id")
        name = rr.string(f"{tp}.topic_name", compact=True)
        n = rr.int32(f"{tp}.num_partitions")
        rr.array(f"{tp}.partition_metadata", racks, compact=True)
        rr.tagged_fields(tp)
        return {"topic_id": tid, "topic_name": name, "num_partitions": n}

    topics = r.array(f"{p}.topics", topic, compact=True)
    r.tagged_fields(p)
    return {"topics": topics}


def _cg_member_metadata_value(r: Reader) -> dict:
    p = "ConsumerGroupMemberMetadataValue"
    out = {"instance_id": r.string(f"{p}.instance_id", compact=True, nullable=True),
           "rack_id": r.string(f"{p}.rack_id", compact=True, nullable=True),
           "client_id": r.string(f"{p}.client_id", compact=True),
           "client_host": r.string(f"{p}.client_host", compact=True),
           "subscribed_topic_names": r.array(f"{p}.subscribed_topic_names",
                                             lambda rr, pp: rr.string(pp, compact=True), compact=True),
           "subscribed_topic_regex": r.string(f"{p}.subscribed_topic_regex", compact=True, nullable=True),
           "rebalance_timeout_ms": r.int32(f"{p}.rebalance_timeout_ms"),
           "server_assignor": r.string(f"{p}.server_assignor", compact=True, nullable=True)}

    def classic(rr: Reader, cp: str):
        if rr.uvarint(cp) <= 0:
            return None
        session = rr.int32(f"{cp}.session_timeout_ms")

        def proto(r3: Reader, pp: str):
            name = r3.string(f"{pp}.name", compact=True)
            r3.bytes_(f"{pp}.metadata", compact=True)
            r3.tagged_fields(pp)
            return name

        protocols = rr.array(f"{cp}.supported_protocols", proto, compact=True)
        rr.tagged_fields(cp)
        return {"session_timeout_ms": session, "protocols": protocols}

    out.update(r.tagged_fields(p, {0: ("classic_member_metadata", classic)}))
    return out


def _uuid_partitions(r: Reader, path: str) -> list:
    def entry(rr: Reader, p: str):
        tid = rr.uuid(f"{p}.topic_id")
        parts = rr.array(f"{p}.partitions", _partition, compact=True, min_item_bytes=4)
        rr.tagged_fields(p)
        return tid, parts
    return r.array(path, entry, compact=True, min_item_bytes=18)


def _cg_target_member_value(r: Reader) -> dict:
    p = "ConsumerGroupTargetAssignmentMemberValue"
    out = {"topic_partitions": _uuid_partitions(r, f"{p}.topic_partitions")}
    r.tagged_fields(p)
    return out


def _cg_target_metadata_value(r: Reader) -> dict:
    p = "ConsumerGroupTargetAssignmentMetadataValue"
    out = {"assignment_epoch": r.int32(f"{p}.assignment_epoch")}
    r.tagged_fields(p)
    return out


# The coordinator's MemberState codes (ConsumerGroupCurrentMemberAssignmentValue.State)
KIP848_MEMBER_STATES = {0: "stable", 1: "unrevoked_partitions", 2: "unreleased_partitions"}


def _cg_current_assignment_value(r: Reader) -> dict:
    p = "ConsumerGroupCurrentMemberAssignmentValue"
    out = {"member_epoch": r.int32(f"{p}.member_epoch"),
           "previous_member_epoch": r.int32(f"{p}.previous_member_epoch"),
           "state": r.int8(f"{p}.state"),
           "assigned_partitions": _uuid_partitions(r, f"{p}.assigned_partitions"),
           "partitions_pending_revocation": _uuid_partitions(r, f"{p}.partitions_pending_revocation")}
    r.tagged_fields(p)
    return out


def _resolve(pairs: list, topic_names: dict | None) -> list:
    names = topic_names or {}
    out = []
    for tid, parts in pairs:
        name = names.get(tid, tid)
        out.extend([name, x] for x in parts)
    return out


# --- record type table ------------------------------------------------------------------------------
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
    9: ("ShareGroupPartitionMetadata", None, None),
    10: ("ShareGroupMemberMetadata", "member", None),
    11: ("ShareGroupMetadata", None, None),
    12: ("ShareGroupTargetAssignmentMetadata", None, None),
    13: ("ShareGroupTargetAssignmentMember", "member", None),
    14: ("ShareGroupCurrentMemberAssignment", "member", None),
    15: ("ShareGroupStatePartitionMetadata", None, None),
    16: ("ConsumerGroupRegularExpression", "regex", None),
    17: ("StreamsGroupMetadata", None, None),
    18: ("StreamsGroupPartitionMetadata", None, None),
    19: ("StreamsGroupMemberMetadata", "member", None),
    20: ("StreamsGroupTargetAssignmentMetadata", None, None),
    21: ("StreamsGroupTargetAssignmentMember", "member", None),
    22: ("StreamsGroupCurrentMemberAssignment", "member", None),
    23: ("StreamsGroupTopology", None, None),
}
_GROUP_RECORDS_WITH_TOMBSTONE_DELETE = {"GroupMetadata", "ConsumerGroupMetadata", "ShareGroupMetadata",
                                        "StreamsGroupMetadata"}


def _pick_ts(ts_ms, *fallbacks) -> int:
    for cand in (ts_ms, *fallbacks):
        if isinstance(cand, int) and not isinstance(cand, bool) and 0 <= cand < _MAX_TS:
            return cand
    raise DecodeError("bad_timestamp", f"no usable timestamp (record ts {ts_ms!r})")


def _decode(key: bytes, value: bytes | None, ts_ms: int, topic_names: dict | None) -> Decoded:
    kr = Reader(key)
    key_version = kr.int16("key.version")
    entry = RECORD_TYPES.get(key_version)
    if entry is None:
        return Decoded([], rejected_reason=f"unknown_key_version:{key_version}",
                       detail="not a record type this decoder knows (a newer Kafka?)")
    name, key_kind, max_value_version = entry

    # -- key --
    if key_kind == "offset":
        k = _offset_commit_key(kr)
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
            events.append(_event("group_deleted", _pick_ts(ts_ms), group))
        elif name == "ConsumerGroupMemberMetadata":
            events.append(_event("member_removed", _pick_ts(ts_ms), group, member_id=k["member_id"],
                                 cause="unknown", reason="member metadata deleted (consumer group protocol)"))
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
        v = _offset_commit_value(vr, effective)
        ts = _pick_ts(ts_ms, v["commit_timestamp"])
        return Decoded([_event("commit", ts, group, offsets=[[k["topic"], k["partition"], v["offset"]]])],
                       record_type=rtype)

    if name == "GroupMetadata":
        v = _group_metadata_value(vr, effective)
        ts = _pick_ts(ts_ms, v.get("current_state_timestamp"))
        if not v["members"]:
            return Decoded([_event("group_empty", ts, group, generation=v["generation"])], record_type=rtype)
        members = [_member_info(m, i, v["protocol_type"], v["protocol"]) for i, m in enumerate(v["members"])]
        ev = _event("generation_completed", ts, group, generation=v["generation"], protocol=v["protocol"],
                    leader=v["leader"], protocol_type=v["protocol_type"], members=members)
        return Decoded([ev], record_type=rtype)

    if name == "ConsumerGroupMetadata":
        v = _cg_metadata_value(vr)
        epoch = v["epoch"]
        ev = _event("rebalance_started", _pick_ts(ts_ms), group, generation=max(epoch - 1, 0),
                    reason=f"group epoch bumped to {epoch}")
        return Decoded([ev], record_type=rtype)

    if name == "ConsumerGroupPartitionMetadata":
        v = _cg_partition_metadata_value(vr)
        if topic_names is not None:
            for t in v["topics"]:
                topic_names[t["topic_id"]] = t["topic_name"]
        return Decoded([], record_type=rtype)

    if name == "ConsumerGroupMemberMetadata":
        v = _cg_member_metadata_value(vr)
        classic = v.get("classic_member_metadata")
        protocols = classic["protocols"] if classic else ([v["server_assignor"]] if v["server_assignor"] else [])
        ev = _event("join", _pick_ts(ts_ms), group, member_id=k["member_id"],
                    group_instance_id=v["instance_id"], client_id=v["client_id"], host=_host(v["client_host"]),
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
        v = _cg_target_metadata_value(vr)
        ev = _event("generation_completed", _pick_ts(ts_ms), group, generation=v["assignment_epoch"],
                    protocol=None, leader=None, protocol_type="consumer")
        return Decoded([ev], record_type=rtype)

    if name == "ConsumerGroupTargetAssignmentMember":
        _cg_target_member_value(vr)
        return Decoded([], record_type=rtype)

    if name == "ConsumerGroupCurrentMemberAssignment":
        v = _cg_current_assignment_value(vr)
        ev = _event("sync", _pick_ts(ts_ms), group, member_id=k["member_id"], generation=v["member_epoch"],
                    protocol=None, leader=None, assignment=_resolve(v["assigned_partitions"], topic_names),
                    member_state=KIP848_MEMBER_STATES.get(v["state"], "unknown"))
        return Decoded([ev], record_type=rtype)

    return Decoded([], record_type=rtype)  # pragma: no cover - every table entry is handled above


def decode_offsets_record(key: bytes | None, value: bytes | None, ts_ms: int,
                          topic_names: dict | None = None) -> Decoded:
    """Decode one `__consumer_offsets` record into canonical events. Never raises.

    `ts_ms` is the record's timestamp (the coordinator's clock when it appended the record); when it is not
    usable (negative, e.g. -1), the commit timestamp / current-state timestamp inside the value is used.
    `topic_names`, when given, maps topic ids to names for KIP-848 records and is updated from
    ConsumerGroupPartitionMetadata records.
    """
    if key is None:
        return Decoded([], rejected_reason="missing_key", detail="__consumer_offsets records always have a key")
    try:
        key = bytes(key)
        value = None if value is None else bytes(value)
        return _decode(key, value, ts_ms, topic_names)
    except DecodeError as err:
        return Decoded([], rejected_reason=err.reason, detail=err.detail)
    except (TypeError, ValueError, OverflowError, RecursionError, MemoryError) as exc:
        return Decoded([], rejected_reason="decoder_error", detail=f"{type(exc).__name__}: {exc}"[:300])


class OffsetsTopicDecoder:
    """Stateful wrapper: remembers topic id -> name from ConsumerGroupPartitionMetadata records."""

    def __init__(self):
        self.topic_names: dict[str, str] = {}

    def decode(self, key: bytes | None, value: bytes | None, ts_ms: int) -> Decoded:
        return decode_offsets_record(key, value, ts_ms, self.topic_names)

    def decode_dump_line(self, line: str | bytes) -> Decoded:
        return decode_dump_line(line, self.topic_names)


def _b64(value, field: str) -> bytes:
    if not isinstance(value, str):
        raise DecodeError(f"bad_dump_line:{field}", "expected a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DecodeError(f"bad_base64:{field}", str(exc)) from None


def decode_dump_line(line: str | bytes, topic_names: dict | None = None) -> Decoded:
    """One line of the replay format `{"ts": ms, "key": base64, "value": base64 | null}`. Never raises."""
    try:
        if isinstance(line, (bytes, bytearray)):
            line = bytes(line).decode("utf-8")
        obj = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return Decoded([], rejected_reason="not_json", detail=str(exc)[:200])
    try:
        if not isinstance(obj, dict):
            raise DecodeError("bad_dump_line:value", "expected a JSON object")
        ts = obj.get("ts")
        if not isinstance(ts, int) or isinstance(ts, bool):
            raise DecodeError("bad_dump_line:ts", "expected integer epoch milliseconds")
        if "key" not in obj or obj["key"] is None:
            return Decoded([], rejected_reason="missing_key")
        key = _b64(obj["key"], "key")
        value = obj.get("value")
        value = None if value is None else _b64(value, "value")
    except DecodeError as err:
        return Decoded([], rejected_reason=err.reason, detail=err.detail)
    return decode_offsets_record(key, value, ts, topic_names)
