"""Why a kafka-python member joins or leaves, worded as the Java client's KIP-800 reasons (kafka-python sends
none on the wire): from the errors the instrumentation saw before the request and the consumer's own state."""
from __future__ import annotations

from .member_events import LEAVE_REASON_CLOSE, LEAVE_REASON_OTHER, LEAVE_REASON_POLL_TIMEOUT, LEAVE_REASON_UNSUBSCRIBE


def join_reason(consumer, request, join_err: str | None, hb_err: str | None) -> str | None:
    """The reason of a JoinGroup, given the last JoinGroup and heartbeat errors before it."""
    if join_err == "MEMBER_ID_REQUIRED":
        return "need to re-join with the given member-id"
    if join_err:
        return f"rebalance failed due to {join_err}"
    if hb_err == "REBALANCE_IN_PROGRESS":
        return "group is already rebalancing"
    if hb_err in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID"):
        return f"member was removed from the group ({hb_err})"
    if not getattr(request, "member_id", ""):
        return "initial join"
    return rejoin_reason(consumer)


def rejoin_reason(consumer) -> str | None:
    """Why kafka-python's coordinator asked for a rejoin when nothing failed: the leader's metadata changed since
    it computed the assignment (partitions added, a topic of the group's subscription appeared), or this
    member's subscription changed."""
    coord = getattr(consumer, "_coordinator", None)
    assigned = getattr(coord, "_assignment_snapshot", None)
    current = getattr(coord, "_metadata_snapshot", None)
    if assigned is not None and current is not None and assigned != current:
        def counts(snap) -> str:
            return "{" + ", ".join(f"{t}={len(p or ())}" for t, p in sorted(snap.items())) + "}"

        return (f"cached metadata has changed from {counts(assigned)} at the beginning of the rebalance "
                f"to {counts(current)}")
    joined = getattr(coord, "_joined_subscription", None)
    sub = getattr(getattr(consumer, "_subscription", None), "subscription", None)
    if joined is not None and sub is not None and set(joined) != set(sub):
        return f"subscription has changed from {sorted(joined)} to {sorted(sub)}"
    return None


def leave_reason(consumer, closing: bool, unsubscribing: bool) -> str:
    """The reason of a LeaveGroup: close(), unsubscribe(), the heartbeat loop's poll timeout, or other."""
    if closing:
        return LEAVE_REASON_CLOSE
    if unsubscribing:
        return LEAVE_REASON_UNSUBSCRIBE
    coord = getattr(consumer, "_coordinator", None)
    hb = getattr(coord, "heartbeat", None)
    try:
        if hb is not None and hb.poll_timeout_expired():
            return LEAVE_REASON_POLL_TIMEOUT
    except Exception:
        pass
    return LEAVE_REASON_OTHER
