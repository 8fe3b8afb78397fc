"""An event rebuilt from a value `parse_event` has already accepted, without checking it again.

The Spark job checks each record once, in its decode stage (`parse_event`: rejects become dead letters there), and
carries the events it accepted as canonical JSON text to its processor; the processor rebuilds them here
(`event_from_checked_text`) instead of parsing and checking them a second time. The rebuild follows the same
per-type field specifications as the parser (`event_parsing.SPECS`): only the conversions, none of the checks.

What it gives equals what `parse_event` gives for the same value (tests/core/test_checked_events.py), for any value
`parse_event` accepted. A value it did not accept has no defined result here: the callers hand over only what the
decode stage accepted; whatever comes from elsewhere takes `parse_event`.
"""
from __future__ import annotations

from typing import Callable

from .event_model import DEFAULT_MAX_BYTES, DescribedMember, MemberInfo, StreamsSubtopology
from .event_parsing import DESCRIBED_MEMBER_SPEC, MEMBER_SPEC, SPECS, SUBTOPOLOGY_SPEC, loads_json, parse_event
from .vocabulary import EventType


class _BeyondInt64(Exception):
    """An integer field read as a float: orjson reads an integer literal beyond 64 bits so, where `json` (and so
    `parse_event`, which reads a value again with `json` when orjson's reading fails a check) keeps an integer."""


def _int(value):
    if type(value) is float:
        raise _BeyondInt64
    return value


def _num(value):
    """A number as `parse_event` keeps it: an integer beyond 64 bits as the float orjson reads it as."""
    return float(value) if type(value) is int and not -(1 << 63) <= value < 1 << 64 else value


def _pairs(value) -> tuple:
    """[[topic, partition], ...] or [[topic, partition, offset], ...] as `parse_event` keeps them."""
    out = []
    for item in value:
        for number in item[1:]:
            if type(number) is float:
                raise _BeyondInt64
        out.append(tuple(item))
    return tuple(out)


def _topic_counts(value) -> dict:
    for count in value.values():
        if type(count) is float:
            raise _BeyondInt64
    return dict(value)


def _members(value) -> tuple:
    return tuple(_rebuild_object(MemberInfo, _MEMBER_FIELDS, m) for m in value)


def _described_members(value) -> tuple:
    return tuple(_rebuild_object(DescribedMember, _DESCRIBED_MEMBER_FIELDS, m) for m in value)


def _subtopologies(value) -> tuple:
    return tuple(_rebuild_object(StreamsSubtopology, _SUBTOPOLOGY_FIELDS, m) for m in value)


# each field kind's conversion from its JSON value (None: taken as it is), as event_parsing's converters make it
_CONVERSIONS: dict[str, Callable | None] = {
    "str": None, "num": _num, "int": _int, "str_list": tuple, "tp_list": _pairs, "offset_list": _pairs,
    "topic_counts": _topic_counts, "str_map": dict, "members": _members, "described_members": _described_members,
    "subtopologies": _subtopologies,
}


def _fields(spec: dict, common: tuple = ()) -> tuple:
    """A spec's fields as (their names with `common`, (name, conversion) of those not taken as they are)."""
    kinds = {name: _CONVERSIONS[kind.rstrip("?")] for name, (kind, _) in spec.items() if name not in ("v", "type")}
    return (frozenset((*common, *kinds)),
            tuple((name, convert) for name, convert in kinds.items() if convert is not None))


# "ts" and "v" are taken as they are: an accepted event's are integers below 2^53
_MEMBER_FIELDS = _fields(MEMBER_SPEC)
_DESCRIBED_MEMBER_FIELDS = _fields(DESCRIBED_MEMBER_SPEC)
_SUBTOPOLOGY_FIELDS = _fields(SUBTOPOLOGY_SPEC)
_EVENT_FIELDS: dict[str, tuple] = {etype: (cls, _fields(spec, ("v", "type", "ts", "group")))
                                   for etype, (cls, spec) in SPECS.items()}


def _convert(fields: tuple, obj: dict) -> dict:
    """The keyword arguments of an object's class: its known keys (others left out), converted."""
    known, converted = fields
    kwargs = dict(obj) if obj.keys() <= known else {name: value for name, value in obj.items() if name in known}
    for name, convert in converted:
        value = kwargs.get(name)
        if value is not None:  # (absent, or null: as it stands)
            kwargs[name] = convert(value)
    return kwargs


def _rebuild_object(cls, fields: tuple, obj: dict):
    return cls(**_convert(fields, obj))


def event_from_checked_dict(obj: dict):
    """The event `parse_event(obj)` gives, for a decoded JSON object `parse_event` has accepted (keys it does not
    know are left out, as it leaves them)."""
    etype = obj["type"]
    cls, fields = _EVENT_FIELDS[etype]
    kwargs = _convert(fields, obj)
    if etype == EventType.GROUP_CONFIG and kwargs.get("group_type") is None:
        kwargs["group_type"] = "consumer"  # (as the parser reads a null group type)
    return cls(**kwargs)


def event_from_checked_text(text: str):
    """The event `parse_event(text)` gives, for canonical JSON text `parse_event` has accepted, under any size limit
    and clock. Two rare texts are given to `parse_event` again, which decides them as it always did: one beyond its
    default size limit (a larger `kafka.max_record_bytes` let it through), and one with an integer beyond 64 bits
    in an integer field."""
    if len(text) > DEFAULT_MAX_BYTES:
        return parse_event(text)
    try:
        return event_from_checked_dict(loads_json(text))
    except _BeyondInt64:
        return parse_event(text)
