"""One record value (bytes, str or a decoded dict) to an event or a `Rejected` (`parse_event`), by the per-type
field specifications, which the JSON Schema (`event_json.json_schema`) is generated from too; `loads_json`
with the faster parser a layer may register (`use_fast_json`)."""
from __future__ import annotations

import json
import re
from typing import Any, Callable

from .event_model import (BrokerRelease, DescribedMember, GroupConfig, GroupDescribed, ClientMetrics, Commit,
                          CoordinatorChange, DEFAULT_MAX_BYTES, EndOffsets, GenerationCompleted, GroupDeleted,
                          GroupEmpty, Heartbeat, Join, Leave, Lost, MemberInfo, MemberRemoved, Poll, REASON_BAD_TYPE,
                          REASON_BAD_VALUE, REASON_FUTURE_TS, REASON_MISSING_FIELD, REASON_NOT_JSON,
                          REASON_NOT_OBJECT, REASON_TOO_LARGE, REASON_UNKNOWN_TYPE, REASON_UNSUPPORTED_VERSION,
                          RebalanceStarted, Rejected, Revoked, SCHEMA_VERSION, SharePartitions, StreamsSubtopology,
                          StreamsTopology, Sync, TopicPartitions)
from .vocabulary import ConfigSource, EventType

# A faster JSON parser, registered by the layer that has one (`use_fast_json`); None: the standard library's.
_fast_loads = None

# --- field specifications -----------------------------------------------------------------------
# kind: str | str? (nullable) | int | int? | num? (int or float) | tp_list | offset_list | str_list | members | topic_counts | int_map | str_map
COMMON = {"v": ("int", True), "type": ("str", True), "ts": ("int", True), "group": ("str", True)}
MEMBER_OPTIONAL = {"group_instance_id": ("str?", False), "client_id": ("str?", False), "host": ("str?", False)}


def _member(required_member_id: bool = True, **extra):
    spec = {"member_id": ("str", required_member_id)}
    spec.update(MEMBER_OPTIONAL)
    spec.update(extra)
    return spec


SPECS: dict[str, tuple[type, dict]] = {
    EventType.JOIN: (Join, _member(
        protocols=("str_list", True), topics=("str_list", True), owned=("tp_list", False),
        session_timeout_ms=("int?", False), rebalance_timeout_ms=("int?", False),
        heartbeat_interval_ms=("int?", False), reason=("str?", False), rack=("str?", False),
        generation=("int?", False), group_protocol=("str?", False), process_id=("str?", False),
        topology_epoch=("int?", False), client_tags=("str_map?", False))),
    EventType.SYNC: (Sync, _member(generation=("int", True), protocol=("str?", True), leader=("str?", True),
                           assignment=("tp_list", True), member_state=("str?", False),
                           active_tasks=("tp_list?", False), standby_tasks=("tp_list?", False),
                           warmup_tasks=("tp_list?", False),
                           topic_ids=("str_map", False))),
    EventType.HEARTBEAT: (Heartbeat, _member(generation=("int", True), error=("str?", True))),
    EventType.POLL: (Poll, _member(records=("int?", False))),
    EventType.LEAVE: (Leave, _member(reason=("str?", True), source=("str?", False), received_ms=("int?", False))),
    EventType.CLIENT_METRICS: (ClientMetrics, _member(
        source=("str?", False), interval_ms=("int?", False), client_instance_id=("str?", False),
        last_heartbeat_ms_ago=("int?", False), last_poll_ms_ago=("int?", False),
        poll_interval_max_ms=("int?", False), assigned_partitions=("int?", False), poll_idle_ratio=("num?", False),
        session_timeout_ms=("int?", False), rebalance_timeout_ms=("int?", False),
        rebalance_latency_avg_ms=("int?", False), rebalance_latency_max_ms=("int?", False),
        rebalances=("int?", False), rebalance_latency_ms=("int?", False), received_ms=("int?", False))),
    EventType.COMMIT: (Commit, _member(False, offsets=("offset_list", True), generation=("int?", False))),
    EventType.REVOKED: (Revoked, _member(partitions=("tp_list", True), generation=("int?", False))),
    EventType.LOST: (Lost, _member(partitions=("tp_list", True), generation=("int?", False))),
    EventType.REBALANCE_STARTED: (RebalanceStarted, {"generation": ("int", True), "reason": ("str?", False),
        "member_id": ("str?", False), "metadata_hash": ("int?", False), "topology_epoch": ("int?", False)}),
    EventType.GENERATION_COMPLETED: (GenerationCompleted, {
        "generation": ("int", True), "protocol": ("str?", False), "leader": ("str?", False),
        "members": ("members", False), "protocol_type": ("str?", False)}),
    EventType.MEMBER_REMOVED: (MemberRemoved, {
        "member_id": ("str", True), "cause": ("str", True), "reason": ("str?", False), **MEMBER_OPTIONAL}),
    EventType.GROUP_EMPTY: (GroupEmpty, {"generation": ("int", True)}),
    EventType.GROUP_DELETED: (GroupDeleted, {}),
    EventType.COORDINATOR_CHANGE: (CoordinatorChange, {
        "partition": ("int", True), "action": ("str", True), "broker": ("int?", False), "epoch": ("int?", False)}),
    EventType.TOPIC_PARTITIONS: (TopicPartitions, {"topics": ("topic_counts", True)}),
    EventType.END_OFFSETS: (EndOffsets, {"offsets": ("offset_list", True)}),
    EventType.BROKER_RELEASE: (BrokerRelease, {"release": ("str", True), "broker": ("int?", False),
                                               "source": ("str?", False)}),
    EventType.GROUP_CONFIG: (GroupConfig, {
        "source": ("str", True), "group_type": ("str?", False), "session_timeout_ms": ("int?", False),
        "heartbeat_interval_ms": ("int?", False), "assignors": ("str_list?", False),
        "num_standby_replicas": ("int?", False)}),
    EventType.GROUP_DESCRIBED: (GroupDescribed, {
        "group_type": ("str?", False), "state": ("str?", False), "protocol": ("str?", False),
        "group_epoch": ("int?", False), "assignment_epoch": ("int?", False), "members": ("described_members", False),
        "error": ("str?", False), "topology_epoch": ("int?", False)}),
    EventType.STREAMS_TOPOLOGY: (StreamsTopology, {"topology_epoch": ("int?", False), "subtopologies": (
        "subtopologies?", False), "num_standby_replicas": ("int?", False)}),
    EventType.SHARE_PARTITIONS: (SharePartitions, {"initialized": ("tp_list", True)}),
}
SUBTOPOLOGY_SPEC = {"subtopology_id": ("str", True), "source_topics": ("str_list", False),
                    "repartition_source_topics": ("topic_counts?", False),
                    "state_changelog_topics": ("str_list", False), "source_topic_regex": ("str_list", False)}
DESCRIBED_MEMBER_SPEC = {
    "member_id": ("str", True), "group_instance_id": ("str?", False), "client_id": ("str?", False),
    "client_host": ("str?", False), "member_epoch": ("int?", False), "assignment": ("tp_list?", False),
    "target_assignment": ("tp_list?", False), "process_id": ("str?", False),  # and a streams member's tasks
    **{f"{when}{kind}_tasks": ("tp_list?", False) for when in ("", "target_")
       for kind in ("active", "standby", "warmup")},
}
EVENT_TYPES = tuple(SPECS)
# the event types that may carry `received_ms`, their arrival time (the broker plugin's: when the push came)
ARRIVAL_TIMED = frozenset(t for t, (_, spec) in SPECS.items() if "received_ms" in spec)
MEMBER_SPEC = {
    "member_id": ("str", True), "group_instance_id": ("str?", False), "client_id": ("str?", False),
    "host": ("str?", False), "session_timeout_ms": ("int?", False), "rebalance_timeout_ms": ("int?", False),
    "topics": ("str_list", False), "owned": ("tp_list", False), "assignment": ("tp_list", False),
    "rack": ("str?", False), "generation": ("int?", False),
}
COORDINATOR_ACTIONS = ("elected", "resigned")
CONFIG_SOURCES = tuple(ConfigSource)
GROUP_TYPES = ("consumer", "streams", "share")
RELEASE_RE = re.compile(r"\d+\.\d+\.\d+(?:[-.+][0-9A-Za-z.+-]*)?")  # an Apache Kafka release: 4.0.0, 4.1.0-rc1


class _Bad(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class _NotJson:
    __slots__ = ("detail",)

    def __init__(self, detail: str):
        self.detail = detail


def use_fast_json(loads: Callable[[str], Any] | None) -> Callable[[str], Any] | None:
    """Parse JSON with `loads` (a faster parser; None: `json` alone) from now on; returns the one it replaces.

    The core imports nothing outside the standard library: the entry points that read records at volume register
    orjson's `loads` through `rebalance_monitor.decoding.json_parser.use_fastest_available`. `loads`
    must be strict RFC 8259 and raise ValueError on anything else: what it refuses is then parsed by `json`,
    so results never depend on which parser is registered (tests/core/test_events.py holds the two equal)."""
    global _fast_loads
    previous, _fast_loads = _fast_loads, loads
    return previous


def loads_json(text: str):
    """Parse JSON text; a `_NotJson` (with the parser's message) when it is not JSON.

    The registered fast parser first (`use_fast_json`); whatever it refuses (orjson: NaN, integers beyond 64
    bits, lone surrogates, nesting deeper than 1024) is parsed by `json`, so the result never depends on which
    parser is registered."""
    if _fast_loads is not None:
        try:
            return _fast_loads(text)
        except ValueError:
            pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        return _NotJson(str(exc)[:200])


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _tp_list(name: str, value, with_offset: bool = False) -> tuple:
    if not isinstance(value, list):
        raise _Bad(f"{REASON_BAD_TYPE}:{name}", "expected a list")
    width = 3 if with_offset else 2
    out = []
    for item in value:
        if not isinstance(item, list) or len(item) != width or not isinstance(item[0], str) \
                or not _is_int(item[1]) or (with_offset and not _is_int(item[2])):
            shape = "[topic, partition, offset]" if with_offset else "[topic, partition]"
            raise _Bad(f"{REASON_BAD_TYPE}:{name}", f"each entry must be {shape}")
        if item[1] < 0:
            raise _Bad(f"{REASON_BAD_VALUE}:{name}", "negative partition")
        out.append(tuple(item))
    return tuple(out)


def _convert(name: str, kind: str, value):
    """`value` of field `name` as its kind wants it (see SPECS), or `_Bad`."""
    return _converter(kind)(name, value)


def _nullable(convert):
    def nullable(name: str, value):
        return None if value is None else convert(name, value)
    return nullable


def _not_null(convert):
    def not_null(name: str, value):
        if value is None:
            raise _Bad(f"{REASON_BAD_TYPE}:{name}", "must not be null")
        return convert(name, value)
    return not_null


def _to_str(name: str, value):
    if type(value) is not str and not isinstance(value, str):
        raise _Bad(f"{REASON_BAD_TYPE}:{name}", "expected a string")
    return value


def _to_int(name: str, value):
    if type(value) is not int and not _is_int(value):
        raise _Bad(f"{REASON_BAD_TYPE}:{name}", "expected an integer")
    return value


def _to_num(name: str, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Bad(f"{REASON_BAD_TYPE}:{name}", "expected a number")
    if value != value or value in (float("inf"), float("-inf")):
        raise _Bad(f"{REASON_BAD_VALUE}:{name}", "not a finite number")
    return float(value) if type(value) is int and not -(1 << 63) <= value < 1 << 64 else value  # (orjson's reading)


def _to_str_list(name: str, value):
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise _Bad(f"{REASON_BAD_TYPE}:{name}", "expected a list of strings")
    return tuple(value)


def _to_topic_counts(name: str, value):
    if not isinstance(value, dict) or not all(_is_int(c) and c >= 0 for c in value.values()):
        raise _Bad(f"{REASON_BAD_TYPE}:{name}", "expected {topic: partition_count}")
    return dict(value)


def _to_str_map(name: str, value):
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _Bad(f"{REASON_BAD_TYPE}:{name}", "expected {key: string}")
    return dict(value)


def _objects(cls, spec: dict, what: str) -> Callable:
    """The converter of a list of `cls` objects (fields by `spec`)."""
    def convert(name: str, value):
        if not isinstance(value, list):
            raise _Bad(f"{REASON_BAD_TYPE}:{name}", f"expected a list of {what} objects")
        return tuple(_build(cls, spec, m, f"{name}.") for m in value)
    return convert


_BASE_CONVERTERS = {
    "str": _to_str, "int": _to_int, "num": _to_num, "str_list": _to_str_list, "tp_list": _tp_list,
    "offset_list": lambda name, value: _tp_list(name, value, with_offset=True),
    "topic_counts": _to_topic_counts, "str_map": _to_str_map, "members": _objects(MemberInfo, MEMBER_SPEC, "member"),
    "described_members": _objects(DescribedMember, DESCRIBED_MEMBER_SPEC, "member"),
    "subtopologies": _objects(StreamsSubtopology, SUBTOPOLOGY_SPEC, "subtopology"),
}
_CONVERTERS: dict[str, Callable] = {}


def _converter(kind: str) -> Callable:
    """The function that converts a field of `kind` (nullable when it ends with "?")."""
    convert = _CONVERTERS.get(kind)
    if convert is None:
        base = _BASE_CONVERTERS.get(kind.rstrip("?"))
        if base is None:
            raise AssertionError(kind)
        convert = _CONVERTERS[kind] = _nullable(base) if kind.endswith("?") else _not_null(base)
    return convert


def _compile(spec: dict) -> tuple:
    """A spec's fields as (name, required, converter), "v" and "type" left out (checked before)."""
    return tuple((name, required, _converter(kind)) for name, (kind, required) in spec.items()
                 if name not in ("v", "type"))


def _build(cls, spec: dict, obj, prefix: str = ""):
    if not isinstance(obj, dict):
        raise _Bad(f"{REASON_BAD_TYPE}:{prefix.rstrip('.') or 'value'}", "expected an object")
    kwargs = {}
    for name, (kind, required) in spec.items():
        if name in ("v", "type"):
            continue
        if name not in obj:
            if required:
                raise _Bad(f"{REASON_MISSING_FIELD}:{prefix}{name}")
            continue
        kwargs[name] = _convert(prefix + name, kind, obj[name])
    return cls(**kwargs)


# each event type's class and compiled fields, for `_from_object`
_COMPILED: dict[str, tuple] = {etype: (cls, _compile(spec)) for etype, (cls, spec) in SPECS.items()}


def parse_event(value, *, max_bytes: int = DEFAULT_MAX_BYTES, now_ms: int | None = None,
                max_future_ms: int | None = None):
    """Turn one record value into an event, or a `Rejected` saying why not. Never raises.

    `now_ms` and `max_future_ms`, when both given, reject events stamped further than that in the future
    (`future_ts`): one such event would otherwise drag event time forward and make everything else late.
    `max_future_ms` (kafka.max_future_skew), with or without `now_ms`: an event whose `ts` (the client's clock) is
    more than that ahead of its `received_ms` (when the broker received it) takes `received_ms` as its time, and is
    checked against `now_ms` with that time. Replay and the job pass the same `max_future_ms`: the same event.
    """
    raw = value
    try:
        if isinstance(value, (bytes, bytearray, memoryview)):
            if len(value) > max_bytes:
                return Rejected(REASON_TOO_LARGE, raw, f"{len(value)} bytes > {max_bytes}")
            try:
                value = bytes(value).decode("utf-8")
            except UnicodeDecodeError:
                return Rejected(REASON_NOT_JSON, raw, "not UTF-8")
        if isinstance(value, str):
            if len(value) > max_bytes:
                return Rejected(REASON_TOO_LARGE, raw, f"{len(value)} chars > {max_bytes}")
            text = value
            value = loads_json(text)
            if isinstance(value, _NotJson):
                return Rejected(REASON_NOT_JSON, raw, value.detail)
            ev = _from_object(value, raw, now_ms, max_future_ms)
            if _fast_loads is not None and type(ev) is Rejected and (
                    ev.reason.startswith(REASON_BAD_TYPE) or ev.reason == REASON_NOT_OBJECT):
                # orjson reads integer literals beyond 64 bits as floats where `json` keeps them integers: a
                # type error (or a record that is a number, not an object) may be that; decide with `json`
                # (rare: only for rejects)
                try:
                    ev = _from_object(json.loads(text), raw, now_ms, max_future_ms)
                except (ValueError, RecursionError):
                    pass
            return ev
        return _from_object(value, raw, now_ms, max_future_ms)
    except RecursionError:
        return Rejected(REASON_NOT_JSON, raw, "nesting too deep")


def _from_object(value, raw, now_ms: int | None, max_future_ms: int | None):
    try:
        if not isinstance(value, dict):
            return Rejected(REASON_NOT_OBJECT, raw, type(value).__name__)
        for name in ("v", "type", "ts", "group"):
            if name not in value:
                return Rejected(f"{REASON_MISSING_FIELD}:{name}", raw)
        v = value["v"]
        if not _is_int(v):
            return Rejected(f"{REASON_BAD_TYPE}:v", raw)
        if v != SCHEMA_VERSION:
            return Rejected(REASON_UNSUPPORTED_VERSION, raw, f"v={v}")
        etype = value["type"]
        if not isinstance(etype, str):
            return Rejected(f"{REASON_BAD_TYPE}:type", raw)
        entry = SPECS.get(etype)
        if entry is None:
            return Rejected(REASON_UNKNOWN_TYPE, raw, etype[:100])
        ts = value["ts"]
        if not _is_int(ts):
            return Rejected(f"{REASON_BAD_TYPE}:ts", raw)
        if ts < 0 or ts >= 1 << 53:
            return Rejected(f"{REASON_BAD_VALUE}:ts", raw, "outside 0..2^53")
        if etype in ARRIVAL_TIMED and value.get("received_ms") is not None:
            received = value["received_ms"]
            if not _is_int(received):
                return Rejected(f"{REASON_BAD_TYPE}:received_ms", raw)
            if received < 0 or received >= 1 << 53:
                return Rejected(f"{REASON_BAD_VALUE}:received_ms", raw, "outside 0..2^53")
            if max_future_ms is not None and ts > received + max_future_ms:
                ts = received  # the client's clock is ahead of the broker's: the arrival time is the event's
        if now_ms is not None and max_future_ms is not None and ts > now_ms + max_future_ms:
            return Rejected(REASON_FUTURE_TS, raw, f"ts {ts} is more than {max_future_ms} ms ahead")
        if not isinstance(value["group"], str):
            return Rejected(f"{REASON_BAD_TYPE}:group", raw)
        cls, fields = _COMPILED[etype]
        kwargs = {"type": etype, "ts": ts, "group": value["group"], "v": v}
        for name, required, convert in fields:
            if name not in value:
                if required:
                    return Rejected(f"{REASON_MISSING_FIELD}:{name}", raw)
                continue
            kwargs[name] = convert(name, value[name])
        if etype == EventType.COORDINATOR_CHANGE and kwargs["action"] not in COORDINATOR_ACTIONS:
            return Rejected(f"{REASON_BAD_VALUE}:action", raw, f"allowed: {', '.join(COORDINATOR_ACTIONS)}")
        if etype == EventType.GROUP_CONFIG:
            bad = _bad_group_config(kwargs)
            if bad is not None:
                return Rejected(bad[0], raw, bad[1])
        if etype == EventType.BROKER_RELEASE and RELEASE_RE.fullmatch(kwargs["release"]) is None:
            return Rejected(f"{REASON_BAD_VALUE}:release", raw, "a release such as 4.0.0 (MAJOR.MINOR.PATCH[-suffix])")
        return cls(**kwargs)
    except _Bad as bad:
        return Rejected(bad.reason, raw, bad.detail)


def _bad_group_config(kwargs: dict) -> tuple[str, str] | None:
    """Why a `group_config` event's fields do not fit (reason, detail), or None. A broker's defaults belong to no
    group (group ""), a group's overrides to one; timeouts positive, standbys not negative; group_type null: consumer."""
    source = kwargs["source"]
    if source not in CONFIG_SOURCES:
        return f"{REASON_BAD_VALUE}:source", f"allowed: {', '.join(CONFIG_SOURCES)}"
    if (source == ConfigSource.BROKER) != (kwargs["group"] == ""):
        return f"{REASON_BAD_VALUE}:group", "a broker's defaults have group \"\", a group's overrides its name"
    if kwargs.get("group_type") is None:
        kwargs["group_type"] = "consumer"
    elif kwargs["group_type"] not in GROUP_TYPES:
        return f"{REASON_BAD_VALUE}:group_type", f"allowed: {', '.join(GROUP_TYPES)}"
    for name, least in (("session_timeout_ms", 1), ("heartbeat_interval_ms", 1), ("num_standby_replicas", 0)):
        if kwargs.get(name) is not None and kwargs[name] < least:
            return f"{REASON_BAD_VALUE}:{name}", f"must be at least {least}"
    return None
