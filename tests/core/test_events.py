"""The canonical event model v1: parsing, every rejection reason, and the JSON Schema kept in step."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from rebalance_monitor.core import events as E
from rebalance_monitor.core.events import Rejected, event_to_dict, json_schema, parse_event

ROOT = Path(__file__).resolve().parents[2]

VALID = {
    "join": {"member_id": "m", "protocols": ["range"], "topics": ["t"], "owned": [["t", 0]],
             "session_timeout_ms": 10000, "rebalance_timeout_ms": 300000, "heartbeat_interval_ms": 3000,
             "group_instance_id": None, "client_id": "c", "host": "/1.2.3.4", "reason": "x"},
    "sync": {"member_id": "m", "generation": 3, "protocol": "range", "leader": "m", "assignment": [["t", 1]]},
    "heartbeat": {"member_id": "m", "generation": 3, "error": "REBALANCE_IN_PROGRESS"},
    "poll": {"member_id": "m", "records": 12},
    "leave": {"member_id": "m", "reason": "the consumer is being closed"},
    "client_metrics": {"member_id": "m", "client_id": "c", "host": "1.2.3.4", "source": "kip714",
                       "interval_ms": 5000, "last_heartbeat_ms_ago": 2000, "last_poll_ms_ago": 0,
                       "poll_interval_max_ms": 512, "assigned_partitions": 3, "poll_idle_ratio": 0.97},
    "commit": {"member_id": "m", "offsets": [["t", 0, 42]]},
    "revoked": {"member_id": "m", "partitions": [["t", 0]]},
    "lost": {"member_id": "m", "partitions": [["t", 0]]},
    "rebalance_started": {"generation": 4, "reason": "r"},
    "generation_completed": {"generation": 5, "protocol": "range", "leader": "m",
                             "members": [{"member_id": "m", "topics": ["t"], "assignment": [["t", 0]]}]},
    "member_removed": {"member_id": "m", "cause": "session_timeout", "reason": "r"},
    "group_empty": {"generation": 6},
    "group_deleted": {},
    "coordinator_change": {"partition": 7, "action": "elected", "broker": 1},
    "topic_partitions": {"topics": {"t": 4}},
    "end_offsets": {"offsets": [["t", 0, 100]]},
    "broker_release": {"release": "4.0.0", "broker": 1},
    "group_config": {"source": "group", "group_type": "consumer", "session_timeout_ms": 20000,
                     "heartbeat_interval_ms": 2000},
    "group_described": {"group_type": "consumer", "state": "Stable", "protocol": "uniform", "group_epoch": 4,
                        "assignment_epoch": 4, "members": [{"member_id": "m", "client_id": "c", "client_host": "/h",
                                                            "member_epoch": 4, "assignment": [["t", 0]],
                                                            "target_assignment": [["t", 0]]}]},
    "streams_topology": {"topology_epoch": 0, "num_standby_replicas": 1, "subtopologies": [
        {"subtopology_id": "0", "source_topics": ["in"], "repartition_source_topics": {"app-rep": 0},
         "state_changelog_topics": ["app-store-changelog"], "source_topic_regex": []}]},
    "share_partitions": {"initialized": [["orders", 0], ["orders", 1]]},
}


def full(etype, **over):
    return {"v": 1, "type": etype, "ts": 1_700_000_000_000, "group": "g", **VALID[etype], **over}


def test_every_type_has_a_valid_example():
    assert set(VALID) == set(E.EVENT_TYPES)


@pytest.mark.parametrize("etype", sorted(VALID))
def test_valid_events_parse_and_round_trip(etype):
    obj = full(etype)
    ev = parse_event(json.dumps(obj).encode())
    assert not isinstance(ev, Rejected), ev
    assert ev.type == etype and ev.group == "g"
    again = parse_event(event_to_dict(ev))
    assert again == ev


@pytest.mark.parametrize("etype", sorted(VALID))
def test_schema_accepts_what_the_parser_accepts(etype):
    jsonschema.validate(full(etype), json_schema())


def test_committed_schema_file_matches_the_classes():
    committed = json.loads((ROOT / "conf" / "event-schema-v1.json").read_text())
    assert committed == json_schema(), "regenerate conf/event-schema-v1.json from rebalance_monitor.core.events"


def test_unknown_fields_are_ignored():
    ev = parse_event(full("poll", extra={"a": 1}, another=3))
    assert isinstance(ev, E.Poll)


CASES = [
    (b"\xff\xfe not utf8", "not_json"),
    (b"{not json", "not_json"),
    (b"[1, 2]", "not_object"),
    (b"x" * (E.DEFAULT_MAX_BYTES + 1), "too_large"),
    (json.dumps({**full("poll"), "v": 2}), "unsupported_version"),
    (json.dumps({**full("poll"), "type": "teleport"}), "unknown_type"),
    (json.dumps({k: v for k, v in full("poll").items() if k != "ts"}), "missing_field:ts"),
    (json.dumps({k: v for k, v in full("sync").items() if k != "generation"}), "missing_field:generation"),
    (json.dumps(full("sync", generation="3")), "bad_type:generation"),
    (json.dumps(full("sync", assignment=[["t"]])), "bad_type:assignment"),
    (json.dumps(full("sync", assignment=[["t", -1]])), "bad_value:assignment"),
    (json.dumps(full("poll", ts=-5)), "bad_value:ts"),
    (json.dumps(full("poll", ts=True)), "bad_type:ts"),
    (json.dumps(full("poll", group=3)), "bad_type:group"),
    (json.dumps(full("poll", v="1")), "bad_type:v"),
    (json.dumps(full("join", topics="t")), "bad_type:topics"),
    (json.dumps(full("coordinator_change", action="moved")), "bad_value:action"),
    (json.dumps(full("generation_completed", members=[{"topics": ["t"]}])), "missing_field:members.member_id"),
    ("[" * 100_000 + "]" * 100_000, "not_json"),
]


@pytest.mark.parametrize("raw,reason", CASES, ids=[c[1] + str(i) for i, c in enumerate(CASES)])
def test_every_rejection_reason(raw, reason):
    rej = parse_event(raw)
    assert isinstance(rej, Rejected)
    assert rej.reason == reason
    assert rej.raw is raw
    assert rej.reason_class in E.REJECT_REASON_PREFIXES


def test_future_timestamps_are_rejected_when_a_clock_is_given():
    now = 1_700_000_000_000
    assert parse_event(full("poll", ts=now + 10), now_ms=now, max_future_ms=1000).type == "poll"
    rej = parse_event(full("poll", ts=now + 5000), now_ms=now, max_future_ms=1000)
    assert rej.reason == "future_ts"


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                              lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=5),
                              max_leaves=20)))
def test_parser_never_raises(value):
    out = parse_event(value if isinstance(value, (bytes, str)) else json.dumps(value))
    assert isinstance(out, (Rejected, E.Event))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(VALID)), st.data())
def test_mutated_valid_events_never_raise(etype, data):
    obj = full(etype)
    key = data.draw(st.sampled_from(sorted(obj)))
    obj[key] = data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=3),
                                   st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)))
    out = parse_event(json.dumps(obj))
    assert isinstance(out, (Rejected, E.Event))


_ODD_VALUES = st.one_of(
    st.integers(min_value=-2**80, max_value=2**80), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5) | st.sampled_from(["\ud800", "\udfff x"]), st.none(), st.booleans(),
    st.lists(st.integers(min_value=-2**70, max_value=2**70), max_size=3))


@settings(max_examples=400, deadline=None)
@given(st.one_of(
    st.tuples(st.sampled_from(sorted(VALID)), st.data()),
    st.sampled_from([
        '{"v": 1, "type": "poll", "ts": 1' + "0" * 25 + ', "group": "g", "member_id": "m"}',  # beyond 64 bits
        '{"v": 1, "type": "poll", "ts": 17e11, "group": "g", "member_id": "m"}',
        '{"v": 1, "type": "poll", "ts": NaN, "group": "g", "member_id": "m"}',
        '{"v": 1, "type": "poll", "type": "heartbeat", "ts": 5, "group": "g", "member_id": "m", "generation": 1,'
        ' "error": null}',  # a duplicate key: the last one counts
        "[" * 1100 + "]" * 1100, '"\\ud800"', "{}", "", "20000000000000000000"]),  # a number, not an object
    st.text(max_size=60)))
def test_events_do_not_depend_on_the_json_parser(case):
    """The core parses with `json`; the drivers register orjson (`use_fast_json`): same events, same rejects."""
    import orjson  # a dependency of the package (pyproject): its absence is a failure, not a skip
    if isinstance(case, tuple):
        etype, data = case
        obj = full(etype)
        obj[data.draw(st.sampled_from(sorted(obj)))] = data.draw(_ODD_VALUES)
        case = json.dumps(obj)
    previous = E.use_fast_json(None)
    try:
        plain = parse_event(case)
        E.use_fast_json(orjson.loads)
        fast = parse_event(case)
    finally:
        E.use_fast_json(previous)
    assert fast == plain
