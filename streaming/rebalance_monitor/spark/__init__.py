"""The Spark Structured Streaming job: its input (sources.py: Spark's Kafka connector or the Python source of
kafka_source/), decode stage, stateful processor (with the runners each Python worker keeps between batches,
runner_cache.py, and the collector pause of its per-record work, gc_pause.py), sinks, the query (job.py) and its
lifecycle (run.py); the session (session.py) and how its driver JVM is launched and its output logged
(jvm_process.py)."""
