"""The decoding stage of the job: raw Kafka rows to canonical events (or dead letters), in mapInPandas.

Rows out: `event` rows (payload: the canonical event JSON; `et` null), `dead_letter` rows (group ""), and one
`tick` row per input batch whose `et` is the batch's highest event time. Only tick rows carry event time, so
they alone move the watermark, and Spark never drops an event row as late: lateness is the processor's call.
"""
from __future__ import annotations

import json
import time
from typing import Iterator

import pandas as pd

from ..core.events import event_to_dict
from ..decode import decode_record

DECODED_SCHEMA = "group string, ts long, et timestamp, ord long, kind string, payload string"


def make_decoder(topic_sources: dict[str, str], max_bytes: int, max_future_ms: int):
    """A mapInPandas function; `topic_sources` maps each topic to its input format."""

    def decode(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            now = int(time.time() * 1000)
            groups, tss, ets, ords, kinds, payloads = [], [], [], [], [], []
            batch_max = None
            for topic, partition, offset, ts, key, value in zip(
                    pdf["topic"], pdf["partition"], pdf["offset"], pdf["timestamp"], pdf["key"], pdf["value"]):
                kafka_ts = int(pd.Timestamp(ts).value // 1_000_000) if ts is not None and not pd.isna(ts) else now
                order = (int(partition) << 40) | int(offset)
                source = topic_sources.get(topic, "events")
                origin = {"topic": topic, "partition": int(partition), "offset": int(offset)}
                events, rejects = decode_record(source, value, key, kafka_ts, max_bytes=max_bytes,
                                                now_ms=now, max_future_ms=max_future_ms)
                for ev in events:
                    groups.append(ev.group)
                    tss.append(ev.ts)
                    # No event time on event rows: Spark would silently drop rows behind its watermark;
                    # the processor decides lateness itself and dead-letters late events.
                    ets.append(pd.NaT)
                    if batch_max is None or ev.ts > batch_max:
                        batch_max = ev.ts
                    ords.append(order)
                    kinds.append("event")
                    if source == "events" and len(events) == 1:
                        # already canonical and validated: pass the record through, do not re-serialise
                        payloads.append(value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else value)
                    else:
                        payloads.append(json.dumps(event_to_dict(ev), separators=(",", ":")))
                for rej in rejects:
                    raw = rej.raw
                    if isinstance(raw, (bytes, bytearray)):
                        raw = bytes(raw).decode("utf-8", "backslashreplace")
                    elif not isinstance(raw, str):
                        raw = json.dumps(raw, default=str)
                    rec = {"kind": "dead_letter", "group": "", "ts": kafka_ts, "reason": rej.reason,
                           "detail": rej.detail, "raw": raw[:max_bytes], **origin}
                    groups.append("")
                    tss.append(kafka_ts)
                    ets.append(pd.NaT)
                    ords.append(order)
                    kinds.append("dead_letter")
                    payloads.append(json.dumps(rec, separators=(",", ":")))
            if batch_max is not None:
                # one clock row per batch carries its highest event time: it alone moves the watermark
                groups.append("")
                tss.append(batch_max)
                ets.append(pd.Timestamp(batch_max, unit="ms"))
                ords.append(0)
                kinds.append("tick")
                payloads.append("")
            yield pd.DataFrame({"group": groups, "ts": pd.Series(tss, dtype="int64"),
                                "et": pd.Series(ets, dtype="datetime64[ns]"),
                                "ord": pd.Series(ords, dtype="int64"), "kind": kinds, "payload": payloads})

    return decode
