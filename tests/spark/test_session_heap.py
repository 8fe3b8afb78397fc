"""A local master's JVM gets LOCAL_DRIVER_MEMORY of heap unless spark.conf says otherwise (spark/session.py)."""
from __future__ import annotations

import pytest

from rebalance_monitor.spark.session import LOCAL_DRIVER_MEMORY, local_master_conf, session_conf

GIB = 1 << 30


def test_a_local_master_gets_the_jobs_heap_and_the_loopback_address():
    conf = local_master_conf(session_conf())
    assert conf["spark.driver.memory"] == LOCAL_DRIVER_MEMORY == "2g"
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    # session_conf alone (what a master given by spark-submit or the Spark operator takes) sets no heap
    assert "spark.driver.memory" not in session_conf()


def test_a_heap_given_in_spark_conf_wins():
    conf = local_master_conf(session_conf(extra_conf={"spark.driver.memory": "3g"}))
    assert conf["spark.driver.memory"] == "3g"


@pytest.mark.integration
@pytest.mark.spark
def test_the_shared_sessions_jvm_runs_with_that_heap(spark):
    """The run's shared session was built with a local master and no heap of its own: its JVM (driver and
    executor in one) may grow to about 2 GiB, not Spark's default of 1 GiB."""
    max_heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    assert 1.5 * GIB < max_heap <= 2 * GIB, max_heap
