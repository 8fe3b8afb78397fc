"""An event rebuilt from a value the parser has already accepted (core/checked_events.py) is the event the parser
gives: for every event type, every field of its specification present, absent or null, keys the parser does not
know, integers beyond 64 bits, with `json` or orjson registered. The Spark job's processor rebuilds so the events its
decode stage checked (and carried as their record's text), instead of checking them again."""
from __future__ import annotations

import json
from contextlib import contextmanager

import orjson  # a dependency of the package (pyproject): its absence is a failure, not a skip
import pytest
from hypothesis import assume, given, settings, strategies as st

from rebalance_monitor.core import events as E
from rebalance_monitor.core.event_parsing import (CONFIG_SOURCES, COORDINATOR_ACTIONS, DESCRIBED_MEMBER_SPEC,
                                                  GROUP_TYPES, MEMBER_SPEC, SPECS, SUBTOPOLOGY_SPEC)
from rebalance_monitor.core.events import (Rejected, event_from_checked_dict, event_from_checked_text, event_to_dict,
                                           parse_event)

_BIG = 2 ** 70  # integers beyond 64 bits: orjson reads them as floats, `json` as integers
_KINDS = {
    "str": st.text(max_size=4),
    "int": st.integers(-_BIG, _BIG),
    "num": st.integers(-_BIG, _BIG) | st.floats(allow_nan=False, allow_infinity=False),
    "str_list": st.lists(st.text(max_size=3), max_size=3),
    "tp_list": st.lists(st.tuples(st.text(max_size=3), st.integers(0, _BIG)).map(list), max_size=3),
    "offset_list": st.lists(st.tuples(st.text(max_size=3), st.integers(0, _BIG), st.integers(-_BIG, _BIG)).map(list),
                            max_size=3),
    "topic_counts": st.dictionaries(st.text(max_size=3), st.integers(0, _BIG), max_size=3),
    "str_map": st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=3),
}
# fields whose values the parser holds to a closed set or a form
_FIELDS = {
    ("coordinator_change", "action"): st.sampled_from(COORDINATOR_ACTIONS),
    ("broker_release", "release"): st.sampled_from(("4.0.0", "3.9.1", "4.1.0-rc1")),
    ("group_config", "source"): st.sampled_from(CONFIG_SOURCES),
    ("group_config", "group_type"): st.sampled_from(GROUP_TYPES) | st.none(),
    ("group_config", "session_timeout_ms"): st.integers(1, _BIG) | st.none(),
    ("group_config", "heartbeat_interval_ms"): st.integers(1, _BIG) | st.none(),
}
_UNKNOWN = {"extra": st.integers(-_BIG, _BIG) | st.text(max_size=3) | st.lists(st.integers(), max_size=2)}


def _value(kind: str):
    base = kind.rstrip("?")
    if base == "members":
        value = st.lists(_object(MEMBER_SPEC), max_size=2)
    elif base == "described_members":
        value = st.lists(_object(DESCRIBED_MEMBER_SPEC), max_size=2)
    elif base == "subtopologies":
        value = st.lists(_object(SUBTOPOLOGY_SPEC), max_size=2)
    else:
        value = _KINDS[base]
    return value | st.none() if kind.endswith("?") else value


def _object(spec: dict, etype: str = ""):
    """Objects of `spec`: its required fields, any of its optional ones, perhaps a key it does not know."""
    def field(name, kind):
        return _FIELDS[etype, name] if (etype, name) in _FIELDS else _value(kind)
    required = {name: field(name, kind) for name, (kind, req) in spec.items() if req}
    optional = {name: field(name, kind) for name, (kind, req) in spec.items() if not req}
    return st.fixed_dictionaries(required, optional={**optional, **_UNKNOWN})


def _event(etype: str):
    """Objects of event type `etype` the parser accepts (a group's settings given the group their source wants)."""
    common = st.fixed_dictionaries({"v": st.just(1), "type": st.just(etype), "ts": st.integers(0, 2 ** 53 - 1),
                                    "group": st.text(min_size=1, max_size=3)})
    objects = st.builds(lambda c, fields: {**c, **fields}, common, _object(SPECS[etype][1], etype))
    if etype == "group_config":
        objects = objects.map(lambda o: {**o, "group": ""} if o["source"] == "broker" else o)
    return objects


def _same(got, want) -> bool:
    """Equal, and of the same types throughout (1.0 == 1, but a float is not what the parser gave)."""
    return got == want and repr(got) == repr(want)


@contextmanager
def _parsing_with(parser: str):
    """The core parsing JSON with `json` alone, or with orjson registered (as the job's workers have it)."""
    previous = E.use_fast_json(orjson.loads if parser == "orjson" else None)
    try:
        yield
    finally:
        E.use_fast_json(previous)


PARSERS = ("json", "orjson")


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("etype", E.EVENT_TYPES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_rebuilt_event_is_the_parsed_one(parser, etype, data):
    obj = data.draw(_event(etype))
    text = json.dumps(obj, separators=data.draw(st.sampled_from([(",", ":"), (", ", ": ")])))
    with _parsing_with(parser):
        want = parse_event(text)
        assume(not isinstance(want, Rejected))
        assert _same(event_from_checked_text(text), want), text  # the text the decode stage carries
        assert _same(event_from_checked_dict(json.loads(text)), want), text
        assert _same(event_from_checked_dict(event_to_dict(want)), want), text


def test_every_field_kind_is_generated():
    kinds = {kind.rstrip("?") for _, spec in SPECS.values() for kind, _ in spec.values()}
    kinds |= {kind.rstrip("?") for spec in (MEMBER_SPEC, DESCRIBED_MEMBER_SPEC, SUBTOPOLOGY_SPEC)
              for kind, _ in spec.values()}
    assert kinds <= set(_KINDS) | {"members", "described_members", "subtopologies"}


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("number", [-(2 ** 63) - 1, 2 ** 64, -(2 ** 63), 2 ** 64 - 1])
def test_a_number_field_beyond_64_bits_is_the_same_float_whichever_parser_read_it(parser, number):
    """A `num` field (`poll_idle_ratio`) holding an integer literal beyond 64 bits: orjson reads it as a float,
    `json` as an integer; the parser keeps the float either way, and so does the rebuilt event (found by the
    property test above: -2**63 - 1 with orjson registered)."""
    text = json.dumps({"v": 1, "type": "client_metrics", "ts": 0, "group": "g", "member_id": "",
                       "poll_idle_ratio": number})
    with _parsing_with(parser):
        want = parse_event(text)
        assert type(want.poll_idle_ratio) is (int if -(2 ** 63) <= number < 2 ** 64 else float), want
        assert _same(event_from_checked_text(text), want) and _same(event_from_checked_dict(json.loads(text)), want)


@pytest.mark.parametrize("parser", PARSERS)
def test_integers_beyond_64_bits_are_read_as_the_parser_reads_them(parser):
    big = 2 ** 64 + 1
    texts = [
        json.dumps({"v": 1, "type": "join", "ts": 5, "group": "g", "member_id": "m", "protocols": [], "topics": [],
                    "session_timeout_ms": big}),
        json.dumps({"v": 1, "type": "sync", "ts": 5, "group": "g", "member_id": "m", "generation": 1,
                    "protocol": None, "leader": None, "assignment": [["t", big]]}),
        json.dumps({"v": 1, "type": "topic_partitions", "ts": 5, "group": "", "topics": {"t": big}}),
        json.dumps({"v": 1, "type": "generation_completed", "ts": 5, "group": "g", "generation": 1,
                    "members": [{"member_id": "m", "generation": big}]}),
    ]
    with _parsing_with(parser):
        for text in texts:
            want = parse_event(text)
            assert type(want) is not Rejected, text
            assert _same(event_from_checked_text(text), want), text


def test_a_text_beyond_the_default_size_limit_is_decided_by_the_parser():
    """The decode stage accepts records up to `kafka.max_record_bytes`, which may exceed the parser's default: what
    the parser gives for such a text (too large) is what the rebuild gives."""
    text = json.dumps({"v": 1, "type": "leave", "ts": 5, "group": "g", "member_id": "m",
                       "reason": "x" * E.DEFAULT_MAX_BYTES})
    assert type(parse_event(text, max_bytes=2 * E.DEFAULT_MAX_BYTES)) is E.Leave
    got = event_from_checked_text(text)
    assert type(got) is Rejected and got == parse_event(text)
