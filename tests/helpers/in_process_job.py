"""The streaming job run in the test process, on the shared SparkSession: its configuration for a topic of the
test broker, and a run until it has processed everything."""
from __future__ import annotations

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.job import StreamingQueryJob


def make_cfg(broker, topic, tmp_path, **extra):
    overrides = {"kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": topic,
                 "kafka.starting_offsets": "earliest", "kafka.connector": "python",
                 "state.checkpoint_location": str(tmp_path / "ck"), "state.watermark_delay": "2s",
                 "sinks.history.parquet_path": str(tmp_path / "history"),
                 "sinks.dead_letter.path": str(tmp_path / "dlq"), "exporter.enabled": False,
                 "spark.trigger_interval": "1s", **extra}
    return load_config(env={}, overrides=overrides)


def run_until_idle(spark, cfg, collected, flush_to=None, updater=None):
    """Run the job (no clock follows the wall clock, so event time moves only as the test says) until it has
    processed everything; then, if `flush_to` is given, move every group's clock there in one more batch
    (what `run --once` does at the end of its input, at the last event time); then stop it. `updater`: the
    exporter's metrics (restored from the checkpoint's snapshot at start, saved there after every batch)."""
    job = StreamingQueryJob(cfg, spark=spark, idle_clock=False, updater=updater,
                     on_records=lambda b, recs, dead: collected.append((b, recs, dead)))
    try:
        job.read_available(timeout_s=300)
        if flush_to is not None:
            job.flush(flush_to, timeout_s=300)
    finally:
        job.stop()
    return job
