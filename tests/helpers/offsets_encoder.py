"""Test-only encoder: builds `__consumer_offsets` records byte by byte from Kafka's JSON message definitions.

Written independently of the decoder (it shares no code with it) so that round trips check the decoder
against the definitions, not against itself. Layout notes:

* non-flexible: string = int16 length + UTF-8 (-1 null); bytes = int32 length (-1 null); array = int32 count.
* flexible: compact string / bytes / array = unsigned varint (length + 1, 0 for null); every struct ends with
  a tagged-field section (uvarint count, then per field uvarint tag, uvarint size, data).
* key = int16 key version (record type) + key fields; value = int16 value version + value fields.
"""
from __future__ import annotations

import struct
import uuid as uuidlib


class Writer:
    def __init__(self, flexible: bool = False):
        self.out = bytearray()
        self.flexible = flexible

    def raw(self, b: bytes) -> "Writer":
        self.out += b
        return self

    def int8(self, v: int) -> "Writer":
        return self.raw(struct.pack(">b", v))

    def int16(self, v: int) -> "Writer":
        return self.raw(struct.pack(">h", v))

    def int32(self, v: int) -> "Writer":
        return self.raw(struct.pack(">i", v))

    def int64(self, v: int) -> "Writer":
        return self.raw(struct.pack(">q", v))

    def uvarint(self, v: int) -> "Writer":
        while True:
            b = v & 0x7F
            v >>= 7
            if v:
                self.out.append(b | 0x80)
            else:
                self.out.append(b)
                return self

    def uuid(self, s: str) -> "Writer":
        return self.raw(uuidlib.UUID(s).bytes)

    def string(self, s: str | None) -> "Writer":
        if s is None:
            return self.uvarint(0) if self.flexible else self.int16(-1)
        data = s.encode("utf-8")
        if self.flexible:
            self.uvarint(len(data) + 1)
        else:
            self.int16(len(data))
        return self.raw(data)

    def bytes_(self, b: bytes | None) -> "Writer":
        if b is None:
            return self.uvarint(0) if self.flexible else self.int32(-1)
        if self.flexible:
            self.uvarint(len(b) + 1)
        else:
            self.int32(len(b))
        return self.raw(b)

    def count(self, n: int | None) -> "Writer":
        if n is None:
            return self.uvarint(0) if self.flexible else self.int32(-1)
        return self.uvarint(n + 1) if self.flexible else self.int32(n)

    def tags(self, fields: dict[int, bytes] | None = None) -> "Writer":
        fields = fields or {}
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag).uvarint(len(fields[tag])).raw(fields[tag])
        return self

    def done(self) -> bytes:
        return bytes(self.out)


def _by_topic(tps) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = {}
    for t, p in tps:
        grouped.setdefault(t, []).append(p)
    return list(grouped.items())


def _write_topic_partitions(w: Writer, tps) -> None:
    groups = _by_topic(tps)
    w.count(len(groups))
    for topic, parts in groups:
        w.string(topic)
        w.count(len(parts))
        for p in parts:
            w.int32(p)
        if w.flexible:
            w.tags()


# --- consumer embedded protocol (ConsumerProtocolSubscription / ConsumerProtocolAssignment, never flexible)
def consumer_subscription(version: int, topics, user_data: bytes | None = None, owned=(), generation: int = -1,
                          rack: str | None = None) -> bytes:
    w = Writer().int16(version)
    w.count(len(topics))
    for t in topics:
        w.string(t)
    w.bytes_(user_data)
    if version >= 1:
        _write_topic_partitions(w, owned)
    if version >= 2:
        w.int32(generation)
    if version >= 3:
        w.string(rack)
    return w.done()


def consumer_assignment(version: int, partitions, user_data: bytes | None = None) -> bytes:
    w = Writer().int16(version)
    _write_topic_partitions(w, partitions)
    w.bytes_(user_data)
    return w.done()


def sticky_user_data(owned, generation: int | None = None) -> bytes:
    """StickyAssignorUserData v1 (with generation) or v0 (generation None)."""
    w = Writer()
    _write_topic_partitions(w, owned)
    if generation is not None:
        w.int32(generation)
    return w.done()


def cooperative_user_data(generation: int) -> bytes:
    return struct.pack(">i", generation)


# --- OffsetCommit (key versions 0 and 1; value versions 0-4, 4 flexible) ------------------------------
def offset_commit_key(group: str, topic: str, partition: int, key_version: int = 1) -> bytes:
    return Writer().int16(key_version).string(group).string(topic).int32(partition).done()


def offset_commit_value(version: int, offset: int, metadata: str = "", commit_ts: int = 0,
                        leader_epoch: int = -1, expire_ts: int = -1, extra_tags: dict | None = None) -> bytes:
    flexible = version >= 4
    w = Writer(flexible).int16(version).int64(offset)
    if version >= 3:
        w.int32(leader_epoch)
    w.string(metadata).int64(commit_ts)
    if version == 1:
        w.int64(expire_ts)
    if flexible:
        w.tags(extra_tags)
    return w.done()


# --- GroupMetadata (key version 2; value versions 0-4, 4 flexible) -----------------------------------
def group_metadata_key(group: str) -> bytes:
    return Writer().int16(2).string(group).done()


def group_metadata_value(version: int, protocol_type: str, generation: int, protocol: str | None,
                         leader: str | None, members: list[dict], current_state_ts: int = -1,
                         extra_tags: dict | None = None) -> bytes:
    """members: dicts with member_id, group_instance_id, client_id, client_host, rebalance_timeout,
    session_timeout, subscription (bytes), assignment (bytes)."""
    flexible = version >= 4
    w = Writer(flexible).int16(version)
    w.string(protocol_type).int32(generation).string(protocol).string(leader)
    if version >= 2:
        w.int64(current_state_ts)
    w.count(len(members))
    for m in members:
        w.string(m["member_id"])
        if version >= 3:
            w.string(m.get("group_instance_id"))
        w.string(m.get("client_id", "client")).string(m.get("client_host", "/127.0.0.1"))
        if version >= 1:
            w.int32(m.get("rebalance_timeout", 300000))
        w.int32(m.get("session_timeout", 45000))
        w.bytes_(m.get("subscription", b"")).bytes_(m.get("assignment", b""))
        if flexible:
            w.tags()
    if flexible:
        w.tags(extra_tags)
    return w.done()


# --- KIP-848 records (keys never flexible; values flexible from v0) -----------------------------------
def group_key(key_version: int, group: str, member_id: str | None = None) -> bytes:
    w = Writer().int16(key_version).string(group)
    if member_id is not None:
        w.string(member_id)
    return w.done()


def cg_metadata_value(epoch: int, metadata_hash: int | None = None, version: int = 0) -> bytes:
    w = Writer(True).int16(version).int32(epoch)
    tags = {}
    if metadata_hash is not None:
        tags[0] = struct.pack(">q", metadata_hash)
    return w.tags(tags).done()


def cg_partition_metadata_value(topics: list[tuple[str, str, int]], racks: dict | None = None) -> bytes:
    """topics: (topic_id, topic_name, num_partitions); racks: {topic_id: {partition: [rack, ...]}}."""
    w = Writer(True).int16(0)
    w.count(len(topics))
    for tid, name, n in topics:
        w.uuid(tid).string(name).int32(n)
        parts = (racks or {}).get(tid, {})
        w.count(len(parts))
        for p, rs in parts.items():
            w.int32(p).count(len(rs))
            for r in rs:
                w.string(r)
            w.tags()
        w.tags()
    return w.tags().done()


def cg_member_metadata_value(client_id: str, client_host: str, topics, instance_id: str | None = None,
                             rack_id: str | None = None, regex: str | None = None,
                             rebalance_timeout_ms: int = 300000, server_assignor: str | None = "uniform",
                             classic: tuple[int, list[tuple[str, bytes]]] | None = None) -> bytes:
    w = Writer(True).int16(0)
    w.string(instance_id).string(rack_id).string(client_id).string(client_host)
    w.count(len(topics))
    for t in topics:
        w.string(t)
    w.string(regex).int32(rebalance_timeout_ms).string(server_assignor)
    tags = {}
    if classic is not None:
        session, protocols = classic
        cw = Writer(True).uvarint(1).int32(session).count(len(protocols))
        for name, meta in protocols:
            cw.string(name).bytes_(meta).tags()
        tags[0] = cw.tags().done()
    return w.tags(tags).done()


def _uuid_partitions(w: Writer, pairs) -> None:
    w.count(len(pairs))
    for tid, parts in pairs:
        w.uuid(tid).count(len(parts))
        for p in parts:
            w.int32(p)
        w.tags()


def cg_target_metadata_value(epoch: int) -> bytes:
    return Writer(True).int16(0).int32(epoch).tags().done()


def cg_target_member_value(pairs) -> bytes:
    w = Writer(True).int16(0)
    _uuid_partitions(w, pairs)
    return w.tags().done()


def cg_current_assignment_value(member_epoch: int, previous_epoch: int, state: int, assigned, pending=()) -> bytes:
    w = Writer(True).int16(0).int32(member_epoch).int32(previous_epoch).int8(state)
    _uuid_partitions(w, assigned)
    _uuid_partitions(w, pending)
    return w.tags().done()


# --- share group records (KIP-932; Apache Kafka 4.4's layouts unless `kafka40`) ------------------------
def sg_metadata_value(epoch: int, metadata_hash: int = 0, kafka40: bool = False) -> bytes:
    w = Writer(True).int16(0).int32(epoch)
    if not kafka40:
        w.int64(metadata_hash)
    return w.tags().done()


def sg_member_metadata_value(client_id: str, client_host: str, topics, rack_id: str | None = None) -> bytes:
    w = Writer(True).int16(0).string(rack_id).string(client_id).string(client_host)
    w.count(len(topics))
    for t in topics:
        w.string(t)
    return w.tags().done()


def sg_target_metadata_value(epoch: int, assignment_ts: int | None = None) -> bytes:
    tags = {} if assignment_ts is None else {0: struct.pack(">q", assignment_ts)}
    return Writer(True).int16(0).int32(epoch).tags(tags).done()


def sg_target_member_value(pairs) -> bytes:
    w = Writer(True).int16(0)
    _uuid_partitions(w, pairs)
    return w.tags().done()


def sg_current_assignment_value(member_epoch: int, previous_epoch: int, state: int, assigned) -> bytes:
    w = Writer(True).int16(0).int32(member_epoch).int32(previous_epoch).int8(state)
    _uuid_partitions(w, assigned)
    return w.tags().done()


def sg_state_partition_metadata_value(initialized, initializing=(), deleting=(), kafka40: bool = False) -> bytes:
    """initialized / initializing: (topic_id, topic_name, [partitions]); deleting: (topic_id, topic_name)."""
    w = Writer(True).int16(0)

    def infos(items):
        w.count(len(items))
        for tid, name, parts in items:
            w.uuid(tid).string(name).count(len(parts))
            for p in parts:
                w.int32(p)
            w.tags()

    if not kafka40:
        infos(list(initializing))
    infos(list(initialized))
    w.count(len(deleting))
    for tid, name in deleting:
        w.uuid(tid).string(name).tags()
    return w.tags().done()
