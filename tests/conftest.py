"""Shared fixtures: one broker and one SparkSession per test run (both are expensive to start)."""
from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """Apache Kafka (one KRaft node, testing.broker) on free loopback ports, for the whole run."""
    from rebalance_monitor.testing.broker import Broker

    log = tmp_path_factory.mktemp("broker") / "broker.log"
    b = Broker(log_path=str(log)).start()
    yield b
    b.stop()


SPARK_JARS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "var", "spark-jars")


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The one SparkSession of the run (local[2], RocksDB state store), with Hadoop's S3A file system on its
    class path when scripts/fetch_spark_jars.sh fetched it (jars can only be added before the JVM starts; the
    tests that use S3 set their server's settings at run time: see `s3_bucket`). Spark's Kafka connector
    is not added: the in-process tests read with the Python source."""
    from rebalance_monitor.spark.session import build_session
    from rebalance_monitor.testing.object_store import s3a_jars

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("Java is required for the Spark tests: run scripts/bootstrap.sh (installs openjdk-17)")
    session = build_session(master="local[2]", app_name="rebalance-monitor-tests",
                            local_dir=str(tmp_path_factory.mktemp("spark-local")), jars=s3a_jars(SPARK_JARS))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def object_store(tmp_path_factory):
    """A local S3 server (moto) for the whole run; tests take a bucket of their own from `s3_bucket`."""
    from rebalance_monitor.testing.object_store import ObjectStore

    store = ObjectStore(log_path=str(tmp_path_factory.mktemp("s3") / "s3.log")).start()
    yield store
    store.stop()


@pytest.fixture()
def s3_bucket(spark, object_store):
    """A fresh bucket of `object_store`, reachable as `s3a://<name>` from the shared session: its S3A settings
    (per bucket: Hadoop caches one S3A client per bucket) are set in the session's Hadoop configuration at run
    time, which the queries started from then on copy. (name, "s3a://<name>")."""
    import uuid

    from rebalance_monitor.testing.object_store import s3a_jars

    if not s3a_jars(SPARK_JARS):
        pytest.fail(f"Hadoop's S3A jars are not in {SPARK_JARS}: run scripts/bootstrap.sh (scripts/fetch_spark_jars.sh)")
    name = object_store.create_bucket(f"rm-{uuid.uuid4().hex[:12]}")
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in object_store.hadoop_conf(name).items():
        conf.set(key, value)
    return name, f"s3a://{name}"


@pytest.fixture()
def unique(request):
    """A short unique name for topics and groups of one test."""
    import uuid

    return f"{request.node.name[:30]}-{uuid.uuid4().hex[:6]}".replace("[", "-").replace("]", "")
