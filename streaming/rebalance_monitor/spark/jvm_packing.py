"""The canonical events' heartbeats, polls and offset commits read and packed per group in the JVM, on Spark's
Kafka connector's rows, before the Python decode stage sees them (streaming/java/spark-input-stage:
`EventPacking`, with `HotEvent` applying exactly the checks of the Python fast path, decoding/event_columns.py).

The decode stage then receives one row per group and chunk for those events, already in its own pack format
(decoded_rows.PACK_COLUMNS), instead of a row per event it would parse; every other record reaches it as it came.
Pack rows carry `rm_group`, `rm_pack`, `rm_ts` (the pack's newest event time; its record's Kafka timestamp is the
row's `timestamp`; decoding/row_batches.py, which reads them) and `rm_records` (the records a row stands for,
decoding/input_commits.py). Without the jar on the class path the decode stage reads every event itself, as
before: the same events, more rows moved.
"""
from __future__ import annotations

import logging

from .jvm import jvm_class_available

log = logging.getLogger(__name__)

CLASS = "rebalancemonitor.spark.EventPacking"
# packed records a task holds before it hands its packs on (the Python decode stage's own chunk is its source's)
PACK_RECORDS = 100_000


def pack_in_jvm(df, event_topics: list[str], max_bytes: int, max_future_ms: int):
    """`df` (Kafka columns, perhaps `rm_records`) with the events of `event_topics` packed in the JVM when the stage
    is on the class path; else None."""
    from pyspark.sql import DataFrame

    spark = df.sparkSession
    if not event_topics or not jvm_class_available(spark, CLASS):
        return None
    log.info("packing the heartbeats, polls and commits of %s in the JVM", ",".join(event_topics))
    packed = spark._jvm.rebalancemonitor.spark.EventPacking.apply(df._jdf, ",".join(event_topics), int(max_bytes),
                                                                  int(max_future_ms), PACK_RECORDS)
    return DataFrame(packed, spark)
