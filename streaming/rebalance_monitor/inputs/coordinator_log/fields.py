"""Small parsers of what the coordinator prints inside its messages: Scala and Java optionals, member-id sets,
`MemberMetadata(...)`, hosts, the member a rebalance reason names, and the cause of a leave or a fence."""
from __future__ import annotations

import re

from rebalance_monitor.core import causes as C
from rebalance_monitor.core.causes import classify_reason


def log_event(etype: str, ts: int, group: str, **fields) -> dict:
    """A canonical event of a coordinator line: the fields given, those the line does not know (None) left out,
    but `protocol`, `leader` and `reason`, which an event names even when null."""
    ev = {"v": 1, "type": etype, "ts": ts, "group": group}
    ev.update({k: v for k, v in fields.items() if v is not None or k in ("protocol", "leader", "reason")})
    return ev


def opt(value: str | None) -> str | None:
    """Scala Option / Java Optional printing: `Some(x)` / `Optional[x]` -> x; `None`, `null`,
    `Optional.empty` -> None; anything else as is."""
    if value is None:
        return None
    v = value.strip()
    if v in ("None", "null", "Optional.empty", "OptionalInt.empty", ""):
        return None
    if v.startswith("Some(") and v.endswith(")"):
        return v[5:-1]
    m = re.fullmatch(r"Optional(?:Int)?\[(.*)\]", v)
    return m.group(1) if m else v


def id_set(text: str) -> list[str]:
    """`Set(a, b)`, `HashSet(a)`, `[a, b]`, `{a, b}` -> [a, b]."""
    t = text.strip().rstrip(".")
    m = re.fullmatch(r"(?:\w*Set)?[(\[{](.*)[)\]}]", t)
    inner = m.group(1) if m else t
    return [x.strip() for x in inner.split(",") if x.strip()]


MEMBER_METADATA_RE = re.compile(
    r"MemberMetadata\(memberId=(?P<member>.*?), groupInstanceId=(?P<inst>.*?), clientId=(?P<client>.*?), "
    r"clientHost=(?P<host>.*?), sessionTimeoutMs=(?P<st>-?\d+), rebalanceTimeoutMs=(?P<rt>-?\d+), "
    r"supportedProtocols=(?P<protos>.*?)\)")


def host_of(h: str | None) -> str | None:
    if h is None:
        return None
    return h[1:] if h.startswith("/") else h


# Who a coordinator's rebalance reason names (the member id may hold spaces, quotes, slashes, parentheses:
# each pattern is anchored on the words after the id, not on the id's characters). First match wins.
_REASON_MEMBER_RES = [re.compile(p, re.S) for p in [
    # 2.2 `Adding new member M`, 2.3-2.4 `... with group instanceid I`, 2.5+ `... with group instance id I`
    r"^Adding new (?:static )?member (?P<m>.+?)(?: with group instance ?id .*)?$",
    # `leader M re-joining ...` (2.6-2.8), `Leader M re-joining ...` (3.0+)
    r"^[Ll]eader (?P<m>.+?) re-joining group during ",
    # `Updating metadata for member M` (2.2-2.6: the only reason of a Connect worker's rejoin), `... during S`
    # (2.7+), `Updating metadata for static member M with instance id I` (2.5+)
    r"^Updating metadata for (?:static )?member (?P<m>.+?)(?: with instance id .*?)?(?: during .*)?$",
    # `Member M joining group during S` (2.7-3.x), `Member M is joining group during S` (the new coordinator)
    r"^Member (?P<m>.+?) (?:is )?joining group during ",
    r"^Removing member (?P<m>.+?) on (?:LeaveGroup|heartbeat expiration|pending join)",
    r"^removing member (?P<m>.+?) on (?:LeaveGroup|heartbeat expiration|pending join)",
    r"^explicit `LeaveGroup` request for \((?P<m>.+)\) members\.?",
    r"^(?:Static member|member) (?P<m>.+?) (?:has been removed|failed|left)",
    r"^Removing member (?P<m>.+?) (?:with group instance id (?:(?! on ).)+ )?on ",
    r"^Removing (?P<m>(?:\w*Set)?[(\[{].*?[)\]}]) on pending sync request expiration",
]]


def reason_member(reason: str | None) -> str | None:
    """The member a coordinator's rebalance reason names: `Adding new member M with group instance id I`,
    `Leader M re-joining group during Stable`, `Updating metadata for member M during S`, `Member M joining group
    during S`, `Removing member M on LeaveGroup`, `explicit `LeaveGroup` request for (M) members` (the first when
    several), ... — None when the reason names no member. The client's part (`; client reason: ...`) is never
    searched."""
    if not reason:
        return None
    own = reason.split("; client reason: ", 1)[0]
    for pattern in _REASON_MEMBER_RES:
        m = pattern.search(own)
        if m is None:
            continue
        found = m["m"].strip()
        if found[:1] in "[({" and found[-1:] in "])}" or found.startswith(("Set(", "HashSet(")):
            ids = id_set(found)
            return ids[0] if ids else None
        if ", " in found and pattern.pattern.startswith("^explicit"):
            return found.split(", ")[0]
        return found or None
    return None


def leave_cause(reason: str | None) -> str:
    c = classify_reason(reason)
    return c if c in (C.POLL_TIMEOUT, C.ADMIN_REMOVAL, C.SESSION_TIMEOUT, C.STATIC_MEMBER_REPLACED) else C.MEMBER_LEFT


def fence_cause(reason: str) -> str:
    r = reason.lower()
    if "transition from epoch" in r:
        # KIP-848: the member did not revoke / acknowledge within the rebalance timeout, which the Java
        # consumer sets to max.poll.interval.ms (revocation runs inside poll()): a poll timeout.
        return C.POLL_TIMEOUT
    c = classify_reason(reason)
    return c if c != C.UNKNOWN else C.SESSION_TIMEOUT if "session" in r else C.UNKNOWN


_ADDED_RE = re.compile(r"Adding new (?:static )?member (?P<m>.+?)(?: with group instance ?id (?P<inst>.*))?", re.S)


def added_member(reason: str | None) -> tuple[str, str | None] | None:
    """(member id, printed instance id) of a rebalance reason `Adding new member M[ with group instance[ ]id I]`
    (the coordinator just added M: 2.2-3.x log no separate line for it); None for any other reason."""
    if not reason:
        return None
    m = _ADDED_RE.fullmatch(reason.split("; client reason: ", 1)[0])
    return (m["m"], m["inst"]) if m else None
