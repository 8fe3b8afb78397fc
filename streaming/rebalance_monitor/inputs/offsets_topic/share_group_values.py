"""The values of the share group protocol's records (KIP-932, share groups): group metadata (the group epoch),
member metadata, target assignment, each member's current assignment, and the share-group state's partition
metadata (topic id -> name of the partitions whose share-group state is initialising, initialised or being
deleted). Every value is version 0 and flexible.

Apache Kafka 4.4's layouts are read (its generated ShareGroup*Value classes). Share groups were an early-access
feature in 4.0 and two version-0 layouts changed since without a version bump: 4.0's ShareGroupMetadataValue had
no MetadataHash and its ShareGroupStatePartitionMetadataValue no InitializingTopics; 4.0 also wrote
ShareGroupPartitionMetadata (key type 9, the layout of ConsumerGroupPartitionMetadataValue), which 4.4 no longer
writes. A value that 4.4's layout does not read to its end is read with 4.0's when that layout reads it whole;
otherwise 4.4's error is the reason."""
from __future__ import annotations

from typing import Callable

from .consumer_group_values import target_member_value, timed_target_metadata_value, uuid_partitions
from .wire import DecodeError, Reader, partition_index


def _whole(r: Reader, path: str, layouts: list[Callable[[Reader], dict]]) -> dict:
    """The first layout that reads the value to its end (the newest first); the newest's error when none does
    (`bad_length:<value>` when it read the value but bytes were left over)."""
    start = r.pos
    first_error = None
    for layout in layouts:
        r.pos = start
        try:
            out = layout(r)
        except DecodeError as err:
            first_error = first_error or err
            continue
        if r.remaining() == 0:
            return out
        if first_error is None:
            first_error = DecodeError(f"bad_length:{path}", f"{r.remaining()} bytes left over")
    raise first_error


def sg_metadata_value(r: Reader) -> dict:
    p = "ShareGroupMetadataValue"

    def v44(rr: Reader) -> dict:
        epoch = rr.int32(f"{p}.epoch")
        metadata_hash = rr.int64(f"{p}.metadata_hash")
        rr.tagged_fields(p)
        return {"epoch": epoch, "metadata_hash": metadata_hash}

    def v40(rr: Reader) -> dict:
        epoch = rr.int32(f"{p}.epoch")
        rr.tagged_fields(p)
        return {"epoch": epoch}

    return _whole(r, p, [v44, v40])


def sg_member_metadata_value(r: Reader) -> dict:
    p = "ShareGroupMemberMetadataValue"
    out = {"rack_id": r.string(f"{p}.rack_id", compact=True, nullable=True),
           "client_id": r.string(f"{p}.client_id", compact=True),
           "client_host": r.string(f"{p}.client_host", compact=True),
           "subscribed_topic_names": r.array(f"{p}.subscribed_topic_names",
                                             lambda rr, pp: rr.string(pp, compact=True), compact=True)}
    r.tagged_fields(p)
    return out


def sg_target_metadata_value(r: Reader) -> dict:
    return timed_target_metadata_value(r, "ShareGroupTargetAssignmentMetadataValue")


def sg_target_member_value(r: Reader) -> dict:
    return target_member_value(r, "ShareGroupTargetAssignmentMemberValue")  # the consumer group's layout


def sg_current_assignment_value(r: Reader) -> dict:
    p = "ShareGroupCurrentMemberAssignmentValue"
    out = {"member_epoch": r.int32(f"{p}.member_epoch"),
           "previous_member_epoch": r.int32(f"{p}.previous_member_epoch"),
           "state": r.int8(f"{p}.state"),
           "assigned_partitions": uuid_partitions(r, f"{p}.assigned_partitions")}
    r.tagged_fields(p)
    return out


def _topic_partitions_info(rr: Reader, tp: str) -> dict:
    tid = rr.uuid(f"{tp}.topic_id")
    name = rr.string(f"{tp}.topic_name", compact=True)
    parts = rr.array(f"{tp}.partitions", partition_index, compact=True, min_item_bytes=4)
    rr.tagged_fields(tp)
    return {"topic_id": tid, "topic_name": name, "partitions": parts}


def _topic_info(rr: Reader, tp: str) -> dict:
    tid = rr.uuid(f"{tp}.topic_id")
    name = rr.string(f"{tp}.topic_name", compact=True)
    rr.tagged_fields(tp)
    return {"topic_id": tid, "topic_name": name}


def sg_state_partition_metadata_value(r: Reader) -> dict:
    p = "ShareGroupStatePartitionMetadataValue"

    def topics(rr: Reader, field: str, item) -> list:
        return rr.array(f"{p}.{field}", item, compact=True, min_item_bytes=18)

    def v44(rr: Reader) -> dict:
        out = {"initializing_topics": topics(rr, "initializing_topics", _topic_partitions_info),
               "initialized_topics": topics(rr, "initialized_topics", _topic_partitions_info),
               "deleting_topics": topics(rr, "deleting_topics", _topic_info)}
        rr.tagged_fields(p)
        return out

    def v40(rr: Reader) -> dict:
        out = {"initializing_topics": [],
               "initialized_topics": topics(rr, "initialized_topics", _topic_partitions_info),
               "deleting_topics": topics(rr, "deleting_topics", _topic_info)}
        rr.tagged_fields(p)
        return out

    return _whole(r, p, [v44, v40])


def learn_topic_names(v: dict, topic_names: dict | None) -> None:
    """Remember the topic names a ShareGroupStatePartitionMetadataValue gives (for the members' topic ids)."""
    if topic_names is None:
        return
    for field in ("initializing_topics", "initialized_topics", "deleting_topics"):
        for t in v[field]:
            topic_names[t["topic_id"]] = t["topic_name"]


def named_topic_ids(pairs: list, topic_names: dict | None) -> dict:
    """{topic name: its id as Kafka prints a Uuid (URL-safe base64, no padding)} for the topics of a share member's
    assignment whose names are known (`pairs`: [(topic id, partitions)], ids in the records' form)."""
    import base64
    import uuid

    out = {}
    for tid, _parts in pairs:
        name = (topic_names or {}).get(tid)
        if name is not None:
            out[name] = base64.urlsafe_b64encode(uuid.UUID(tid).bytes).decode().rstrip("=")
    return out
