"""The consumer's embedded protocol inside a classic group's GroupMetadata: ConsumerProtocolSubscription and
ConsumerProtocolAssignment (v0-v3), and the sticky assignors' user data."""
from __future__ import annotations

import struct

from .wire import DecodeError, Reader, topic_partitions

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
        out["owned"] = topic_partitions(r, f"{path}.owned_partitions")
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
    partitions = topic_partitions(r, f"{path}.assigned_partitions")
    user_data = r.bytes_(f"{path}.user_data", nullable=True)
    return {"version": version, "partitions": partitions, "user_data": user_data}


def decode_sticky_user_data(data: bytes) -> dict | None:
    """StickyAssignorUserData v1 (previous assignment + generation), falling back to v0 (no generation).

    None when neither layout reads (the StickyAssignor then ignores the user data as well)."""
    for with_generation in (True, False):
        try:
            r = Reader(data)
            owned = topic_partitions(r, "sticky_user_data.previous_assignment")
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
