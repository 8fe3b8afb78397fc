"""The record decoder (record_decoder.py) as a mapInArrow function over Arrow batches of Kafka rows: the rows of
Spark's Kafka connector, or of the Python source without its option "decode".

Rows that went through the JVM stages first (spark/jvm_compaction.py, spark/jvm_packing.py) carry what those
stages did: the records each row stands for (`RECORDS_COLUMN`), and events already packed per group (the
columns below), which are taken as they are.
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from ..core.coordinator_placement import DEFAULT_OFFSETS_PARTITIONS
from .input_commits import RECORDS_COLUMN
from .record_decoder import Compacted, make_record_decoder

# the columns of a row of events packed in the JVM (spark/jvm_packing.py, streaming/java/spark-input-stage:
# EventPacking): its group, its pack (decoded_rows.PACK_COLUMNS) and the pack's newest event time; the Kafka
# timestamp of that event's record is the row's `timestamp`
GROUP_COLUMN = "rm_group"
PACK_COLUMN = "rm_pack"
TS_COLUMN = "rm_ts"


def _kafka_ts_ms(column: pa.Array) -> list[int | None]:
    """Record timestamps in epoch ms (None where a record has none)."""
    if pa.types.is_timestamp(column.type):
        mul, div = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}[column.type.unit]
        raw = pc.cast(column, pa.int64()).to_pylist()
        return [None if x is None or x < 0 else x * mul // div for x in raw]
    return [None if x is None or x < 0 else int(x) for x in column.to_pylist()]


def make_decoder(topic_sources: dict[str, str], max_bytes: int, max_future_ms: int, pack_records: int = 0,
                 groups: dict | None = None, shards: int = DEFAULT_OFFSETS_PARTITIONS,
                 topic_ids: tuple | None = None):
    """The record decoder (`make_record_decoder`, the same arguments) as a mapInArrow function over Kafka rows
    (Spark's connector, or the Python source without `decode`)."""
    decode_chunks = make_record_decoder(topic_sources, max_bytes, max_future_ms, pack_records, groups, shards,
                                        topic_ids)

    def records(batch: pa.RecordBatch):
        packs = None
        if PACK_COLUMN in batch.schema.names:  # events packed in the JVM (spark/jvm_packing.py)
            is_pack = pc.is_valid(batch.column(PACK_COLUMN))
            packed = batch.filter(is_pack)
            batch = batch.filter(pc.invert(is_pack))
            packs = zip(packed.column(GROUP_COLUMN).to_pylist(), packed.column(TS_COLUMN).to_pylist(),
                        _kafka_ts_ms(packed.column("timestamp")), packed.column(PACK_COLUMN).to_pylist(),
                        packed.column(RECORDS_COLUMN).to_pylist())
        rows = zip(batch.column("topic").to_pylist(), batch.column("partition").to_pylist(),
                   batch.column("offset").to_pylist(), _kafka_ts_ms(batch.column("timestamp")),
                   batch.column("key").to_pylist(), batch.column("value").to_pylist())
        if RECORDS_COLUMN not in batch.schema.names:
            return rows
        # through the JVM stages: the commits compacted there count as read
        superseded = (pc.sum(batch.column(RECORDS_COLUMN)).as_py() or 0) - batch.num_rows
        return Compacted(rows, superseded, packs)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return decode_chunks(records(b) for b in batches)

    return decode
