"""The streaming query's plan: the session it runs on, its DataFrame pipeline and its sinks' wiring.

    Kafka (Spark's connector, or the Python source) ─► decode (mapInArrow, or in the Python source)
      ─► watermark ─► groupBy(shard: the group's __consumer_offsets partition).transformWithState(GroupProcessor, ProcessingTime)
      ─► foreachBatch on the driver (batch.py): metrics updater / exporter, history sink, dead-letter sink

In processing-time mode Spark runs a batch at every trigger, with or without input, and fires the groups' timers
then; each group keeps its own clock in event time (core/group_clock.py). Nothing else moves time: no side
files, no second source, no thread of the driver's. Starting, stopping and watching the query is job.py's
(`StreamingQueryJob`); this module only builds.
"""
from __future__ import annotations

import json
import logging

from ..config import MonitorConfig, jar_files
from ..decoding.decoded_rows import DECODED_SCHEMA
from ..decoding.row_batches import make_decoder
from ..files import join
from .jvm_compaction import decode_input
from .processor import OUTPUT_SCHEMA, GroupProcessor
from .sources import is_decoded, kafka_stream

log = logging.getLogger("rebalance_monitor.job")

ONCE_TRIGGER_MS = 200  # `run --once`: its batches follow one another this closely


def topic_sources(cfg: MonitorConfig) -> dict[str, str]:
    sources = {t: "events" for t in cfg.events_topics()}
    if cfg.kafka.coordinator_log_topic:
        sources[cfg.kafka.coordinator_log_topic] = "coordinator-log"
    if cfg.kafka.offsets_topic:
        sources[cfg.kafka.offsets_topic] = "offsets-topic"
    return sources


def source_options(cfg: MonitorConfig) -> dict:
    """The options of the job's Kafka input (spark/sources.py): the connection's ``kafka.*`` options, the topics
    and where to start, the records per trigger, the Python source's client."""
    return {
        **cfg.kafka.connection().java_options(),
        "subscribe": ",".join(topic_sources(cfg)),
        "startingOffsets": cfg.kafka.starting_offsets,
        "maxOffsetsPerTrigger": str(cfg.kafka.max_offsets_per_trigger),
        "failOnDataLoss": "false",
        "client": cfg.kafka.client,
    }


def query_name(cluster: str) -> str:
    """The query's name in Spark (unique among a session's running queries: one per cluster)."""
    return "rebalance_monitor" if cluster == "default" else f"rebalance_monitor[{cluster}]"


class QueryPlan:
    """What the query is: its session (built on first use), its pipeline (`build`), its sinks (`sinks`) and its
    writer (`writer`). `idle_clock`: while the input is idle, a group's clock follows the wall clock
    (state.idle_clock, and this flag). `started_ms`: the start the processor counts idle time from, set by
    `build` (what the wake-up records carry, `StreamingQueryJob.wake_input`)."""

    def __init__(self, cfg: MonitorConfig, spark=None, idle_clock: bool = True):
        self.cfg = cfg
        self.spark = spark
        self.idle_clock = idle_clock
        self.started_ms: int | None = None

    @property
    def query_checkpoint(self) -> str:
        """The Spark query's checkpoint directory: `query` inside `state.checkpoint_location` (a path or a URI)."""
        return join(self.cfg.state.checkpoint_location, "query")

    def session(self):
        """The SparkSession the query runs on, built from `spark.*` the first time (unless one was given)."""
        if self.spark is None:
            from .session import build_session

            c = self.cfg.spark
            self.spark = build_session(master=c.master, app_name=c.app_name, local_dir=c.local_dir,
                                       shuffle_partitions=c.shuffle_partitions, extra_conf=c.conf, jit=c.jit,
                                       jars=jar_files(c.jars_dir) if c.jars_dir else (),
                                       spark_level=self.cfg.logging.spark_level)
        self.spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        return self.spark

    def build(self, flush_to_ms: int | None = None, once: bool = False, whole_input: bool = False,
              drain: bool = False):
        """The query's plan. `once` (`run --once`): every group with anything pending wakes up at every
        trigger; no clock follows the wall clock or Spark's watermark. `whole_input`: what the input holds is
        read in one batch, as replay reads it (maxOffsetsPerTrigger splits a backlog by record count, so one
        topic's batch may run ahead of another's in time, and a group's events from the slower topic are then
        late). `flush_to_ms`: every group's clock is at least there. `drain`: in the batch after the one that
        read the input, every group moves to the input's highest event time (`run_once`)."""
        spark = self.session()
        cfg = self.cfg
        options = source_options(cfg)
        if whole_input:
            options.pop("maxOffsetsPerTrigger", None)
        decode = {"topics": topic_sources(cfg), "max_bytes": cfg.kafka.max_record_bytes,
                  "max_future_ms": int(cfg.kafka.max_future_skew), "shards": cfg.kafka.offsets_topic_partitions}
        keep = cfg.group_filter()
        if keep is not None:  # groups.allow/deny: applied in the decode stage, before any state is kept
            decode["groups"] = keep.to_options()
        topic_ids = None  # KIP-848 records' topic ids to names (inputs/topic_ids.py), resolved in the workers
        if cfg.kafka.offsets_topic:
            from ..inputs.topic_ids import CLUSTER, NONE, load_file

            spec = decode["topic_ids"] = cfg.kafka.topic_ids  # the Python source adds its own Kafka settings
            if spec not in (CLUSTER, NONE):  # a file: read here, the workers need not see it
                decode["topic_id_names"] = load_file(spec)
            topic_ids = (spec, cfg.kafka.connection() if spec == CLUSTER else decode.get("topic_id_names"))
        if cfg.kafka.decode_in_source:
            options["decode"] = json.dumps(decode)
        raw = kafka_stream(spark, options, prefer=cfg.kafka.connector)
        if is_decoded(raw):
            decoded = raw
        else:
            decoder = make_decoder(decode["topics"], decode["max_bytes"], decode["max_future_ms"],
                                   groups=decode.get("groups"), shards=decode["shards"], topic_ids=topic_ids)
            event_topics = [t for t, fmt in decode["topics"].items() if fmt == "events"]
            staged = decode_input(raw, cfg.kafka.offsets_topic, event_topics, decode["max_bytes"],
                                  decode["max_future_ms"])
            decoded = staged.mapInArrow(decoder, DECODED_SCHEMA)
        log.info("decoding %s", "in the Python Kafka source" if is_decoded(raw) else "in a mapInArrow stage")
        events = decoded.withWatermark("et", f"{int(cfg.state.watermark_delay)} milliseconds")
        processor = GroupProcessor(cfg.core_settings(), release_delay_ms=int(cfg.state.watermark_delay),
                                   follow_wall=self.idle_clock and cfg.state.idle_clock and not once,
                                   flush_to_ms=flush_to_ms, visit_every_batch=once, follow_watermark=not once,
                                   drain=drain,
                                   horizon_ms=int(cfg.spark.trigger_interval) + int(cfg.state.watermark_delay),
                                   cache_bytes=cfg.state.runner_cache_mb << 20, cluster=cfg.kafka.cluster_name)
        self.started_ms = processor.clock.started_ms  # what the wake-up records carry (wake_input)
        # keyed by the group's __consumer_offsets partition (spark/processor.py)
        return events.groupBy("shard").transformWithState(processor, OUTPUT_SCHEMA, "Append", "ProcessingTime")

    def sinks(self, files):
        """The history and dead-letter sinks the configuration names, their files through `files`, their records
        stamped with the cluster's name (`kafka.cluster_name`)."""
        from .sinks import Sinks

        cfg = self.cfg
        return Sinks(cfg.sinks.history.parquet_path, cfg.sinks.history.kafka_topic, cfg.sinks.dead_letter.path,
                     cfg.sinks.dead_letter.kafka_topic, cfg.kafka.connection(), files=files,
                     cluster=cfg.kafka.cluster_name)

    def writer(self, out, foreach_batch, once: bool = False):
        """The query's writer: `foreach_batch` on the driver for each micro-batch, the checkpoint, the trigger
        (`once`: batches back to back)."""
        trigger = int(self.cfg.spark.trigger_interval)
        interval = min(ONCE_TRIGGER_MS, trigger) if once else trigger
        return (out.writeStream.foreachBatch(foreach_batch)
                .option("checkpointLocation", self.query_checkpoint)
                .queryName(query_name(self.cfg.kafka.cluster_name))
                .trigger(processingTime=f"{interval} milliseconds"))
