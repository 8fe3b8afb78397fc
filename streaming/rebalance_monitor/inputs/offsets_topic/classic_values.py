"""The values of the classic protocol's records: OffsetCommit (key and value, v0-v4) and GroupMetadata
(v0-v4, with each member's subscription and assignment decoded when the protocol type is `consumer`)."""
from __future__ import annotations

from .consumer_protocol import (decode_consumer_assignment, decode_consumer_subscription,
                                decode_cooperative_user_data, decode_sticky_user_data)
from .wire import Reader, host_of, partition_index

# --- OffsetCommit -----------------------------------------------------------------------------------------
def offset_commit_key(r: Reader) -> dict:
    return {"group": r.string("OffsetCommitKey.group"), "topic": r.string("OffsetCommitKey.topic"),
            "partition": partition_index(r, "OffsetCommitKey.partition")}


def offset_commit_value(r: Reader, version: int) -> dict:
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
def group_metadata_value(r: Reader, version: int) -> dict:
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


def member_info(m: dict, index: int, protocol_type: str, protocol: str | None) -> dict:
    info = {"member_id": m["member_id"], "client_id": m["client_id"], "host": host_of(m["client_host"]),
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
