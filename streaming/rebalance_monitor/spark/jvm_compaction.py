"""The offset commits of `__consumer_offsets` compacted in the JVM, on Spark's Kafka connector's rows, before the
Python decode stage sees them (streaming/java/spark-input-stage: the rule of decoding/input_commits.py over each
Spark partition, one Kafka partition's records of a batch).

The decode stage then moves only the commits that matter from the JVM into Python, and counts the ones it never
saw from the rows' `rm_records` column (the records each row stands for). The jar is built by
scripts/build_java.sh, which puts it beside Spark's connector in var/spark-jars (`spark.jars_dir`); without it on
the class path the decode stage compacts in Python as before: the same events, more rows moved.
"""
from __future__ import annotations

import logging

from ..decoding.input_commits import RECORDS_COLUMN
from .jvm import jvm_class_available

log = logging.getLogger(__name__)

CLASS = "rebalancemonitor.spark.CommitCompaction"
KAFKA_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value")


def decode_input(raw, offsets_topic: str | None, event_topics: list[str] | None = None, max_bytes: int = 1 << 20,
                 max_future_ms: int = -1):
    """The connector's rows `raw` as the decode stage takes them: the Kafka columns; with `offsets_topic` an input
    and the JVM stage on the class path, its live commits compacted there (and `rm_records`); with `event_topics`,
    their frequent events packed there (spark/jvm_packing.py; `max_bytes` and `max_future_ms` as the decode
    stage's, a negative `max_future_ms` checks nothing)."""
    from pyspark.sql import DataFrame

    from .jvm_packing import pack_in_jvm

    spark = raw.sparkSession
    df = raw.select(*KAFKA_COLUMNS)
    if offsets_topic and jvm_class_available(spark, CLASS):
        log.info("compacting the offset commits of %s in the JVM", offsets_topic)
        compacted = DataFrame(spark._jvm.rebalancemonitor.spark.CommitCompaction.apply(raw._jdf, offsets_topic), spark)
        df = compacted.select(*KAFKA_COLUMNS, RECORDS_COLUMN)
    packed = pack_in_jvm(df, event_topics or [], max_bytes, max_future_ms)
    return df if packed is None else packed
