"""The SparkSession of the streaming job (and of the Spark tests): its settings, and the session built with them.

Whether the session's JVM has Spark's Kafka connector is jvm.py's question; the Python data sources it registers
are sources.py's.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any, Mapping, Sequence

from .driver_jvm import jvm_log_level, launched_jvm
from .jvm import KAFKA_PROVIDER_CLASS, jvm_class_available, kafka_connector_available  # noqa: F401 (of this module too)
from .sources import register_sources

log = logging.getLogger(__name__)

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

# `spark.jit`: the JVM options of the driver and the executors for each choice. The JVM's default tiered
# compilation keeps its optimising compiler (C2) busy for minutes after every start: Spark plans, codegens and
# runs new code at every micro-batch, and the job's JVM mostly moves bytes between Kafka, the shuffle, RocksDB
# and the Python workers, where C2's code gains little. Measured on the job's benchmark (bench/bench_job.py,
# 2 cores): compiler threads 2.5-6 s of CPU per 3 million events, a third to half of the JVM's CPU, against
# 0.2 s with C1 alone (docs/operations.md, "How the job spends its time").
JIT_OPTIONS = {"quick": "-XX:TieredStopAtLevel=1", "full": ""}
JAVA_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")


def session_conf(app_name: str = "rebalance-monitor", local_dir: str | None = None,
                 shuffle_partitions: int = 4, extra_conf: Mapping[str, Any] | None = None,
                 jars: Sequence[str] = (), jit: str = "quick") -> dict[str, str]:
    """The Spark settings `build_session` applies (extra_conf wins over the defaults; its JVM options come after
    the job's, so that an option given there wins too). `jars`: files for the driver's and executors' class path
    (spark.jars: Spark ships them to executors itself). `jit`: a key of JIT_OPTIONS."""
    conf: dict[str, str] = {
        "spark.app.name": app_name,
        # transformWithStateInPandas needs the RocksDB state store.
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": str(max(shuffle_partitions, 1)),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "false",
        # Python workers and the driver use this interpreter (the project's virtualenv).
        "spark.pyspark.python": os.environ.get("PYSPARK_PYTHON", sys.executable),
        "spark.pyspark.driver.python": os.environ.get("PYSPARK_DRIVER_PYTHON", sys.executable),
    }
    if jars:
        conf["spark.jars"] = ",".join(os.path.abspath(j) for j in jars)
    if local_dir:
        os.makedirs(local_dir, exist_ok=True)
        conf["spark.local.dir"] = local_dir
        conf["spark.sql.warehouse.dir"] = os.path.join(local_dir, "warehouse")
        conf["spark.driver.extraJavaOptions"] = f"-Djava.io.tmpdir={local_dir} -Dderby.system.home={local_dir}"
    if JIT_OPTIONS[jit]:
        for key in JAVA_OPTION_KEYS:
            conf[key] = " ".join(filter(None, (JIT_OPTIONS[jit], conf.get(key))))
    for key, value in (extra_conf or {}).items():
        value = str(value).lower() if isinstance(value, bool) else str(value)
        conf[key] = " ".join(filter(None, (conf.get(key), value))) if key in JAVA_OPTION_KEYS else value
    return conf


def build_session(master: str | None = "local[2]", app_name: str = "rebalance-monitor", local_dir: str | None = None,
                  shuffle_partitions: int = 4, extra_conf: dict | None = None, jars: Sequence[str] = (),
                  jit: str = "quick", spark_level: str = "ERROR"):
    """Start (or return the running) SparkSession with the job's settings.

    RocksDB state store, `shuffle_partitions` shuffle partitions, no UI, WARN logging, Arrow on,
    session time zone UTC, the JVMs' compiler as `jit` says (JIT_OPTIONS), and the Python Kafka source
    registered as format "rmkafka". A driver JVM this launches logs through the monitor's log, its lines below
    `spark_level` (logging.spark_level) at DEBUG (driver_jvm.py).
    With a local master the driver binds to the loopback address. `master=None` keeps the master spark-submit
    (or the Spark operator) set, instead of overriding it.
    """
    from pyspark.sql import SparkSession

    conf = session_conf(app_name, local_dir, shuffle_partitions, extra_conf, jars, jit)
    if master is not None and master.startswith("local"):
        conf.setdefault("spark.driver.host", "127.0.0.1")
        conf.setdefault("spark.driver.bindAddress", "127.0.0.1")
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # stay on loopback, no interface probing
    os.environ.setdefault("PYSPARK_PYTHON", conf["spark.pyspark.python"])
    builder = SparkSession.builder if master is None else SparkSession.builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    with launched_jvm(spark_level):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(jvm_log_level(spark_level))
    quiet_loggers(spark)
    check_driver_jit(spark, jit)
    register_sources(spark)
    log.debug("SparkSession %s on %s (Spark %s, shuffle partitions %s)", app_name, spark.sparkContext.master,
             spark.version, shuffle_partitions)
    return spark


def driver_java_options(spark) -> list[str]:
    """The options the driver's JVM was started with."""
    return list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())


def check_driver_jit(spark, jit: str) -> bool:
    """True if the driver's JVM runs with `jit`'s options; else log how to give them. A JVM started before the
    session was built (spark-submit in client mode, the Spark operator's driver pod) took its options at its
    start: `spark-submit --driver-java-options`."""
    want = JIT_OPTIONS[jit]
    if not want:
        return True
    try:
        if want in driver_java_options(spark):
            return True
    except Exception as exc:  # noqa: BLE001 - a start-up hint, never a reason to fail
        log.debug("could not read the driver JVM's options: %s", exc)
        return False
    log.info("spark.jit=%s: the driver's JVM was started without %s (give spark-submit --driver-java-options=%s; "
             "executors take it from spark.executor.extraJavaOptions)", jit, want, want)
    return False


# Loggers whose WARN lines are part of the job's normal work: the state server warns on every read of a group's
# state that does not exist yet (each new group's first batch; the processor reads instead of asking first,
# to save a round trip per group and batch).
# The Java Kafka client's NetworkClient warns on every connection attempt to a broker that is down (Spark's
# connector): the monitor reports an unreachable Kafka itself, once per back-off step (spark/kafka_reach.py).
QUIET_LOGGERS = ("org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySparkStateServer",
                 "org.apache.kafka.clients.NetworkClient")


def quiet_loggers(spark) -> None:
    """Raise QUIET_LOGGERS to ERROR in the driver JVM (where local-mode tasks run; executors of a cluster
    keep their own log4j settings)."""
    try:
        jvm = spark.sparkContext._jvm
        level = jvm.org.apache.logging.log4j.Level.ERROR
        for name in QUIET_LOGGERS:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
    except Exception as exc:  # noqa: BLE001 - a logging nicety, never a reason to fail
        log.debug("could not quiet %s: %s", QUIET_LOGGERS, exc)
