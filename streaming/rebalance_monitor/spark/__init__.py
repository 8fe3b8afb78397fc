"""The Spark Structured Streaming job: its input (sources.py: Spark's Kafka connector or the Python source of
kafka_source/), decode stage, stateful processor, sinks, the query (job.py) and its lifecycle (run.py)."""
