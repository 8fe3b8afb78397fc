"""Broker coordinator-log decoder: real lines from public reports of several Kafka eras and lines synthesised
from the source line of releases with no public sample (tests/inputs/data/coordinator_lines.jsonl names the
source of each), JSON wrappers, timestamps, rejection, and a bounded fuzz run."""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.inputs.coordinator_log import UNPARSED, decode_log_record

DATA = os.path.join(os.path.dirname(__file__), "data", "coordinator_lines.jsonl")
with open(DATA, encoding="utf-8") as fh:
    CASES = [json.loads(line) for line in fh if line.strip()]
with open(os.path.join(os.path.dirname(__file__), "data", "coordinator_real_lines.jsonl"), encoding="utf-8") as fh:
    REAL_LINES = [json.loads(line)["line"] for line in fh if line.strip()]


def _check_canonical(events):
    for ev in events:
        parsed = parse_event(ev)
        assert not isinstance(parsed, Rejected), (parsed, ev)


def test_data_file_names_a_source_for_every_line():
    assert len(CASES) >= 60
    for case in CASES:
        src = case["source"]
        assert src.startswith("https://") or src.startswith("synthesised from "), src
    assert sum(c["source"].startswith("https://") for c in CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[f"{i:02d}" for i in range(len(CASES))])
def test_line(case):
    d = decode_log_record(case["line"], record_ts_ms=None)
    if case["types"] is None:
        assert d.skipped and d.events == [] and d.rejected_reason is None
        return
    assert d.rejected_reason is None, (d.rejected_reason, d.detail)
    assert not d.skipped
    assert [e["type"] for e in d.events] == case["types"]
    _check_canonical(d.events)
    if case.get("record_type"):
        assert d.record_type == case["record_type"]
    if case["expect"]:
        first = d.events[0]
        for k, v in case["expect"].items():
            assert first.get(k, "<missing>") == v, (k, first)


def test_timestamp_sources_and_utc_assumption():
    line = "[2024-01-02 03:04:05,678] INFO [GroupCoordinator 1]: Group g with generation 3 is now empty " \
           "(__consumer_offsets-1) (kafka.coordinator.group.GroupCoordinator)"
    assert decode_log_record(line).events[0]["ts"] == 1704164645678  # read as UTC
    zoned = line.replace("03:04:05,678]", "03:04:05.678+02:00]")
    assert decode_log_record(zoned).events[0]["ts"] == 1704164645678 - 2 * 3600 * 1000
    bare = line.split("] ", 1)[1]
    assert decode_log_record(bare, record_ts_ms=42).events[0]["ts"] == 42
    d = decode_log_record(bare)
    assert d.rejected_reason == "no_timestamp" and d.events == []
    # wrappers: Filebeat (@timestamp ISO), Fluent Bit (log + epoch seconds), Vector (timestamp), epoch ms
    fb = json.dumps({"@timestamp": "2024-05-01T10:00:00.123Z", "message": line})
    assert decode_log_record(fb).events[0]["ts"] == 1714557600123
    fl = json.dumps({"log": line + "\n", "time": 1714557600.5})
    assert decode_log_record(fl.encode()).events[0]["ts"] == 1714557600500
    vec = json.dumps({"message": line, "timestamp": "2024-05-01T10:00:00.123456789Z"})
    assert decode_log_record(vec).events[0]["ts"] == 1714557600123
    ms = json.dumps({"message": line, "ts": 1714557600999})
    assert decode_log_record(ms).events[0]["ts"] == 1714557600999
    assert decode_log_record(json.dumps({"msg_without_line": 1})).skipped


def test_unknown_coordinator_lines_are_rejected_and_debug_ones_skipped():
    line = "[2024-01-02 03:04:05,678] INFO [GroupCoordinator 1]: Something new happened to group g " \
           "(kafka.coordinator.group.GroupCoordinator)"
    d = decode_log_record(line)
    assert d.rejected_reason == UNPARSED and d.events == [] and "Something new" in d.detail
    d = decode_log_record(line.replace(" INFO ", " DEBUG "))
    assert d.skipped and d.rejected_reason is None
    d = decode_log_record(line.replace("Something new happened to group g", "Starting up."))
    assert d.rejected_reason is None and d.events == [] and d.record_type == "log:other"


def test_non_coordinator_and_garbage_inputs_are_skipped():
    for value in ["", "hello", b"\xff\xfe\x00", "{not json", "[1, 2]", None]:
        d = decode_log_record(value)
        assert d.skipped and d.rejected_reason is None, value


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from([c["line"] for c in CASES] + REAL_LINES), st.integers(0, 400), st.integers(0, 400),
       st.text(max_size=12))
def test_fuzz_mutated_lines(line, start, length, insert):
    mutated = line[:start] + insert + line[start + length:]
    d = decode_log_record(mutated, record_ts_ms=1)
    assert d.rejected_reason in (None, UNPARSED, "no_timestamp")
    assert not (d.skipped and d.events)
    _check_canonical(d.events)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200)))
def test_fuzz_random_input(value):
    d = decode_log_record(value, record_ts_ms=1)
    _check_canonical(d.events)


@pytest.mark.parametrize("reason, member", [
    ("Adding new member j1-7b90 with group instance id null; client reason: need to re-join with the given "
     "member-id: j1-7b90", "j1-7b90"),
    ("Adding new member odd id (with) \"quotes\"/slash with group instance id Some(x)", "odd id (with) \"quotes\"/slash"),
    ("Leader out-0-726d re-joining group during Stable; client reason: not provided", "out-0-726d"),
    ("explicit `LeaveGroup` request for (j1 (x) y) members.", "j1 (x) y"),
    ("Removing member a b on LeaveGroup; client reason: the consumer is being closed", "a b"),
    ("removing member c on heartbeat expiration", "c"),
    ("Removing Set(m1, m2) on pending sync request expiration", "m1"),
    ("Updating metadata for member zz during Stable; client reason: Adding new member q with group instance id x",
     "zz"),
    ("Updating metadata for member connect-1-bdf1", "connect-1-bdf1"),  # 2.2-2.6: a Connect worker's rejoin
    ("Updating metadata for static member s-1 with instance id Some(i)", "s-1"),
    ("leader a (b) re-joining group during Stable", "a (b)"),
    ("Adding new member c@h (github.com/segmentio/kafka-go)-f486 with group instanceid None",
     "c@h (github.com/segmentio/kafka-go)-f486"),
    ("Adding new member consumer-1-5b1e", "consumer-1-5b1e"),  # 2.2
    ("Member s-StreamThread-2-consumer-9 is joining group during Stable; client reason: x",
     "s-StreamThread-2-consumer-9"),
    ("group epoch bumped to 3", None),
    ("", None),
    (None, None),
])
def test_the_member_a_rebalance_reason_names(reason, member):
    from rebalance_monitor.inputs.coordinator_log import reason_member

    assert reason_member(reason) == member


def test_a_new_member_is_tracked_from_the_coordinator_s_own_lines():
    head = "[2026-11-24 03:51:15,603] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=7] "
    tail = " (org.apache.kafka.coordinator.group.GroupMetadataManager)"
    added = decode_log_record(head + "Pending dynamic member with id m (1) joins group g in Stable state. Adding "
                                     "to the group now." + tail)
    assert [(e["type"], e["member_id"]) for e in added.events] == [("join", "m (1)")]
    static = decode_log_record(head + "Static member with groupInstanceId=i-0 and unknown member id joins group g "
                                      "in Empty state. Created a new member id i-0-abc for this member and added to "
                                      "the group." + tail)
    assert [(e["type"], e["member_id"], e["group_instance_id"]) for e in static.events] == [("join", "i-0-abc", "i-0")]
    started = decode_log_record(head + "Preparing to rebalance group g in state PreparingRebalance with old generation"
                                       " 0 (reason: Adding new member m2 with group instance id null; client reason: "
                                       "not provided)." + tail)
    assert [(e["type"], e.get("member_id")) for e in started.events] == [("rebalance_started", "m2"), ("join", "m2")]


def test_a_kip848_group_whose_last_member_left_is_empty():
    line = ("[2026-11-24 04:30:26,131] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=7] [GroupId g848] "
            "Bumped group epoch to 7 with metadata hash 0. (org.apache.kafka.coordinator.group.GroupMetadataManager)")
    assert [(e["type"], e["generation"]) for e in decode_log_record(line).events] == [("group_empty", 7)]
    busy = line.replace("metadata hash 0.", "metadata hash -5238258650896628519.")
    assert [(e["type"], e["generation"]) for e in decode_log_record(busy).events] == [("rebalance_started", 6)]


def test_a_kip848_epoch_bumped_with_hash_0_while_a_member_waits_for_its_topic_is_not_empty():
    """What Kafka 4.4 logged in a real kip848_crash capture: the first member subscribed before its topic existed,
    so the group's first epoch has metadata hash 0, and the next epoch (the topic created) no member line. The
    member stays in both (its join line names the consumer protocol: it never rejoins)."""
    from rebalance_monitor.core.reconstruct import Reconstructor

    head = "[2026-11-25 08:40:2{s},{ms:03d}] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId w] "
    tail = " (org.apache.kafka.coordinator.group.GroupMetadataManager)"
    lines = [(3, 462, "Member B4X joins the consumer group using the consumer protocol."),
             (3, 462, "Bumped group epoch to 2 with metadata hash 0."),
             (3, 463, "Computed a new target assignment for epoch 2 with 'uniform' assignor in 0ms."),
             (4, 460, "Bumped group epoch to 3 with metadata hash -5067662567298966672."),
             (5, 461, "Computed a new target assignment for epoch 3 with 'uniform' assignor in 0ms.")]
    events = [e for s, ms, text in lines for e in decode_log_record(head.format(s=s, ms=ms) + text + tail).events]
    assert events[0]["group_protocol"] == "consumer"
    recon = Reconstructor()
    out = [r for e in events for r in recon.feed(parse_event(e))] + recon.finish()
    gens = {r["generation"]: r["members"] for r in out if r["kind"] == "generation"}
    assert gens == {2: ["B4X"], 3: ["B4X"]}
