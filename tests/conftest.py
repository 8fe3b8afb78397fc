"""The shared fixtures, as plugins (tests/helpers/fixtures_*.py): one broker, one SparkSession and one local S3
server per test run (each is expensive to start, and started only if a test asks for it)."""

pytest_plugins = [
    "helpers.fixtures_kafka",
    "helpers.fixtures_spark",
    "helpers.fixtures_s3",
    "helpers.gc_pauses",
]
