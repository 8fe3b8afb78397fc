"""A group's clock in the live job (core/group_clock.py): event time, following the wall clock only once the input
has stood still for the delay, never before the job's start; and when the group must look again."""
from __future__ import annotations

import pytest

from rebalance_monitor.core.group_clock import ClockReference, group_now, idle_ms, observe, wake_wall_ms

DELAY = 2_000
E = 1_700_000_000_000  # event time
W = 1_800_000_000_000  # wall clock (the client clocks and the job's need not agree)


def test_a_moving_input_keeps_event_time():
    ref = observe(None, E, W)
    for step in range(1, 6):  # the base moves on every batch: the clock is the base, the wall clock plays no part
        ref = observe(ref, E + step * 1000, W + step * 1000)
        assert group_now(ref, W + step * 1000, started_wall_ms=0, delay_ms=DELAY) == E + step * 1000


@pytest.mark.parametrize("quiet_ms, expected", [
    (0, E), (DELAY - 1, E),  # not yet: an event could still fall inside the disorder window
    (DELAY, E + DELAY), (10_000, E + 10_000),  # then the clock follows the wall clock from the base
])
def test_a_quiet_input_follows_the_wall_clock_after_the_delay(quiet_ms, expected):
    ref = observe(None, E, W)
    assert observe(ref, E, W + quiet_ms) == ref  # the same base later does not restart the count
    assert group_now(ref, W + quiet_ms, started_wall_ms=0, delay_ms=DELAY) == expected


def test_a_higher_base_restarts_the_count_and_a_lower_one_is_ignored():
    ref = observe(observe(None, E, W), E + 500, W + 5_000)
    assert ref == ClockReference(E + 500, W + 5_000)
    assert observe(ref, E, W + 9_000) == ref
    assert group_now(ref, W + 6_000, 0, DELAY) == E + 500


def test_no_idle_time_counts_before_the_jobs_start():
    # the group last saw the input move an hour before a restart: a backlog may be waiting to be read
    ref = observe(None, E, W)
    started = W + 3_600_000
    assert idle_ms(ref, started + 1_000, started) == 1_000
    assert group_now(ref, started + 1_000, started, DELAY) == E
    assert group_now(ref, started + 5_000, started, DELAY) == E + 5_000


def test_without_follow_wall_the_clock_is_the_base():
    ref = observe(None, E, W)
    assert group_now(ref, W + 3_600_000, 0, DELAY, follow_wall=False) == E


def test_the_wake_up_is_when_a_moving_watermark_gets_there_then_when_an_idle_clock_does():
    ref = observe(None, E, W)
    # a deadline 7 s ahead: look again in 7 s (a live input's watermark moves with the wall clock)
    assert wake_wall_ms(ref, E + 7_000, W, 0, DELAY) == W + 7_000
    # a pending event 500 ms ahead: in 500 ms; if the base has not moved by then, once the clock follows
    assert wake_wall_ms(ref, E + 500, W, 0, DELAY) == W + 500
    assert wake_wall_ms(ref, E + 500, W + 500, 0, DELAY) == W + DELAY
    # and the idle clock reaches the want at that time (no wake-up too early to act)
    at = wake_wall_ms(ref, E + 7_000, W + 7_000, 0, DELAY)
    assert group_now(ref, at, 0, DELAY) >= E + 7_000
    # never at or before the batch under way; after a restart, counted from the start
    assert wake_wall_ms(ref, E + 10, W + 5_000, 0, DELAY) == W + 5_001
    assert wake_wall_ms(ref, E + 7_000, W + 100_000, W + 99_000, DELAY) == W + 99_000 + 7_000


def test_a_watermark_catching_up_behind_the_clock_keeps_its_line():
    """The live case: the group's own last events set the base; Spark's watermark (the previous batch's)
    reaches a higher value one trigger later. Once the clock follows the wall clock past that value, the
    count goes on instead of restarting (which would put the clock a trigger behind)."""
    ref = observe(None, E, W, since_ms=W)  # live input (its record appended as the batch read it)
    at = W + 5_000  # the next trigger: the clock follows the wall clock, at E + 5 s
    caught_up = observe(ref, E + 3_000, at, 0, DELAY, follow_wall=True)
    assert group_now(caught_up, at, 0, DELAY) == group_now(ref, at, 0, DELAY) == E + 5_000
    assert group_now(caught_up, at + 4_000, 0, DELAY) == E + 9_000
    # a base past the clock's line is new input: the count restarts
    assert observe(ref, E + 6_000, at, 0, DELAY, follow_wall=True) == ClockReference(E + 6_000, at)
    # a live base of this run follows the wall clock at once: a higher base under its line keeps the line even
    # within the delay; one that came from a backlog does not follow it yet there, and a higher base restarts it
    assert observe(ref, E + 500, W + 1_000, 0, DELAY, follow_wall=True) == ClockReference(E + 500, W + 500, True)
    assert observe(observe(None, E, W), E + 500, W + 1_000, 0, DELAY, follow_wall=True) == \
        ClockReference(E + 500, W + 1_000)
    # without follow_wall a higher base restarts it too
    assert observe(ref, E + 3_000, at, 0, DELAY) == ClockReference(E + 3_000, at)
    # and so do the group's own new events, and a base that came from a backlog (not live)
    assert observe(ref, E + 3_000, at, 0, DELAY, follow_wall=True, keep_line=False) == ClockReference(E + 3_000, at)
    backlog = observe(None, E, W)
    assert observe(backlog, E + 3_000, at, 0, DELAY, follow_wall=True) == ClockReference(E + 3_000, at)


def test_a_backlog_read_slower_than_the_wall_clock_is_never_overtaken():
    """A restart on a backlog produced all at once (old event times, fresh records), read a few records per
    batch, each batch slower than the event time it covers (a loaded machine): the group's clock never gets
    ahead of its own newest event less the delay, so no deadline passes before the events that follow it."""
    from rebalance_monitor.core.group_clock import LiveClock

    clock = LiveClock(DELAY, started_ms=W, horizon_ms=7_000)
    r = _Runner(newest=E)
    r.ref = ClockReference(E - DELAY, W - 60_000, True)  # from before the restart: live then
    wall = W
    for batch in range(30):
        wall += 9_000  # each batch takes 9 s of wall time...
        r.newest += 8_000  # ...and reads 8 s of event time
        release = clock.release_point(r, watermark_ms=r.newest - 8_000 - DELAY, wall_ms=wall, has_rows=True,
                                      appended_ms=W - 1_000)
        assert release == r.newest - DELAY, batch
    # then the input goes quiet: the watermark catches up with the last batch, and the clock follows the wall
    # clock once it has stood still for the delay
    release = clock.release_point(r, watermark_ms=r.newest - DELAY, wall_ms=wall + 1_000, has_rows=False)
    assert release == r.newest - DELAY
    assert clock.release_point(r, watermark_ms=r.newest - DELAY, wall_ms=wall + 3_000, has_rows=False) == \
        r.newest - DELAY + 3_000


class _Runner:
    """What LiveClock reads and writes of a group runner."""

    def __init__(self, newest):
        self.newest = newest
        self.ref = None


@pytest.mark.parametrize("appended_ago_ms, event_ago_ms, counts_from", [
    (0, 0, "append"),  # live input: the newest event's record was appended as the batch began
    (1_000, 1_000, "append"),  # 1 s before it: within the delay, the clock follows the wall clock already
    (3_000, 3_000, "append"),  # live input: the newest event's record was appended 3 s before the batch
    (7_000, 7_000, "append"),  # within the horizon (trigger 5 s + delay 2 s)
    (7_001, 7_001, "batch"),  # older: a backlog being read; it must never be overtaken
    (3_600_000, 3_600_000, "batch"),
    (3_000, 3_000 + DELAY, "append"),  # an event appended up to the delay after its event time
    (3_000, 3_001 + DELAY, "batch"),  # appended now with an old event time: a producer's held-back backlog
])
def test_live_input_counts_idle_time_from_the_append_of_the_groups_newest_record(appended_ago_ms, event_ago_ms,
                                                                                counts_from):
    from rebalance_monitor.core.group_clock import LiveClock

    clock = LiveClock(DELAY, started_ms=0, horizon_ms=5_000 + DELAY)
    wall = E + 60_000  # (here the clients' clocks and the brokers' agree with the job's)
    r = _Runner(newest=wall - event_ago_ms)
    release = clock.release_point(r, watermark_ms=0, wall_ms=wall, has_rows=True, appended_ms=wall - appended_ago_ms)
    idle = appended_ago_ms if counts_from == "append" else 0
    # from a live base at once (the batch read all that was appended before it), from a backlog's only once the
    # base has stood still for the delay
    assert release == r.newest - DELAY + idle
    assert r.ref.since_wall_ms == wall - idle


def test_the_append_time_counts_only_for_the_groups_own_newest_event():
    from rebalance_monitor.core.group_clock import LiveClock

    clock = LiveClock(DELAY, started_ms=0, horizon_ms=7_000)
    wall = E + 60_000
    r = _Runner(newest=wall - 5_000)
    # the watermark (other groups' events) is ahead of this group's own newest less the delay: its base, whose
    # age the group's record says nothing about
    clock.release_point(r, watermark_ms=wall - 4_000, wall_ms=wall, has_rows=True, appended_ms=wall - 5_000)
    assert r.ref == ClockReference(wall - 4_000, wall)
    # and never before the job's start (a restart: the backlog first)
    late = LiveClock(DELAY, started_ms=wall, horizon_ms=7_000)
    r = _Runner(newest=wall - 5_000)
    assert late.release_point(r, watermark_ms=0, wall_ms=wall, has_rows=True, appended_ms=wall - 5_000) == \
        wall - 5_000 - DELAY
