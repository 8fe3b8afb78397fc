"""Whether the job has read its input as it stood when the job started: the wake-up markers of `job.wake_input`.

At its start the job writes one wake-up record to every partition of its input topics, each carrying the start
(the wall-clock time the processor counts idle time from) and how many records it wrote. A record is appended
after everything its partition held then, so when the decoder has handed every shard all of these markers, the
input as it stood at the start has been read, a backlog produced while the job was down included.

Until then a group's clock counts no idle time from before the start (core/group_clock.py): a group silent in the
part of the input not read yet must not time out before that part is read. From then on nothing of the group can
still be waiting in the input from before the start, and its idle time counts from when its newest event was
appended, as if the job had never stopped: a member that went silent before a restart is reported at its deadline,
not a restart's worth later. A shard keeps its markers in its state (they may come over several batches).
"""
from __future__ import annotations

import json


class StartMarks:
    """The markers a shard has seen of one start: `start`, how many were written (`need`), the topic-partitions
    they came from (`seen`)."""

    __slots__ = ("start", "need", "seen")

    def __init__(self, start: int | None = None, need: int = 0, seen: list | None = None):
        self.start = start
        self.need = need
        self.seen = seen if seen is not None else []

    def note(self, marker: str, started_ms: int) -> None:
        """Count a marker (`decoding.wake_records.wake_marker`'s text); those of another start than `started_ms`
        (an older run's, read in a backlog) do not count."""
        m = json.loads(marker)
        if m["start"] != started_ms:
            return
        if self.start != started_ms:
            self.start, self.need, self.seen = started_ms, m["n"], []
        if m["tp"] not in self.seen:
            self.seen.append(m["tp"])

    def caught_up(self, started_ms: int) -> bool:
        """Every marker of the start `started_ms` was read."""
        return self.start == started_ms and self.need > 0 and len(self.seen) >= self.need

    def to_state(self) -> list | None:
        return None if self.start is None else [self.start, self.need, self.seen]

    @classmethod
    def from_state(cls, state) -> "StartMarks":
        return cls() if not state else cls(state[0], state[1], list(state[2]))
