"""Entry file for `spark-submit` and the Spark operator: spark-submit runs a Python *file*, and the package's
own modules use relative imports, so this file hands the command line to the regular CLI.

    spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version> \
        deploy/spark_main.py run --config monitor.yaml
"""
import sys

from rebalance_monitor.cli import main

if __name__ == "__main__":
    sys.exit(main())
