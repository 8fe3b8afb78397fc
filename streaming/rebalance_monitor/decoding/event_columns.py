"""The columnar form of the frequent client events, between the job's decode stage and its processor.

Heartbeats, polls and offset commits are most of a busy events topic (all of the benchmark mix but the joins
and syncs of a rebalance). The decode stage checks them once, exactly as `parse_event` would, and carries their
fields as typed columns (a commit's offsets as a list), so that the processor builds the event without parsing
JSON a second time. Every other event, and any of these that is not plainly valid in its common form, takes
`parse_event` in the decode stage and travels as canonical JSON text, which the processor rebuilds as that event
without checking it again (core/checked_events.py).

`hot_fields` never decides a rejection: it returns None ("take the full parser") whenever it is not sure,
so the events and the rejects of the job are those of `parse_event`
(tests/decoding/test_fast_paths_equal_reference.py holds the two equal, and the stage's rows equal to
`reference.decode_record`'s events).
"""
from __future__ import annotations

from orjson import loads as _loads

from ..core.events import SCHEMA_VERSION, Commit, Heartbeat, Poll

HEARTBEAT = "heartbeat"
POLL = "poll"
COMMIT = "commit"
BEATS = (HEARTBEAT, POLL)  # the event types of the monitor's fast path (`GroupMonitor.process_beat`)
# the columns of a hot event, after group and ts: etype, member, num (generation | records), err, inst,
# client, host, offsets (a commit's, as lists; None for the others)
_NUM_LIMIT = 1 << 53  # numbers the fast path carries (exact in any JSON reader); larger ones take the parser
_TS_LIMIT = 1 << 53


_MISSING = object()
_EXCEPTIONS = (KeyError, TypeError, ValueError)  # not an object with the required keys, or not JSON


def hot_fields(value, max_bytes: int, now_ms: int | None, max_future_ms: int | None) -> tuple | None:
    """`(etype, ts, group, member, num, err, inst, client, host, offsets)` for a valid heartbeat, poll or commit
    (with its member id), else None.

    The required keys are read by index (a missing one, or a document that is not an object, ends the fast path);
    a record with a key outside its type's known keys is told by its key count, and the optional keys are only
    looked up when the count says some are there. Runs once per heartbeat: keep it flat."""
    if value is None or len(value) > max_bytes:
        return None
    try:
        d = _loads(value)
        etype = d["type"]
        v = d["v"]
        ts = d["ts"]
        group = d["group"]
        member = d["member_id"]
        if etype == HEARTBEAT:
            num = d["generation"]
            err = d["error"]
            if type(num) is not int or not -_NUM_LIMIT < num < _NUM_LIMIT or (err is not None and type(err) is not str):
                return None
            extra = len(d) - 7  # v, type, ts, group, member_id, generation, error
        elif etype == POLL:
            err = None
            num = d.get("records", _MISSING)
            if num is _MISSING:
                num = None
                extra = len(d) - 5  # v, type, ts, group, member_id
            elif num is None or (type(num) is int and -_NUM_LIMIT < num < _NUM_LIMIT):
                extra = len(d) - 6
            else:
                return None
        elif etype == COMMIT:
            err = None
            offsets = d["offsets"]
            if not _offsets_ok(offsets):
                return None
            num = d.get("generation", _MISSING)
            if num is _MISSING:
                num = None
                extra = len(d) - 6  # v, type, ts, group, member_id, offsets
            elif num is None or (type(num) is int and -_NUM_LIMIT < num < _NUM_LIMIT):
                extra = len(d) - 7
            else:
                return None
        else:
            return None
    except _EXCEPTIONS:
        return None
    if type(v) is not int or v != SCHEMA_VERSION or type(ts) is not int or not 0 <= ts < _TS_LIMIT:
        return None
    if now_ms is not None and max_future_ms is not None and ts > now_ms + max_future_ms:
        return None
    if type(group) is not str or type(member) is not str:
        return None
    offsets = d["offsets"] if etype == COMMIT else None
    if not extra:
        return (etype, ts, group, member, num, err, None, None, None, offsets)
    get = d.get
    inst, client, host = get("group_instance_id", _MISSING), get("client_id", _MISSING), get("host", _MISSING)
    for x in (inst, client, host):
        if x is _MISSING:
            continue
        extra -= 1
        if x is not None and type(x) is not str:
            return None
    if extra:  # a key this fast path does not know: the full parser decides
        return None
    return (etype, ts, group, member, num, err, None if inst is _MISSING else inst,
            None if client is _MISSING else client, None if host is _MISSING else host, offsets)


def _offsets_ok(offsets) -> bool:
    """A commit's offsets as `parse_event` takes them: a list of [topic, partition >= 0, offset], the numbers
    integers the fast path carries exactly."""
    if type(offsets) is not list:
        return False
    for item in offsets:
        if type(item) is not list or len(item) != 3:
            return False
        topic, partition, offset = item
        if type(topic) is not str or type(partition) is not int or type(offset) is not int or \
                not 0 <= partition < _NUM_LIMIT or not -_NUM_LIMIT < offset < _NUM_LIMIT:
            return False
    return True


def hot_event(etype: str, ts: int, group: str, member: str, num, err, inst, client, host, offsets=None):
    """The event `parse_event` gives for the same fields.
    Positional arguments in the dataclasses' field order: this runs once per heartbeat."""
    if etype == HEARTBEAT:
        return Heartbeat(HEARTBEAT, ts, group, SCHEMA_VERSION, member, inst, client, host, num, err)
    if etype == POLL:
        return Poll(POLL, ts, group, SCHEMA_VERSION, member, inst, client, host, num)
    return Commit(COMMIT, ts, group, SCHEMA_VERSION, member, inst, client, host,
                  tuple(tuple(item) for item in offsets), num)
