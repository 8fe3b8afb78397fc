"""The job's Kafka input as a streaming DataFrame: Spark's own Kafka connector or the Python source ("rmkafka").

`register_sources` registers the project's Python data sources with a session (session.py does, for every session
it builds). `kafka_stream` reads with Spark's "kafka" format when its connector is on the class path (jvm.py) and
with "rmkafka" otherwise, or as `kafka.connector` says; `is_decoded` tells whether the frame already carries the
decoded rows (the Python source's option "decode").
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from ..kafka_connection import KafkaConnection, redacted
from .jvm import kafka_connector_available
from .kafka_source.datasource import KafkaDataSource
from .kafka_source.options import FORMAT, resolve_client

# the log lines of the connector choice are the Kafka source's
log = logging.getLogger("rebalance_monitor.spark.kafka_source")

_SPARK_ONLY_OPTIONS_DROPPED = ("client", "verifyendoffsets", "arrowbatchrows", "decode")


DEPRECATED_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"


def reads_internal_topic(spark_opts: Mapping[str, Any]) -> str | None:
    """The first of Kafka's internal topics (`__consumer_offsets`, `__transaction_state`, ...) the connector's
    options subscribe to or assign, or None."""
    named = [t.strip() for t in str(spark_opts.get("subscribe") or "").split(",")]
    assign = str(spark_opts.get("assign") or "")
    named += [t for t in ("__consumer_offsets", "__transaction_state", "__share_group_state") if t in assign]
    return next((t for t in named if t.startswith("__")), None)


class ConnectorMissing(RuntimeError):
    """kafka.connector: spark, and Spark's Kafka connector is not on the classpath."""


def register_sources(spark) -> None:
    """Register the project's Python data sources (format "rmkafka")."""
    spark.dataSource.register(KafkaDataSource)


def kafka_stream(spark, options: Mapping[str, Any], prefer: str = "auto"):
    """A streaming DataFrame of Kafka records: Spark's "kafka" format when its connector is on the
    classpath and `prefer` is "auto" or "spark", else the Python source's "rmkafka" format (ConnectorMissing when
    `prefer` is "spark" and the connector is not there).

    Options are the Spark Kafka connector's (plus the Python source's own); for Spark's connector the
    security settings are translated to Java client properties (sasl.jaas.config etc.). The "rmkafka"
    option "decode" makes it emit decoded rows; Spark's connector ignores it: check `is_decoded(df)`.
    """
    prefer = (prefer or "auto").lower()
    if prefer not in ("auto", "spark", "python"):
        raise ValueError(f"prefer must be auto, spark or python, got {prefer!r}")
    if prefer == "python":
        use_spark, why = False, "prefer='python'"
    elif kafka_connector_available(spark):
        use_spark, why = True, f"Spark's Kafka connector is on the classpath (prefer={prefer!r})"
    else:
        use_spark, why = False, "Spark's Kafka connector (spark-sql-kafka) is not on the classpath"
        if prefer == "spark":
            raise ConnectorMissing(
                f"kafka.connector is 'spark' but {why}: fetch it with scripts/fetch_spark_jars.sh and set "
                "spark.jars_dir, or give spark-submit --jars/--packages "
                "org.apache.spark:spark-sql-kafka-0-10_2.13:<Spark version>; allowed values: auto, spark, python")
    if use_spark:
        spark_opts = spark_connector_options(options)
        log.info("Kafka source: format 'kafka' (%s); options %s", why, redacted(spark_opts))
        internal = reads_internal_topic(spark_opts)
        if internal:
            # Spark's offset reader through the Admin client (its default since 3.4) lists no offsets of Kafka's
            # internal topics: it read nothing of `__consumer_offsets` (seen with Spark 4.2 and Kafka 4.4); the
            # consumer-based reader it keeps reads them
            spark.conf.set(DEPRECATED_OFFSET_FETCHING, "true")
            log.info("Kafka source: %s is an internal topic: Spark's consumer-based offset reader (%s=true)",
                     internal, DEPRECATED_OFFSET_FETCHING)
        return spark.readStream.format("kafka").options(**spark_opts).load()
    lowered = {str(k).lower(): v for k, v in options.items()}
    client, reason = resolve_client(str(lowered.get("client", "auto")))
    log.info("Kafka source: format %r (%s), %s client (%s); options %s", FORMAT, why, client, reason,
             redacted(dict(options)))
    return spark.readStream.format(FORMAT).options(**{k: str(v) for k, v in options.items()}).load()


def spark_connector_options(options: Mapping[str, Any]) -> dict[str, str]:
    """What Spark's connector is given of `options`: its own options, and the connection's Java client properties
    (`KafkaConnection.java`: the ``kafka.*`` options in any spelling read back, then spoken in Java's); the Python
    source's own options are left out."""
    java = KafkaConnection.from_options(options).java()
    spark_opts = {k: str(v) for k, v in options.items()
                  if not str(k).lower().startswith("kafka.") and str(k).lower() not in _SPARK_ONLY_OPTIONS_DROPPED}
    spark_opts.update({f"kafka.{k}": v for k, v in java.items()})
    return spark_opts


def is_decoded(df) -> bool:
    """True when a `kafka_stream` frame already carries decoded rows (the "decode" option took effect)."""
    return "packed" in df.columns
