"""A group's "now" in a live job: event time, following the wall clock from a live record's append or while idle.

The core runs in event time: a group's deadlines (session, poll, settle, storm end) fire when its clock passes
them. Its clock is the input's watermark (the highest event time less the disorder delay), or the group's own
newest event less that delay if that is later (`base_ms`). On a quiet input the watermark stops, and a silent
member would never time out; so the clock follows the wall clock, but only once `base_ms` has not moved for
`delay_ms` of wall-clock time (no fresh event could still fall inside the disorder window):

    now = reference + (wall - since)   once wall - since >= delay_ms, else base_ms

A live base of this run (the group's newest event, its record appended within a trigger and the delay of the
batch that read it) follows the wall clock at once: the batch read everything appended before it, so an event
still to come was appended later, and its clock is the base plus the time since that append. A silent member's
deadline is then reached in the first batch at or after it plus the delay, whatever Spark's watermark says.

`reference` is the highest `base_ms` the group has seen and `since` the wall-clock time it first saw it (for live
input: when the Kafka record of the group's newest event was appended, one trigger sooner), or the job's start if
later: after a restart the clock waits for the input again, so a backlog produced while the job
was down is read before anything times out (never overtaken). An event that still arrives behind the clock is
late, as any event behind what its group processed (dead-lettered with reason `late_event`).

`replay` has no wall clock: its end of input moves every group to the last event time instead.
Pure: no I/O, the wall clock is a parameter.
"""
from __future__ import annotations

from typing import NamedTuple


class ClockReference(NamedTuple):
    """What a group keeps between runs: the highest base it saw, the wall-clock time it first saw it, and
    whether that base came from live input (see `LiveClock`)."""
    base_ms: int
    since_wall_ms: int
    live: bool = False


def observe(ref: ClockReference | None, base_ms: int, wall_ms: int, started_wall_ms: int = 0,
            delay_ms: int | None = None, follow_wall: bool = False, since_ms: int | None = None,
            keep_line: bool = True) -> ClockReference:
    """The reference after seeing `base_ms` at `wall_ms`: a higher base restarts the idle count (from
    `since_ms`, the wall-clock time the base became current when known for live input, else `wall_ms`), unless
    `keep_line` and the clock already follows the wall clock past it from a live base (`delay_ms` and
    `follow_wall` given): then the clock keeps its line. That is the live case of the watermark catching up one
    batch after the group's own events (Spark's watermark is the previous batch's); restarting the count there
    would put the clock a trigger behind. A base beyond the clock's line (new input), the group's own new events
    (`keep_line` False) and a base that came from a backlog restart the count: a backlog read slower than the
    wall clock must never be overtaken."""
    live = since_ms is not None
    since = wall_ms if since_ms is None else min(since_ms, wall_ms)
    if ref is None:
        return ClockReference(base_ms, since, live)
    if base_ms <= ref.base_ms:
        return ref
    if keep_line and ref.live and follow_wall and delay_ms is not None and \
            group_now(ref, wall_ms, started_wall_ms, delay_ms) >= base_ms and \
            _follows(ref, idle_ms(ref, wall_ms, started_wall_ms), started_wall_ms, delay_ms):
        kept = max(ref.since_wall_ms, started_wall_ms)
        return ClockReference(base_ms, kept + (base_ms - ref.base_ms), True)
    return ClockReference(base_ms, since, live)


def idle_ms(ref: ClockReference, wall_ms: int, started_wall_ms: int) -> int:
    """How long the base has stood still, counted from the job's start at the earliest."""
    return max(0, wall_ms - max(ref.since_wall_ms, started_wall_ms))


def _live_now(ref: ClockReference, started_wall_ms: int) -> bool:
    """A live base of this run: its clock follows the wall clock at once (its idle time counts from its record's
    append, and the batch read everything appended before it: an event that comes later was appended later, and
    one more than the delay behind is late whatever the rule)."""
    return ref.live and ref.since_wall_ms >= started_wall_ms


def _follows(ref: ClockReference, idle: int, started_wall_ms: int, delay_ms: int) -> bool:
    """Whether the clock follows the wall clock: a live base of this run at once, any other (a backlog, a base
    from before the job's start, the watermark) once it has stood still for the delay."""
    return idle >= delay_ms or _live_now(ref, started_wall_ms)


def group_now(ref: ClockReference, wall_ms: int, started_wall_ms: int, delay_ms: int,
              follow_wall: bool = True) -> int:
    """The group's clock at `wall_ms` (never below its reference base)."""
    if not follow_wall:
        return ref.base_ms
    idle = idle_ms(ref, wall_ms, started_wall_ms)
    return ref.base_ms + idle if _follows(ref, idle, started_wall_ms, delay_ms) else ref.base_ms


def wake_wall_ms(ref: ClockReference, want_ms: int, wall_ms: int, started_wall_ms: int, delay_ms: int) -> int:
    """The wall-clock time at which the group should look again for its clock to have reached `want_ms` (a
    deadline or a pending event, in event time); later than `wall_ms`.

    First when the watermark gets there if it moves on about as fast as the wall clock (a live input); if the
    group looks then and the base has not moved, when its clock follows the wall clock there (idle input)."""
    since = max(ref.since_wall_ms, started_wall_ms)
    ahead = want_ms - ref.base_ms
    at = since + ahead
    if at <= wall_ms and not _live_now(ref, started_wall_ms):
        at = since + max(delay_ms, ahead)
    return max(wall_ms + 1, at)


class LiveClock:
    """The job's release rule for one group (see the module docstring), with the options of `run --once`.

    `delay_ms`: the release delay (`state.watermark_delay`): a group's events this far behind its newest are
    released without waiting for the watermark; `started_ms`: the job's start (wall clock), before which no
    idle time counts; `follow_wall`: the clock follows the wall clock on an idle input; `follow_watermark`
    False: a group's clock moves with its own events only (`run --once`, whose backlog is split by record count,
    not by time); `flush_to_ms`: every group's clock is at least there (an explicit end of input); `drain`
    (`run --once`): a group woken with no rows moves to the watermark plus the delay, the input's highest
    event time, as replay's end of input does. `horizon_ms` (the trigger interval plus the delay): a group's
    newest event whose Kafka record was appended at most this long before the batch is live input, and its
    idle count starts at that append time rather than at the batch (one trigger sooner); an older one is a
    backlog being read, and its count starts at the batch, so a backlog is never overtaken."""

    __slots__ = ("delay_ms", "started_ms", "follow_wall", "follow_watermark", "flush_to_ms", "drain", "horizon_ms")

    def __init__(self, delay_ms: int | None, started_ms: int, follow_wall: bool = True,
                 follow_watermark: bool = True, flush_to_ms: int | None = None, drain: bool = False,
                 horizon_ms: int = 0):
        self.horizon_ms = horizon_ms
        self.delay_ms = delay_ms
        self.started_ms = started_ms
        self.follow_wall = follow_wall
        self.follow_watermark = follow_watermark
        self.flush_to_ms = flush_to_ms
        self.drain = drain

    def release_point(self, runner, watermark_ms: int, wall_ms: int, has_rows: bool,
                      appended_ms: int | None = None) -> int:
        """Where the group's clock stands at this batch (updates the runner's reference). `appended_ms`: the
        Kafka timestamp of the record of the group's newest event in this batch, if known."""
        delay = self.delay_ms or 0
        base = watermark_ms if self.follow_watermark else 0
        since = None
        own = False  # the group's own new events set the base (not the watermark)
        if self.delay_ms is not None and runner.newest - self.delay_ms > base:
            base = runner.newest - self.delay_ms
            own = has_rows
            if appended_ms is not None and wall_ms - self.horizon_ms <= appended_ms and \
                    abs(appended_ms - runner.newest) <= delay:
                since = appended_ms  # live input: this base has been current since its record was appended
        runner.ref = observe(runner.ref, base, wall_ms, self.started_ms, delay, self.follow_wall, since,
                             keep_line=not own)
        release = group_now(runner.ref, wall_ms, self.started_ms, delay, self.follow_wall)
        if self.flush_to_ms is not None and self.flush_to_ms > release:
            release = self.flush_to_ms
        if self.drain and not has_rows and watermark_ms > 0 and watermark_ms + delay > release:
            release = watermark_ms + delay
        return release

    def wake_wall_ms(self, runner, want_ms: int, now_ms: int, wall_ms: int) -> int:
        """When (wall clock) the group should run again for its clock to reach `want_ms` (its `due_ms`)."""
        return wake_wall_ms(runner.ref, max(want_ms, now_ms + 1), wall_ms, self.started_ms, self.delay_ms or 0)
