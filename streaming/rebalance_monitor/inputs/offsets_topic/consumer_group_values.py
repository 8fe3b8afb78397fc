"""The values of the consumer group protocol's records (KIP-848, `group.protocol=consumer`): group metadata
(the group epoch), partition metadata (topic id -> name), member metadata, target assignment and each
member's current assignment. Topics are named by topic id; `resolve_topic_ids` names them."""
from __future__ import annotations

from .wire import Reader, partition_index

def cg_metadata_value(r: Reader) -> dict:
    p = "ConsumerGroupMetadataValue"
    epoch = r.int32(f"{p}.epoch")
    tags = r.tagged_fields(p, {0: ("metadata_hash", lambda rr, pp: rr.int64(pp)),
                               1: ("creation_time_ms", lambda rr, pp: rr.int64(pp))})
    return {"epoch": epoch, **tags}


def cg_partition_metadata_value(r: Reader, p: str = "ConsumerGroupPartitionMetadataValue") -> dict:

    def racks(rr: Reader, pp: str):
        part = partition_index(rr, f"{pp}.partition")
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


def cg_member_metadata_value(r: Reader) -> dict:
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


def uuid_partitions(r: Reader, path: str) -> list:
    def entry(rr: Reader, p: str):
        tid = rr.uuid(f"{p}.topic_id")
        parts = rr.array(f"{p}.partitions", partition_index, compact=True, min_item_bytes=4)
        rr.tagged_fields(p)
        return tid, parts
    return r.array(path, entry, compact=True, min_item_bytes=18)


def target_member_value(r: Reader, p: str = "ConsumerGroupTargetAssignmentMemberValue") -> dict:
    """A member's target assignment (topic ids and partitions): the consumer group's record, and the share
    group's of the same layout (`p`, the record's name in the reasons)."""
    out = {"topic_partitions": uuid_partitions(r, f"{p}.topic_partitions")}
    r.tagged_fields(p)
    return out



def cg_target_metadata_value(r: Reader) -> dict:
    p = "ConsumerGroupTargetAssignmentMetadataValue"
    out = {"assignment_epoch": r.int32(f"{p}.assignment_epoch")}
    r.tagged_fields(p)
    return out


def timed_target_metadata_value(r: Reader, p: str) -> dict:
    """A share or streams group's target assignment metadata: its epoch, and the tagged time it was computed."""
    out = {"assignment_epoch": r.int32(f"{p}.assignment_epoch")}
    out.update(r.tagged_fields(p, {0: ("assignment_timestamp", lambda rr, pp: rr.int64(pp))}))
    return out


# The coordinator's MemberState codes (ConsumerGroupCurrentMemberAssignmentValue.State)
KIP848_MEMBER_STATES = {0: "stable", 1: "unrevoked_partitions", 2: "unreleased_partitions"}


def cg_current_assignment_value(r: Reader) -> dict:
    p = "ConsumerGroupCurrentMemberAssignmentValue"
    out = {"member_epoch": r.int32(f"{p}.member_epoch"),
           "previous_member_epoch": r.int32(f"{p}.previous_member_epoch"),
           "state": r.int8(f"{p}.state"),
           "assigned_partitions": uuid_partitions(r, f"{p}.assigned_partitions"),
           "partitions_pending_revocation": uuid_partitions(r, f"{p}.partitions_pending_revocation")}
    r.tagged_fields(p)
    return out


def resolve_topic_ids(pairs: list, topic_names: dict | None) -> list:
    names = topic_names or {}
    out = []
    for tid, parts in pairs:
        name = names.get(tid, tid)
        out.extend([name, x] for x in parts)
    return out
