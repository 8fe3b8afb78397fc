"""A tiny streaming source of clock ticks that keeps event time moving when no events arrive.

Spark's watermark moves only with data. If every group goes silent (or the whole input does), nothing
would move it and a crashed group would never get its session timeout. The job's driver therefore keeps a
clock file: the highest event time seen, the wall-clock time that event belongs to (its Kafka timestamp),
and whether the Kafka input is idle (caught up). While it is idle, this source follows the wall clock: it
emits one tick row per trigger whose event time is the highest event time plus the wall time elapsed since;
the watermark stays the watermark delay behind it, room for events still on their way. A backlog being read never
gets ahead of itself, because ticks only move while the input is idle.

Idle, within the trigger. The driver learns that a trigger found no new record from the query's progress,
a trigger late. The Python Kafka source says it in the trigger itself: Spark asks the sources for their
latest offsets one after the other, in plan order (the Kafka source, first in the union, a millisecond or so
before this one), and with option `idleMarker` the Kafka source writes a marker file: whether it found no
new record (`caught_up`), whether it leaves records for later triggers (`backlog`, maxOffsetsPerTrigger),
and when (`wall_ms`). A marker of this trigger (see `input_idle`) decides when it says either: caught up,
the clock follows the wall clock; a backlog, it does not. The driver's flag decides when the trigger reads
all the new records there are (after a quiet spell it still says idle in the first such trigger, whose events
are then released a trigger sooner, with the room an idle trigger leaves), and whenever there is no marker
of this trigger: Spark's own Kafka connector writes none, a stuck source writes none, sources asked in the
other order leave it a trigger old, and the job gives none for Trigger.AvailableNow.

Timing. The tick is computed when Spark asks for the source's latest offset, at the start of a trigger;
the watermark it yields applies from the next micro-batch, which Spark starts at the next multiple of the
trigger interval at the earliest. The tick names that instant: a batch then runs with a watermark the
watermark delay behind the wall-clock time of its own scheduled start, and a silent member's timeout is
reported by the first trigger at least the watermark delay after its deadline.

The job unions the ticks with the events and sets `spark.sql.streaming.multipleWatermarkPolicy=max`.
"""
from __future__ import annotations

import json
import os
import time

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import LongType, StructField, StructType

FORMAT = "rmclock"
SCHEMA = StructType([StructField("tick", LongType(), False)])


def read_tick_file(path: str) -> dict:
    """A JSON object file (the clock file, the Kafka source's marker); {} when missing or unreadable."""
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def read_tick(path: str) -> int:
    """The fixed tick of the file (the idle clock's moving one is `current_tick`)."""
    try:
        return int(read_tick_file(path).get("tick", 0))
    except (TypeError, ValueError):
        return 0


def write_tick(path: str, tick: int, **extra) -> None:
    """Write the clock file atomically: a fixed `tick`, and (from the job's idle clock) `event_ms`,
    `wall_ms`, `idle`, `delay_ms` and `interval_ms`."""
    _write_json(path, {"tick": int(tick), **extra})


def write_marker(path: str, caught_up: bool, backlog: bool, wall_ms: int) -> None:
    """The Kafka source's word on the trigger that asked it at `wall_ms`: it found no new record
    (`caught_up`), or records it leaves for later triggers (`backlog`), or neither (it reads all there is)."""
    _write_json(path, {"caught_up": bool(caught_up), "backlog": bool(backlog), "wall_ms": int(wall_ms)})


def _write_json(path: str, data: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def next_trigger_ms(now_ms: int, interval_ms: int) -> int:
    """When Spark's processing-time trigger starts the batch after one that starts at `now_ms`, at the
    earliest (it schedules triggers at multiples of the interval)."""
    return (now_ms // interval_ms + 1) * interval_ms


def input_idle(clock: dict, marker: dict, now_ms: int, last_ms: int = 0) -> bool:
    """Whether the Kafka input is idle in a trigger whose clock source is asked at `now_ms` (and was asked
    at `last_ms` the trigger before). A marker the Kafka source wrote in this trigger (less than half an
    interval ago, and nearer `now_ms` than `last_ms`: asked in the other order, the sources would leave it
    just after `last_ms`, a trigger old) says idle when it found no new record, busy when it leaves records
    for later triggers; otherwise (no such marker, or new records that this trigger reads all of) the
    driver's flag decides."""
    try:
        age = now_ms - int(marker["wall_ms"])
        if 0 <= age < int(clock["interval_ms"]) / 2 and age < int(marker["wall_ms"]) - last_ms:
            if marker.get("backlog"):
                return False
            if marker["caught_up"]:
                return True
    except (KeyError, TypeError, ValueError):
        pass
    return bool(clock.get("idle"))


def current_tick(clock: dict, now_ms: int, marker: dict | None = None, last_ms: int = 0) -> int:
    """The tick for a trigger starting at `now_ms` (see the module docstring and `input_idle`)."""
    tick = int(clock.get("tick", 0))
    try:
        if input_idle(clock, marker or {}, now_ms, last_ms):
            applies_at = next_trigger_ms(now_ms, int(clock["interval_ms"]))
            estimate = int(clock["event_ms"]) + applies_at - int(clock["wall_ms"])
            # the tick is the estimate itself: the watermark (tick - delay) keeps the watermark delay as room
            # for events still on their way (an emitter's batching, produce latency, clock skew)
            tick = max(tick, estimate)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        pass
    return tick


def write_clock(path: str, clock: dict, now_ms: int, trigger_ms: int, **fields) -> None:
    """Rewrite the clock file with new `fields`, its fixed tick raised to what the clock had reached one
    trigger ago (at most what Spark read), so the tick never goes back when the clock stops moving."""
    write_tick(path, current_tick(clock, now_ms - trigger_ms), **fields)


class _TickPartition(InputPartition):
    def __init__(self, tick: int):
        self.tick = tick


class ClockReader(DataSourceStreamReader):
    def __init__(self, path: str, marker: str | None = None):
        self.path = path
        self.marker = marker
        self.last = 0
        self.asked_ms = 0  # when Spark last asked for the latest offset

    def initialOffset(self) -> dict:
        return {"tick": 0}

    def latestOffset(self) -> dict:
        clock = read_tick_file(self.path)
        marker = read_tick_file(self.marker) if self.marker else {}
        now_ms = int(time.time() * 1000)
        self.last = max(self.last, current_tick(clock, now_ms, marker, self.asked_ms))
        self.asked_ms = now_ms
        return {"tick": self.last}

    def partitions(self, start: dict, end: dict):
        if int(end["tick"]) > int(start["tick"]):
            return [_TickPartition(int(end["tick"]))]
        return []

    def read(self, partition):
        yield (partition.tick,)

    def commit(self, end: dict) -> None:
        pass


class ClockSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self):
        return SCHEMA

    def streamReader(self, schema):
        path = self.options.get("path")
        if not path:
            raise ValueError("the rmclock source needs option 'path' (the tick file)")
        return ClockReader(path, self.options.get("marker"))
