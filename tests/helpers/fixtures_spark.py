"""The one SparkSession of the run (expensive to start)."""
from __future__ import annotations

import os
import shutil

import pytest

# where scripts/fetch_spark_jars.sh puts the jars (Hadoop's S3A among them)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPARK_JARS = os.path.join(ROOT, "var", "spark-jars")
# the job's JVM stage over __consumer_offsets (scripts/build_java.sh puts it there too)
INPUT_STAGE_JAR = os.path.join(SPARK_JARS, "spark-input-stage.jar")


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The one SparkSession of the run (local[2], RocksDB state store), with Hadoop's S3A file system on its
    class path when scripts/fetch_spark_jars.sh fetched it (jars can only be added before the JVM starts; the
    tests that use S3 set their server's settings at run time: see `s3_bucket`), and the job's JVM stage that
    compacts offset commits. Spark's Kafka connector is not added: the in-process tests read with the Python
    source."""
    from rebalance_monitor.spark.session import build_session
    from helpers.object_store import s3a_jars

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("Java is required for the Spark tests: run scripts/bootstrap.sh (installs openjdk-17)")
    session = build_session(master="local[2]", app_name="rebalance-monitor-tests",
                            local_dir=str(tmp_path_factory.mktemp("spark-local")),
                            jars=s3a_jars(SPARK_JARS) + [p for p in (INPUT_STAGE_JAR,) if os.path.exists(p)])
    yield session
    session.stop()


def kafka_rows(spark, records):
    """A DataFrame of the rows Spark's Kafka connector gives (key, value, topic, partition, offset, timestamp) for
    records `(topic, partition, offset, timestamp ms, key, value)`: what the JVM stages run on."""
    import datetime as dt

    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("key", T.BinaryType()), T.StructField("value", T.BinaryType()),
                           T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
                           T.StructField("offset", T.LongType()), T.StructField("timestamp", T.TimestampType())])
    rows = [(key, value, topic, part, off, dt.datetime.fromtimestamp(ts / 1000, dt.timezone.utc))
            for topic, part, off, ts, key, value in records]
    return spark.createDataFrame(rows, schema)
