"""The rows of the Python Kafka source: Spark's Kafka connector's schema, and the column buffer a read task fills.

`Columns` holds the records of one partition's range, column by column, until they are handed on: as an Arrow
batch of `output_schema` (the source's rows), or as record tuples for the decoder (option "decode").
"""
from __future__ import annotations

from itertools import repeat
from typing import Any

from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType,
                               TimestampType)

BASE_FIELDS = [
    StructField("key", BinaryType(), True),
    StructField("value", BinaryType(), True),
    StructField("topic", StringType(), True),
    StructField("partition", IntegerType(), True),
    StructField("offset", LongType(), True),
    StructField("timestamp", TimestampType(), True),
    StructField("timestampType", IntegerType(), True),
]
HEADERS_FIELD = StructField(
    "headers",
    ArrayType(StructType([StructField("key", StringType(), True), StructField("value", BinaryType(), True)]), True),
    True,
)


def output_schema(include_headers: bool = False) -> StructType:
    """The rows' schema: Spark's Kafka connector's columns, in its order."""
    return StructType(BASE_FIELDS + ([HEADERS_FIELD] if include_headers else []))


KAFKA_SCHEMA = output_schema(False)


def arrow_schema(include_headers: bool):
    """`output_schema` as an Arrow schema (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(output_schema(include_headers), timezone="UTC")


def header_list(raw) -> list:
    """A record's headers ([(key, value), ...] or None, as the clients give them) as the rows' structs."""
    if not raw:
        return []
    return [{"key": k, "value": v} for k, v in raw]


class Columns:
    """Records of one partition, column by column: keys, values, offsets, timestamps (ms) and their types (Java's
    ids: -1 none, 0 CreateTime, 1 LogAppendTime), and headers when the rows carry them."""

    def __init__(self, include_headers: bool):
        self.keys: list = []
        self.values: list = []
        self.offsets: list = []
        self.ts: list = []
        self.ts_types: list = []
        self.headers: list | None = [] if include_headers else None
        self.stamps = False  # `ts` holds stamps (decoding/append_time.py), not ms: a client that reads them later

    def __len__(self):
        return len(self.offsets)

    def extend(self, polled, lo: int, hi: int) -> None:
        """Add records [lo, hi) of one poll (`clients.Polled`)."""
        whole = lo == 0 and hi == len(polled.offsets)
        pairs = [(self.offsets, polled.offsets), (self.keys, polled.keys), (self.values, polled.values),
                 (self.ts, polled.ts)]
        if polled.ts_types is None:
            self.stamps = True
        else:
            pairs.append((self.ts_types, polled.ts_types))
        for mine, theirs in pairs:
            mine.extend(theirs if whole else theirs[lo:hi])
        if self.headers is not None:
            raw = polled.headers or [None] * len(polled.offsets)
            self.headers.extend(header_list(h) for h in (raw if whole else raw[lo:hi]))

    def records(self, topic: str, partition: int):
        """The records as (topic, partition, offset, append_ms, key, value) tuples (append_ms None when the
        record has no timestamp; or a stamp that `decoding.append_time.append_ms` reads): what the decoder takes,
        without an Arrow batch in between."""
        ts = self.ts if self.stamps else \
            [t if kind >= 0 and t is not None and t >= 0 else None for t, kind in zip(self.ts, self.ts_types)]
        return zip(repeat(topic), repeat(partition), self.offsets, ts, self.keys, self.values)

    def to_batch(self, topic: str, partition: int, schema) -> Any:
        """The records as an Arrow record batch of `schema` (`arrow_schema`)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(self.offsets)
        ms, types = self.ts, self.ts_types
        if self.stamps:  # (a client reads them later only for the decoder: `ConfluentRangeClient.stamps_later`)
            from .range_clients import stamp_columns

            ms, types = stamp_columns(ms)
        ts = pc.multiply(pa.array(ms, pa.int64()), 1000).cast(schema.field("timestamp").type)
        arrays = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            ts,
            pa.array(types, pa.int32()),
        ]
        if self.headers is not None:
            arrays.append(pa.array(self.headers, schema.field("headers").type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
