"""A local S3 server for the run, and buckets of it reachable from the shared SparkSession (s3a://)."""
from __future__ import annotations

import pytest

from helpers.fixtures_spark import SPARK_JARS


@pytest.fixture(scope="session")
def object_store(tmp_path_factory):
    """A local S3 server (moto) for the whole run; tests take a bucket of their own from `s3_bucket`."""
    from helpers.object_store import ObjectStore

    store = ObjectStore(log_path=str(tmp_path_factory.mktemp("s3") / "s3.log")).start()
    yield store
    store.stop()


@pytest.fixture()
def s3_bucket(spark, object_store):
    """A fresh bucket of `object_store`, reachable as `s3a://<name>` from the shared session: its S3A settings
    (per bucket: Hadoop caches one S3A client per bucket) are set in the session's Hadoop configuration at run
    time, which the queries started from then on copy. (name, "s3a://<name>")."""
    import uuid

    from helpers.object_store import s3a_jars

    if not s3a_jars(SPARK_JARS):
        pytest.fail(f"Hadoop's S3A jars are not in {SPARK_JARS}: run scripts/bootstrap.sh (scripts/fetch_spark_jars.sh)")
    name = object_store.create_bucket(f"rm-{uuid.uuid4().hex[:12]}")
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in object_store.hadoop_conf(name).items():
        conf.set(key, value)
    return name, f"s3a://{name}"
