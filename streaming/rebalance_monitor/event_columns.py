"""The columnar form of the frequent client events, between the job's decode stage and its processor.

Heartbeats and polls are most of a busy events topic (about 95% in the benchmark mix). The decode stage
checks them once, exactly as `parse_event` would, and carries their fields as typed columns, so that the
processor builds the event without parsing JSON a second time. Every other event, and any heartbeat or poll
that is not plainly valid in its common form, travels as canonical JSON text and takes `parse_event`.

`hot_fields` never decides a rejection: it returns None ("take the full parser") whenever it is not sure,
so the events and the rejects of the job are those of `parse_event` (a test holds the two to equality).
"""
from __future__ import annotations

from .core.events import SCHEMA_VERSION, Heartbeat, Poll

from orjson import loads as _loads

HEARTBEAT = "heartbeat"
POLL = "poll"
# the columns of a hot event, after group and ts: etype, member, num (generation | records), err, inst,
# client, host
_HEARTBEAT_KEYS = frozenset({"v", "type", "ts", "group", "member_id", "generation", "error",
                             "group_instance_id", "client_id", "host"})
_POLL_KEYS = frozenset({"v", "type", "ts", "group", "member_id", "records", "group_instance_id", "client_id",
                        "host"})
_NUM_LIMIT = 1 << 53  # numbers the fast path carries (exact in any JSON reader); larger ones take the parser
_TS_LIMIT = 1 << 53


def _opt_str(x) -> bool:
    return x is None or type(x) is str


def hot_fields(value, max_bytes: int, now_ms: int | None, max_future_ms: int | None) -> tuple | None:
    """`(etype, ts, group, member, num, err, inst, client, host)` for a valid heartbeat or poll, else None."""
    if value is None or len(value) > max_bytes:
        return None
    try:
        d = _loads(value)
    except ValueError:
        return None
    if type(d) is not dict:
        return None
    etype = d.get("type")
    if etype == HEARTBEAT:
        if not d.keys() <= _HEARTBEAT_KEYS or "member_id" not in d or "generation" not in d or "error" not in d:
            return None
        num = d["generation"]
        if type(num) is not int or not -_NUM_LIMIT < num < _NUM_LIMIT or not _opt_str(d["error"]):
            return None
        err = d["error"]
    elif etype == POLL:
        if not d.keys() <= _POLL_KEYS or "member_id" not in d:
            return None
        num = d.get("records")
        if num is not None and (type(num) is not int or not -_NUM_LIMIT < num < _NUM_LIMIT):
            return None
        err = None
    else:
        return None
    v, ts, group, member = d.get("v"), d.get("ts"), d.get("group"), d["member_id"]
    if type(v) is not int or v != SCHEMA_VERSION or type(ts) is not int or not 0 <= ts < _TS_LIMIT:
        return None
    if now_ms is not None and max_future_ms is not None and ts > now_ms + max_future_ms:
        return None
    if type(group) is not str or type(member) is not str:
        return None
    inst, client, host = d.get("group_instance_id"), d.get("client_id"), d.get("host")
    if not (_opt_str(inst) and _opt_str(client) and _opt_str(host)):
        return None
    return etype, ts, group, member, num, err, inst, client, host


def hot_event(etype: str, ts: int, group: str, member: str, num, err, inst, client, host):
    """The event `parse_event` gives for the same fields.
    Positional arguments in the dataclasses' field order: this runs once per heartbeat."""
    if etype == HEARTBEAT:
        return Heartbeat(HEARTBEAT, ts, group, SCHEMA_VERSION, member, inst, client, host, num, err)
    return Poll(POLL, ts, group, SCHEMA_VERSION, member, inst, client, host, num)
