"""A tiny streaming source of clock ticks that keeps event time moving when no events arrive.

Spark's watermark moves only with data. If every group goes silent (or the whole input does), nothing
would move it and a crashed group would never get its session timeout. The job's driver therefore keeps a
clock file: the highest event time seen, the wall-clock time that event belongs to (its Kafka timestamp),
and whether the Kafka input is idle (caught up). While it is idle, this source follows the wall clock: it
emits one tick row per trigger whose event time is the highest event time plus the wall time elapsed since;
the watermark stays the watermark delay behind it, room for events still on their way. A backlog being read never
gets ahead of itself, because ticks only move while the input is idle.

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
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump({"tick": int(tick), **extra}, f)
    os.replace(tmp, path)


def next_trigger_ms(now_ms: int, interval_ms: int) -> int:
    """When Spark's processing-time trigger starts the batch after one that starts at `now_ms`, at the
    earliest (it schedules triggers at multiples of the interval)."""
    return (now_ms // interval_ms + 1) * interval_ms


def current_tick(clock: dict, now_ms: int) -> int:
    """The tick for a trigger starting at `now_ms` (see the module docstring)."""
    tick = int(clock.get("tick", 0))
    try:
        if clock.get("idle"):
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
    def __init__(self, path: str):
        self.path = path
        self.last = 0

    def initialOffset(self) -> dict:
        return {"tick": 0}

    def latestOffset(self) -> dict:
        self.last = max(self.last, current_tick(read_tick_file(self.path), int(time.time() * 1000)))
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
        return ClockReader(path)
