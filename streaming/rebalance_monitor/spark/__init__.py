"""The Spark Structured Streaming job: an adapter around the core, the decode room (decoding/) and files/.

| module | what |
| --- | --- |
| `run.py` | `MonitorService`: the whole lifecycle of `run` and the demo (exporter, Spark, each cluster's watch; stop in reverse; signals) |
| `cluster_watch.py` | `ClusterWatch`: one Kafka cluster's part (its probe and back-off, lag and broker pollers, query restarted from its checkpoint; its `kafka_cluster_up` and last read) |
| `job.py` | `StreamingQueryJob`: the query's control (start, stop between two batches, `run --once`, read_available, flush, the metrics snapshot, the job's counts) |
| `query_plan.py` | `QueryPlan`: the query's plan (its session, the DataFrame pipeline with the decode room's decode stage in mapInArrow, `decoding/row_batches.py`, sinks and writer); the input's topics and options |
| `batch.py` | what the driver does with each micro-batch's output (sinks, metrics, counts) |
| `sources.py` | the input: Spark's Kafka connector or the Python source (`kafka_source/`) |
| `jvm_compaction.py`, `jvm_packing.py`, `jvm.py` | the JVM input stage (streaming/java/spark-input-stage) on the connector's rows, when its jar is on the class path |
| `processor.py` | the stateful processor (transformWithState): the core's `GroupRunner` per group, keyed by shard |
| `output_commits.py` | of a group's run, each partition's last `offsets_committed` entry (the output) |
| `runner_cache.py`, `start_marks.py` | the runners a Python worker keeps between batches, the job's start markers |
| `sinks.py` | the history and dead-letter sinks |
| `session.py`, `driver_jvm.py` | the SparkSession; the driver's JVM: how it is launched, its output logged, and ended |
| `kafka_reach.py` | the Kafka probe and back-off of the lifecycle |
"""
