"""`spark.jit`: the JVM options of the driver and the executors (spark/session.py, JIT_OPTIONS)."""
from __future__ import annotations

import logging

import pytest

from rebalance_monitor.config import ConfigError, load_config
from rebalance_monitor.spark.session import JAVA_OPTION_KEYS, JIT_OPTIONS, check_driver_jit, driver_java_options, \
    session_conf

C1_ONLY = "-XX:TieredStopAtLevel=1"


def test_quick_is_the_default_and_reaches_the_driver_and_the_executors():
    assert load_config(env={}).spark.jit == "quick"
    assert JIT_OPTIONS["quick"] == C1_ONLY
    conf = session_conf()
    for key in JAVA_OPTION_KEYS:
        assert conf[key].split() == [C1_ONLY]
    # beside the local directory's options, not instead of them
    driver = session_conf(local_dir="/tmp/rm-jit")["spark.driver.extraJavaOptions"].split()
    assert driver[0] == C1_ONLY and "-Djava.io.tmpdir=/tmp/rm-jit" in driver


def test_full_leaves_the_jvm_default():
    conf = session_conf(jit="full")
    assert not any(C1_ONLY in conf.get(key, "") for key in JAVA_OPTION_KEYS)
    assert load_config(env={}, overrides={"spark.jit": "full"}).spark.jit == "full"


def test_java_options_in_spark_conf_come_after_the_jobs_so_that_they_win():
    conf = session_conf(extra_conf={"spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=4 -Dx=1",
                                    "spark.driver.extraJavaOptions": "-Dy=2"})
    # the JVM takes the last of two -XX settings of the same flag
    assert conf["spark.executor.extraJavaOptions"].split() == [C1_ONLY, "-XX:TieredStopAtLevel=4", "-Dx=1"]
    assert conf["spark.driver.extraJavaOptions"].split() == [C1_ONLY, "-Dy=2"]
    # other keys of spark.conf still replace the job's values
    assert session_conf(extra_conf={"spark.sql.shuffle.partitions": 7})["spark.sql.shuffle.partitions"] == "7"


def test_a_value_outside_the_choices_fails_at_start_up_naming_the_key_and_the_choices():
    with pytest.raises(ConfigError, match=r"spark\.jit: 'fast' is not allowed; allowed values: quick, full"):
        load_config(env={}, overrides={"spark.jit": "fast"})


@pytest.mark.integration
@pytest.mark.spark
def test_the_driver_jvm_of_a_built_session_runs_with_the_option(spark, caplog):
    """The run's shared session was built with the default: its JVM (where local-mode tasks run) was started
    with C1 only. Asking for an option it was not started with logs how to give it (spark-submit)."""
    assert C1_ONLY in driver_java_options(spark)
    assert check_driver_jit(spark, "quick")
    assert check_driver_jit(spark, "full")
    saved = dict(JIT_OPTIONS)
    JIT_OPTIONS["other"] = "-XX:+UseSerialGC"
    try:
        with caplog.at_level(logging.INFO, logger="rebalance_monitor.spark.session"):
            assert not check_driver_jit(spark, "other")
    finally:
        JIT_OPTIONS.clear()
        JIT_OPTIONS.update(saved)
    assert "--driver-java-options=-XX:+UseSerialGC" in caplog.text
