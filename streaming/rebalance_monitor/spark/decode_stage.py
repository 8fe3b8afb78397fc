"""The decoding stage of the job: raw Kafka rows to canonical events (or dead letters), in mapInArrow.

Rows out: `event` rows, `dead_letter` rows (group ""), and one `tick` row per input batch whose `et` is
the batch's highest event time (and `num` the Kafka timestamp of the record that carried it, so the driver
can tell how event time relates to the wall clock). Only tick rows carry event time, so they alone move the
watermark, and Spark never drops an event row as late: lateness is the processor's call.

An event row is either a heartbeat or poll in columns (`etype` set, see `event_columns`), or any other
event as its canonical JSON text in `payload` (`etype` null).
"""
from __future__ import annotations

import json
import time
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from ..core.events import event_to_dict
from ..decode import decode_record
from ..event_columns import hot_fields

DECODED_SCHEMA = ("group string, ts long, et timestamp, ord long, kind string, etype string, member string, "
                  "num long, err string, inst string, client string, host string, payload string")
HOT_COLUMNS = (("etype", "string"), ("member", "string"), ("num", "long"), ("err", "string"), ("inst", "string"),
               ("client", "string"), ("host", "string"))
_ARROW_SCHEMA = pa.schema([
    ("group", pa.string()), ("ts", pa.int64()), ("et", pa.timestamp("us", tz="UTC")), ("ord", pa.int64()),
    ("kind", pa.string()), ("etype", pa.string()), ("member", pa.string()), ("num", pa.int64()),
    ("err", pa.string()), ("inst", pa.string()), ("client", pa.string()), ("host", pa.string()),
    ("payload", pa.string()),
])


def _kafka_ts_ms(column: pa.Array) -> list[int | None]:
    """Record timestamps in epoch ms (None where a record has none)."""
    if pa.types.is_timestamp(column.type):
        mul, div = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}[column.type.unit]
        raw = pc.cast(column, pa.int64()).to_pylist()
        return [None if x is None or x < 0 else x * mul // div for x in raw]
    return [None if x is None or x < 0 else int(x) for x in column.to_pylist()]


class _Rows:
    """The output columns of one batch, appended row by row."""

    def __init__(self):
        self.cols = {name: [] for name in _ARROW_SCHEMA.names}
        self.batch_max: int | None = None
        self.batch_max_append: int | None = None  # the Kafka timestamp of the record with the highest time

    def add(self, group, ts, order, kind, payload=None, hot=None, et=None, num=None):
        c = self.cols
        c["group"].append(group)
        c["ts"].append(ts)
        c["et"].append(et)
        c["ord"].append(order)
        c["kind"].append(kind)
        c["payload"].append(payload)
        if hot is None:
            for name in ("etype", "member", "err", "inst", "client", "host"):
                c[name].append(None)
            c["num"].append(num)
        else:
            etype, _, _, member, num, err, inst, client, host = hot
            c["etype"].append(etype)
            c["member"].append(member)
            c["num"].append(num)
            c["err"].append(err)
            c["inst"].append(inst)
            c["client"].append(client)
            c["host"].append(host)

    def saw(self, ts: int, append_ms: int | None) -> None:
        if self.batch_max is None or ts > self.batch_max:
            self.batch_max = ts
            self.batch_max_append = append_ms

    def to_batch(self) -> pa.RecordBatch:
        if self.batch_max is not None:
            # one clock row per batch carries its highest event time: it alone moves the watermark
            self.add("", self.batch_max, 0, "tick", payload="", et=self.batch_max * 1000, num=self.batch_max_append)
        return pa.RecordBatch.from_arrays([pa.array(self.cols[n], type=f.type)
                                           for n, f in zip(_ARROW_SCHEMA.names, _ARROW_SCHEMA)],
                                          schema=_ARROW_SCHEMA)


def make_decoder(topic_sources: dict[str, str], max_bytes: int, max_future_ms: int):
    """A mapInArrow function; `topic_sources` maps each topic to its input format."""

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            now = int(time.time() * 1000)
            out = _Rows()
            topics = batch.column("topic").to_pylist()
            partitions = batch.column("partition").to_pylist()
            offsets = batch.column("offset").to_pylist()
            kafka_ts = _kafka_ts_ms(batch.column("timestamp"))
            keys = batch.column("key").to_pylist()
            values = batch.column("value").to_pylist()
            for i, value in enumerate(values):
                topic = topics[i]
                order = (int(partitions[i]) << 40) | int(offsets[i])
                source = topic_sources.get(topic, "events")
                if source == "events":
                    hot = hot_fields(value, max_bytes, now, max_future_ms)
                    if hot is not None:
                        out.add(hot[2], hot[1], order, "event", hot=hot)
                        out.saw(hot[1], kafka_ts[i])
                        continue
                _decode_slow(out, source, topic, partitions[i], offsets[i], order, kafka_ts[i], now, keys[i],
                             value, max_bytes, max_future_ms)
            yield out.to_batch()

    return decode


def _decode_slow(out: _Rows, source, topic, partition, offset, order, append_ms, now, key, value, max_bytes,
                 max_future_ms) -> None:
    kafka_ts = now if append_ms is None else append_ms  # a record's time for formats without their own
    events, rejects = decode_record(source, value, key, kafka_ts, max_bytes=max_bytes,
                                    now_ms=now, max_future_ms=max_future_ms)
    for ev in events:
        if source == "events" and len(events) == 1:
            # already canonical and validated: pass the record through, do not re-serialise
            payload = value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else value
        else:
            payload = json.dumps(event_to_dict(ev), separators=(",", ":"))
        # No event time on event rows: Spark would silently drop rows behind its watermark;
        # the processor decides lateness itself and dead-letters late events.
        out.add(ev.group, ev.ts, order, "event", payload=payload)
        out.saw(ev.ts, append_ms)
    for rej in rejects:
        raw = rej.raw
        if isinstance(raw, (bytes, bytearray)):
            raw = bytes(raw).decode("utf-8", "backslashreplace")
        elif not isinstance(raw, str):
            raw = json.dumps(raw, default=str)
        rec = {"kind": "dead_letter", "group": "", "ts": kafka_ts, "reason": rej.reason,
               "detail": rej.detail, "raw": raw[:max_bytes], "topic": topic, "partition": int(partition),
               "offset": int(offset)}
        out.add("", kafka_ts, order, "dead_letter", payload=json.dumps(rec, separators=(",", ":")))
