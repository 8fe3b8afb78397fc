"""What the driver's JVM can load: whether Spark's own Kafka connector is on the class path.

Depends on nothing of the project's: sources.py asks it to choose between Spark's connector and the Python source.
"""
from __future__ import annotations

KAFKA_PROVIDER_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


def jvm_class_available(spark, class_name: str) -> bool:
    """True when the driver JVM can load `class_name` (False without a JVM handle, e.g. Spark Connect)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        try:
            jvm = spark.sparkContext._jvm
        except Exception:  # Spark Connect: no JVM handle in this process
            return False
    if jvm is None:
        return False
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(class_name, False, loader)
        return True
    except Exception:
        return False


def kafka_connector_available(spark) -> bool:
    """True when Spark's own Kafka connector (spark-sql-kafka) is on the driver's classpath."""
    return jvm_class_available(spark, KAFKA_PROVIDER_CLASS)
