"""Real broker GroupCoordinator lines from public reports (Kafka 2.2 to 4.x), each held against its full decoding:
the event types in order and, for every event, group, generation, member id, client id, host, leader, protocol,
cause and reason as the line states them (`data/coordinator_real_lines.jsonl`, each with its source; lines marked
`"real": false` are synthesised from a release's format string with a member id a client really prints).
A line no decoder can read must be a dead letter with a reason, through the path the job takes.

`python tests/inputs/test_coordinator_real_lines.py` prints the fraction decoded fully right."""
from __future__ import annotations

import json
import os
import sys

import pytest

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.decode import decode_record
from rebalance_monitor.inputs.coordinator_log import UNPARSED, decode_log_record

DATA = os.path.join(os.path.dirname(__file__), "data", "coordinator_real_lines.jsonl")
with open(DATA, encoding="utf-8") as fh:
    CASES = [json.loads(line) for line in fh if line.strip()]


def mismatches(case: dict) -> list[str]:
    """What the decoder gets wrong on a case ([] when fully right)."""
    d = decode_log_record(case["line"])
    if case.get("rejected"):
        return [] if d.rejected_reason == case["rejected"] and not d.events else \
            [f"expected dead letter {case['rejected']}, got {d.rejected_reason} / {len(d.events)} events"]
    if d.skipped:
        return ["skipped"]
    if d.rejected_reason:
        return [f"rejected {d.rejected_reason}: {d.detail[:80]}"]
    wrong = []
    if case.get("record_type") and d.record_type != case["record_type"]:
        wrong.append(f"record_type {d.record_type!r} != {case['record_type']!r}")
    got_types = [e["type"] for e in d.events]
    want_types = [e["type"] for e in case["events"]]
    if got_types != want_types:
        return wrong + [f"events {got_types} != {want_types}"]
    for i, (got, want) in enumerate(zip(d.events, case["events"])):
        for key, value in want.items():
            if got.get(key) != value:
                wrong.append(f"event {i} {key}: {got.get(key)!r} != {value!r}")
        if isinstance(parse_event(got), Rejected):
            wrong.append(f"event {i} is not canonical: {parse_event(got)}")
    return wrong


def test_every_case_names_its_source_and_most_are_real():
    assert len(CASES) >= 50
    for case in CASES:
        assert case["source"].startswith("https://" if case["real"] else "synthesised from "), case["source"]
    assert sum(c["real"] for c in CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[f"{i:02d}{'' if c['real'] else 's'}" for i, c in enumerate(CASES)])
def test_line_decodes_fully_right(case):
    assert mismatches(case) == [], case["line"]


def test_an_undecodable_coordinator_line_is_a_dead_letter_with_its_reason_never_dropped():
    """Every rejected case goes through `decode_record` (the job's and replay's path) as a `Rejected` carrying the
    reason class the job counts dead letters by, and the line itself."""
    rejected = [c for c in CASES if c.get("rejected")]
    assert rejected
    for case in rejected:
        events, rejects = decode_record("coordinator-log", case["line"].encode())
        assert events == [] and len(rejects) == 1
        assert rejects[0].reason == case["rejected"] == UNPARSED
        assert "group***" in rejects[0].detail
    # a coordinator line the catalogue does not know, at INFO and above: a dead letter, whatever the client ids
    for level in ("INFO", "WARN", "ERROR"):
        line = (f"[2024-01-02 03:04:05,678] {level} [GroupCoordinator 1]: Member a b (c) did something new in group g "
                "(kafka.coordinator.group.GroupCoordinator)")
        events, rejects = decode_record("coordinator-log", line)
        assert events == [] and [r.reason for r in rejects] == [UNPARSED]
    # a known message whose numbers are garbage is not silently skipped either
    bad = ("[2024-01-02 03:04:05,678] INFO [GroupCoordinator 1]: Stabilized group g generation x7 "
           "(kafka.coordinator.group.GroupCoordinator)")
    assert [r.reason for r in decode_record("coordinator-log", bad)[1]] == [UNPARSED]


def test_no_real_line_is_dropped_without_a_reason():
    """Each real line gives events, a counted kind (`record_type`), or a dead-letter reason: never nothing."""
    for case in CASES:
        d = decode_log_record(case["line"])
        assert not d.skipped, case["line"]
        assert d.events or d.record_type or d.rejected_reason, case["line"]


def score() -> str:
    out = []
    for label, subset in (("real", [c for c in CASES if c["real"]]), ("synthesised", [c for c in CASES if not c["real"]])):
        bad = [(c, mismatches(c)) for c in subset]
        bad = [(c, w) for c, w in bad if w]
        out.append(f"{label}: {len(subset) - len(bad)}/{len(subset)} decoded fully right "
                   f"({(len(subset) - len(bad)) / len(subset):.0%})")
        for c, w in bad:
            out.append(f"  - {c['line'][:110]}\n      {'; '.join(w)[:300]}")
    return "\n".join(out)


if __name__ == "__main__":
    print(score())
    sys.exit(0)
