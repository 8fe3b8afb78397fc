"""A tiny streaming source of clock ticks that keeps event time moving when no events arrive.

Spark's watermark moves only with data. If every group goes silent (or the whole input does), nothing
would move it and a crashed group would never get its session timeout. The job's driver therefore writes
an event-time estimate into a tick file after each idle micro-batch: the highest event time seen plus the
wall time elapsed since it was seen. Only when the input is idle (caught up), so a backlog being read
never gets ahead of itself. This source emits that value as one row per new tick; the job unions it with
the events and sets `spark.sql.streaming.multipleWatermarkPolicy=max`.
"""
from __future__ import annotations

import json
import os

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import LongType, StructField, StructType

FORMAT = "rmclock"
SCHEMA = StructType([StructField("tick", LongType(), False)])


def read_tick(path: str) -> int:
    try:
        with open(path) as f:
            return int(json.load(f)["tick"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def write_tick(path: str, tick: int) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump({"tick": int(tick)}, f)
    os.replace(tmp, path)


class _TickPartition(InputPartition):
    def __init__(self, tick: int):
        self.tick = tick


class ClockReader(DataSourceStreamReader):
    def __init__(self, path: str):
        self.path = path

    def initialOffset(self) -> dict:
        return {"tick": 0}

    def latestOffset(self) -> dict:
        return {"tick": read_tick(self.path)}

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
