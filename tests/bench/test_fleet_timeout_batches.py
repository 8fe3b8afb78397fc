"""The fleet bench's "triggers late" (bench/bench_fleet.py `_triggers_late`): which batch gave a member's timeout,
against the first batch that could (its start at or after the deadline plus the watermark delay)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from bench_fleet import Records, _epoch_s, _triggers_late  # noqa: E402


def _records(batch_of: dict) -> Records:
    rec = Records()
    for mid, batch in batch_of.items():
        rec(batch, [{"kind": "member_timeout", "member_id": mid, "group": "g"}], {})
    return rec


def test_a_progress_timestamp_reads_as_unix_seconds():
    assert _epoch_s("2026-11-28T08:47:10.250Z") == 1795855630.25


def test_the_first_batch_at_or_after_the_deadline_plus_the_delay_is_the_one_that_could():
    starts = {10: 100.0, 11: 105.0, 12: 110.0, 13: 115.0}
    judged: list = []
    rec = _records({"on-time": 12, "late": 13, "early": 11})
    # deadline 103 + delay 2 = 105: batch 11 could
    assert "(0 triggers late)" in _triggers_late("early", 103.0, starts, rec, 2.0, judged)
    # deadline 104 + 2 = 106: batch 12 could; the timeout came in 12, then in 13
    assert "the first that could: 12 (0 triggers late)" in _triggers_late("on-time", 104.0, starts, rec, 2.0, judged)
    assert "(1 triggers late)" in _triggers_late("late", 104.0, starts, rec, 2.0, judged)
    assert judged == [0, 0, 1]


def test_a_timeout_never_given_or_not_yet_decidable_is_said_and_not_counted():
    starts = {1: 100.0, 2: 105.0}
    judged: list = []
    rec = _records({"m": 2})
    assert _triggers_late("other", 90.0, starts, rec, 2.0, judged) == "timeout batch: never"
    assert "no batch after the deadline" in _triggers_late("m", 200.0, starts, rec, 2.0, judged)
    assert judged == []
