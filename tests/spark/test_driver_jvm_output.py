"""The Spark driver JVM's output, read into the monitor's log (spark/driver_jvm.py): each line at the level it
deserves, stack traces with the line they belong to, below logging.spark_level at DEBUG. The whole path (a real
`run` whose output holds nothing but the monitor's lines) is tests/reliability/test_unreachable_kafka.py."""
from __future__ import annotations

import logging
import os

import pytest

from rebalance_monitor.config import ConfigError, load_config
from rebalance_monitor.spark.driver_jvm import JvmOutput, jvm_log_level

# lines as Spark 4.2's JVM wrote them on this machine (run's output before this module), plus a stack trace
LINES = [
    "WARNING: Using incubator modules: jdk.incubator.vector",
    "Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties",
    "26/11/26 09:57:01 WARN NativeCodeLoader: Unable to load native-hadoop library for your platform... using "
    "builtin-java classes where applicable",
    "26/11/26 09:57:02 ERROR MicroBatchExecution: Query rebalance-monitor terminated with error",
    "java.lang.IllegalStateException: boom",
    "\tat org.apache.spark.sql.execution.streaming.MicroBatchExecution.runBatch(MicroBatchExecution.scala:1)",
    "Caused by: java.io.IOException: disk",
    "\t... 12 more",
    "26/11/26 09:57:03 INFO SparkContext: Running Spark version 4.2.0",
    "Streaming TransformWithStateInPandas Python worker 1 started",
]


def pumped(spark_level: str) -> list[tuple[str, str]]:
    read, write = os.pipe()
    with os.fdopen(write, "wb") as w:
        w.write(("\n".join(LINES) + "\n\n").encode())
    logger = logging.getLogger(f"test-jvm-output-{spark_level}")
    seen: list[tuple[str, str]] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append((record.levelname, record.getMessage()))

    logger.addHandler(Keep())
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    with os.fdopen(read, "rb") as r:
        out = JvmOutput(r, spark_level, logger).start()
        out.join(10)
    assert out.lines == len(LINES)
    return seen


def test_at_the_default_only_spark_errors_keep_their_level():
    seen = pumped("ERROR")
    assert [m for _, m in seen] == LINES  # every line, in order, none lost
    levels = [lv for lv, _ in seen]
    assert levels == ["DEBUG", "DEBUG", "DEBUG", "ERROR", "ERROR", "ERROR", "ERROR", "ERROR", "DEBUG", "DEBUG"]


def test_warn_brings_sparks_warnings_back():
    levels = [lv for lv, _ in pumped("WARN")]
    assert levels[2] == "WARNING" and levels[3:8] == ["ERROR"] * 5 and levels[8] == "DEBUG"
    assert levels[:2] == ["DEBUG", "DEBUG"] and levels[9] == "DEBUG"


def test_info_shows_sparks_info_lines():
    levels = [lv for lv, _ in pumped("INFO")]
    assert levels[8] == "INFO" and levels[2] == "WARNING"
    assert jvm_log_level("INFO") == "INFO" and jvm_log_level("ERROR") == "WARN" and jvm_log_level("WARN") == "WARN"


def test_a_bad_spark_level_fails_at_start_naming_the_key_and_the_allowed_values():
    assert load_config(env={}).logging.spark_level == "ERROR"
    with pytest.raises(ConfigError) as err:
        load_config(env={}, overrides={"logging.spark_level": "WARNING"})
    msg = str(err.value)
    assert "logging.spark_level" in msg and all(v in msg for v in ("DEBUG", "INFO", "WARN", "ERROR"))
