"""Events back to their canonical JSON form (`event_to_dict`) and the JSON Schema of schema v1 generated from the
parser's field specifications (`json_schema`, written to conf/event-schema-v1.json)."""
from __future__ import annotations

from dataclasses import fields

from .event_model import SCHEMA_VERSION, DescribedMember, Event, MemberInfo, StreamsSubtopology
from .event_parsing import COMMON, DESCRIBED_MEMBER_SPEC, MEMBER_SPEC, SPECS, SUBTOPOLOGY_SPEC

# --- serialisation back to the canonical JSON form -----------------------------------------------
def _plain(value):
    if isinstance(value, tuple):
        return [_plain(x) for x in value]
    if isinstance(value, (MemberInfo, DescribedMember, StreamsSubtopology)):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)
                if getattr(value, f.name) is not None}
    if isinstance(value, dict):
        return {k: _plain(x) for k, x in value.items()}
    return value


def event_to_dict(event: Event) -> dict:
    """The canonical JSON object for an event (fields left at None are omitted)."""
    out = {}
    for f in fields(event):
        val = getattr(event, f.name)
        if val is None and f.name not in ("error", "protocol", "leader", "reason"):
            continue
        out[f.name] = _plain(val)
    return out



# --- JSON Schema ---------------------------------------------------------------------------------
_TP = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer", "minimum": 0}],
       "minItems": 2, "maxItems": 2}
_OFFSET = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer", "minimum": 0},
                                            {"type": "integer"}], "minItems": 3, "maxItems": 3}


def _kind_schema(kind: str) -> dict:
    nullable = kind.endswith("?")
    base = kind.rstrip("?")
    schema = {
        "str": {"type": "string"},
        "int": {"type": "integer"},
        "num": {"type": "number"},
        "str_list": {"type": "array", "items": {"type": "string"}},
        "tp_list": {"type": "array", "items": _TP},
        "offset_list": {"type": "array", "items": _OFFSET},
        "topic_counts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
        "str_map": {"type": "object", "additionalProperties": {"type": "string"}},
        "members": {"type": "array", "items": {"$ref": "#/$defs/member"}},
        "described_members": {"type": "array", "items": {"$ref": "#/$defs/described_member"}},
        "subtopologies": {"type": "array", "items": {"$ref": "#/$defs/subtopology"}},
    }[base]
    if nullable:
        return {"anyOf": [schema, {"type": "null"}]}
    return schema


def _object_schema(spec: dict) -> dict:
    return {
        "type": "object",
        "properties": {name: _kind_schema(kind) for name, (kind, _) in spec.items()},
        "required": [name for name, (_, req) in spec.items() if req],
    }


def json_schema() -> dict:
    """JSON Schema (2020-12) of canonical events v1, generated from the same specs the parser uses."""
    variants = []
    for etype, (_, spec) in SPECS.items():
        obj = _object_schema({**COMMON, **spec})
        obj["properties"]["type"] = {"const": etype}
        obj["properties"]["v"] = {"const": SCHEMA_VERSION}
        obj["properties"]["ts"] = {"type": "integer", "minimum": 0}
        if "received_ms" in spec:
            obj["properties"]["received_ms"] = {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}
        variants.append(obj)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/kafka-rebalance-monitor/schemas/event-v1.json",
        "title": "Kafka rebalance monitor canonical event, schema v1",
        "oneOf": variants,
        "$defs": {"member": _object_schema(MEMBER_SPEC), "described_member": _object_schema(DESCRIBED_MEMBER_SPEC),
                  "subtopology": _object_schema(SUBTOPOLOGY_SPEC)},
    }
