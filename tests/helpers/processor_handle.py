"""GroupProcessor driven directly, without Spark: its handle (value and map state in memory, processing-time
timers in a set, for one shard) and the timer values of a batch (watermark, processing time)."""
from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql import Row

from rebalance_monitor.core.settings import CoreSettings
from rebalance_monitor.decoding.row_batches import make_decoder
from rebalance_monitor.spark.processor import GroupProcessor


class MemoryValueState:
    """A value state in memory (what `getValueState` gives), counting reads."""

    def __init__(self):
        self.value = None
        self.gets = 0

    def get(self):
        self.gets += 1
        return self.value

    def update(self, value):
        self.value = value

    def clear(self):
        self.value = None


class MemoryMapState:
    """A map state in memory (what `getMapState` gives), counting reads."""

    def __init__(self):
        self.values: dict = {}
        self.gets = 0

    def getValue(self, key):
        self.gets += 1
        return self.values.get(key)

    def updateValue(self, key, value):
        self.values[key] = value

    def removeKey(self, key):
        self.values.pop(key, None)


class MemoryHandle:
    """The processor's handle: state in memory, processing-time timers in a set (one shard)."""

    def __init__(self):
        self.timers: set[int] = set()
        self.maps: dict[str, MemoryMapState] = {}
        self.values: dict[str, MemoryValueState] = {}

    def getMapState(self, name, key_schema, value_schema):
        return self.maps.setdefault(name, MemoryMapState())

    def getValueState(self, name, schema):
        return self.values.setdefault(name, MemoryValueState())

    def listTimers(self):
        return iter(sorted(self.timers))

    def registerTimer(self, t):
        self.timers.add(t)

    def deleteTimer(self, t):
        self.timers.discard(t)


class TimerValues:
    """The times a call of the processor sees (Spark's TimerValues): the watermark, and the batch's processing time
    (the watermark unless given)."""

    def __init__(self, watermark, batch_ms=None):
        self.watermark = watermark
        self.batch_ms = watermark if batch_ms is None else batch_ms

    def getCurrentProcessingTimeInMs(self):
        return self.batch_ms

    def getCurrentWatermarkInMs(self):
        return self.watermark


def new_processor(delay=2000, handle=None, cache_bytes=0, started_ms=0, settings=None):
    """A GroupProcessor (default core settings, or `settings`; no status records) on `handle`, a fresh MemoryHandle
    by default; `cache_bytes`: its worker's runner cache (spark/runner_cache.py; 0: none); `started_ms`: the job's
    start."""
    p = GroupProcessor(settings or CoreSettings(), emit_status=False, release_delay_ms=delay, started_ms=started_ms,
                       cache_bytes=cache_bytes)
    p.init(handle or MemoryHandle())
    return p


def decoded_rows(evs, first_offset=0, topic="ev"):
    """The decode stage's rows for events (dicts) read from one partition from `first_offset`, as the Rows
    transformWithState hands over (the batch's clock row left out)."""
    values = [json.dumps(e).encode() for e in evs]
    n = len(values)
    batch = pa.RecordBatch.from_pydict({
        "topic": [topic] * n, "partition": pa.array([0] * n, pa.int32()),
        "offset": list(range(first_offset, first_offset + n)),
        "timestamp": pa.array([None] * n, pa.timestamp("us", tz="UTC")),
        "key": pa.array([None] * n, pa.binary()), "value": pa.array(values, pa.binary())})
    out = list(make_decoder({topic: "events"}, 1 << 20, 10 ** 12)(iter([batch])))[0].to_pylist()
    return [Row(**r) for r in out if r["kind"] != "tick"]
