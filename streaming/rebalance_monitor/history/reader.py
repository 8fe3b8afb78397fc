"""Read the history sink back: the records the job kept (generations, timeouts, storms, ...) from its Parquet
directory (pyarrow datasets: only the asked group's rows and time range are decoded, the filters pushed down to
the row groups) or from its Kafka topic (keyed by group), for one group and a time range, or the whole fleet."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Iterator

from ..kafka_connection import KafkaConnection


@dataclass(frozen=True)
class Query:
    group: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None


def _keep(q: Query, group: str, ts: int) -> bool:
    return ((q.group is None or group == q.group) and (q.since_ms is None or ts >= q.since_ms)
            and (q.until_ms is None or ts <= q.until_ms))


def read_parquet(path: str, q: Query) -> Iterator[dict]:
    """The history records under `path` (the job's `sinks.history.parquet_path`) that `q` asks for, in time order."""
    import os

    import pyarrow.dataset as ds

    if not os.path.isdir(path):
        raise FileNotFoundError(f"no history at {path!r} (sinks.history.parquet_path)")
    data = ds.dataset(path, format="parquet", partitioning="hive", exclude_invalid_files=True)
    cond = None
    for part in ((ds.field("group") == q.group) if q.group is not None else None,
                 (ds.field("ts") >= q.since_ms) if q.since_ms is not None else None,
                 (ds.field("ts") <= q.until_ms) if q.until_ms is not None else None):
        if part is not None:
            cond = part if cond is None else cond & part
    table = data.to_table(columns=["ts", "payload"], filter=cond).sort_by([("ts", "ascending")])
    for payload in table.column("payload").to_pylist():
        yield json.loads(payload)


def read_kafka(connection: KafkaConnection, topic: str, q: Query, timeout_s: float = 60.0) -> Iterator[dict]:
    """The history records of the job's `sinks.history.kafka_topic` (read from its start to the end it has now,
    without joining a group) that `q` asks for, in time order."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**connection.confluent(), "group.id": "rebalance-monitor-history", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    out = []
    try:
        meta = c.list_topics(topic, timeout=10)
        if topic not in meta.topics or meta.topics[topic].error is not None:
            raise FileNotFoundError(f"no history topic {topic!r} (sinks.history.kafka_topic)")
        parts = sorted(meta.topics[topic].partitions)
        ends = {}
        for p in parts:
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high > low:
                ends[p] = high
        c.assign([TopicPartition(topic, p, 0) for p in ends])  # 0: from the earliest still there
        done: set = set()
        deadline = time.monotonic() + timeout_s
        while len(done) < len(ends) and time.monotonic() < deadline:
            for m in c.consume(1000, timeout=0.5):
                if m.error() is not None:
                    if m.error().code() == -191:  # _PARTITION_EOF
                        done.add(m.partition())
                    continue
                if m.offset() + 1 >= ends.get(m.partition(), 0):
                    done.add(m.partition())
                group = (m.key() or b"").decode()
                if q.group is not None and group != q.group:
                    continue
                rec = json.loads(m.value())
                if _keep(q, rec.get("group", group), int(rec.get("ts") or 0)):
                    out.append(rec)
    finally:
        c.close()
    out.sort(key=lambda r: r.get("ts") or 0)
    return iter(out)
