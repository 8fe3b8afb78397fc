"""Where the job's time goes, piece by piece, side by side in one run (issue 29: "measure the pieces first").

For each input (canonical events from the clients; `__consumer_offsets` under a commit load) and each reader
(Spark's Kafka connector; the job's Python source, "rmkafka"), the same records go through streaming queries
that stop at a later piece each time, every query one batch from the earliest offsets (Trigger.AvailableNow)
into Spark's no-op sink:

  read     Kafka to the no-op sink (the reader alone: Kafka's bytes into Spark rows);
  decode   + the job's decode stage (mapInArrow: records to packed events keyed by shard, decoding/row_batches.py);
           with Spark's connector, the JVM stages run before it (on `__consumer_offsets` the offset commits are
           compacted, spark/jvm_compaction.py; on the events the heartbeats, polls and commits are packed per
           group, spark/jvm_packing.py), and "python decode" is the same piece with all of it in Python;
  shuffle  + the exchange by shard before the stateful operator (what `groupBy("shard")` costs);
  job      the whole job as `run` has it (decode, shuffle, the stateful processor, sinks): bench_job's measure.

Each piece runs `--repeat` times and the last run is reported (the first also warms the JVM's code and the Python
workers). Each line gives records/s over the query's wall time, CPU microseconds per record over the job's processes (the
driver JVM, where local-mode tasks run, and the Python workers), and the ratio to a plain confluent-kafka
consumer tuned as the Python source is (`fetch.queue.backoff.ms`), drained in the same run. A piece's own cost is
the difference between its line and the line above. Each query's start-up (planning, the first code generation,
the Python workers) is in its time: with a million records it was most of a read piece's time (the reads measured
0.44-0.48x at 1,000,000 records at d87b07f and 0.94-1.12x at 3,000,000 at 6b42daa, both on 2026-11-26), so the
defaults read 3 million.

    .venv/bin/python bench/bench_pieces.py [--events 3000000] [--groups 50] [--commits 15000] [--partitions 4]
                                           [--inputs events,offsets] [--readers spark,python]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time

from bench_core import workload
from bench_job import connector_jars, drain_plain, job_throughput, produce, tree_cpu_s
from bench_offsets_topic import commit_load, job_drain

from rebalance_monitor.config import load_config
from rebalance_monitor.decoding.decoded_rows import DECODED_SCHEMA
from rebalance_monitor.decoding.row_batches import make_decoder
from rebalance_monitor.spark.query_plan import source_options, topic_sources
from rebalance_monitor.spark.jvm import jvm_class_available
from rebalance_monitor.spark.jvm_compaction import CLASS, KAFKA_COLUMNS, decode_input
from rebalance_monitor.spark.kafka_source.options import FETCH_QUEUE_BACKOFF_MS
from rebalance_monitor.spark.session import build_session
from rebalance_monitor.spark.sources import kafka_stream
from rebalance_monitor.testing.broker import TEST_BROKER_SETTINGS, Broker

OFFSETS_PARTITIONS = int(TEST_BROKER_SETTINGS["offsets.topic.num.partitions"])
PIECES = ("read", "decode", "shuffle")


def input_config(bootstrap: str, work: str, which: str, topic: str):
    over = {"kafka.events_topic": topic} if which == "events" else {
        "kafka.events_topic": "", "kafka.offsets_topic": "__consumer_offsets",
        "kafka.offsets_topic_partitions": OFFSETS_PARTITIONS}
    return load_config(env={}, overrides={
        "kafka.bootstrap_servers": bootstrap, "kafka.starting_offsets": "earliest", "exporter.enabled": False,
        "state.checkpoint_location": os.path.join(work, "ck-unused"), **over})


def piece(spark, cfg, reader: str, upto: str, work: str, tag: str) -> dict:
    """One streaming query over the whole input, up to `upto`, into the no-op sink; wall and CPU."""
    options = source_options(cfg)
    options.pop("maxOffsetsPerTrigger", None)
    raw = kafka_stream(spark, options, prefer=reader)
    df = raw
    if upto != "read":
        decoder = make_decoder(topic_sources(cfg), cfg.kafka.max_record_bytes, int(cfg.kafka.max_future_skew),
                               shards=cfg.kafka.offsets_topic_partitions)
        # as the job has it (the offset commits compacted in the JVM when its stage is on the class path), or with
        # the compaction in the Python decode stage ("python decode")
        sources = topic_sources(cfg)
        df = (raw.select(*KAFKA_COLUMNS) if upto == "python decode" else
              decode_input(raw, cfg.kafka.offsets_topic, [t for t, f in sources.items() if f == "events"],
                           cfg.kafka.max_record_bytes, int(cfg.kafka.max_future_skew)))
        df = df.mapInArrow(decoder, DECODED_SCHEMA)
        if upto == "shuffle":
            df = df.repartition(int(spark.conf.get("spark.sql.shuffle.partitions")), "shard")
    cpu0, t0 = tree_cpu_s(), time.perf_counter()
    q = (df.writeStream.format("noop").trigger(availableNow=True)
         .option("checkpointLocation", os.path.join(work, f"ck-{tag}")).start())
    q.awaitTermination(1800)
    wall, cpu1 = time.perf_counter() - t0, tree_cpu_s()
    rows = sum(int(p.get("numInputRows") or 0) for p in q.recentProgress)
    return {"wall_s": wall, "cpu_s": sum(cpu1.values()) - sum(cpu0.values()), "rows": rows}


def report(label: str, records: int, res: dict, tuned: float) -> None:
    rate = records / res["wall_s"]
    print(f"  {label:<28} {rate:12,.0f} records/s  {res['cpu_s'] / records * 1e6:6.1f} us CPU/record  "
          f"{rate / tuned:5.2f}x of the tuned consumer", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=3_000_000)
    ap.add_argument("--groups", type=int, default=50, help="committing groups (the __consumer_offsets input)")
    ap.add_argument("--commits", type=int, default=15000, help="commits per committing group")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--inputs", default="events,offsets")
    ap.add_argument("--readers", default="spark,python")
    ap.add_argument("--repeat", type=int, default=2, help="queries per piece; the last is reported (warm)")
    ap.add_argument("--jit", choices=("quick", "full"), default="quick",
                    help="spark.jit: the JVM's compiler (quick: C1 only, the job's default; full: the JVM's default)")
    args = ap.parse_args()
    inputs, readers = args.inputs.split(","), args.readers.split(",")
    work = tempfile.mkdtemp(prefix="bench-pieces-")
    try:
        with Broker(log_path=os.path.join(work, "broker.log")) as broker:
            counts: dict[str, tuple[str, int]] = {}
            if "events" in inputs:
                broker.create_topics({"bench-events": args.partitions})
                values = [json.dumps(e, separators=(",", ":")).encode()
                          for e in workload(500, 20, args.events)]
                produce(broker.bootstrap, "bench-events", values, args.partitions)
                counts["events"] = ("bench-events", len(values))
            if "offsets" in inputs:
                broker.create_topics({"bench-data": args.partitions})
                written = commit_load(broker.bootstrap, "bench-data", args.groups, args.commits, args.partitions)
                counts["offsets"] = ("__consumer_offsets", written)
            spark = build_session(master="local[2]", local_dir=os.path.join(work, "spark"), shuffle_partitions=2,
                                  jars=connector_jars("connector") if "spark" in readers else (), jit=args.jit)
            print(f"machine load at start {os.getloadavg()[0]:.1f} (2 cores); one run, side by side", flush=True)
            for which in inputs:
                topic, n = counts[which]
                parts = args.partitions if which == "events" else OFFSETS_PARTITIONS
                tuned = drain_plain(broker.bootstrap, topic, parts, n,
                                    **{"fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS})
                print(f"{which}: {n:,} records in {topic}; plain confluent consumer, the source's settings "
                      f"{tuned:,.0f} records/s", flush=True)
                cfg = input_config(broker.bootstrap, work, which, topic)
                for reader in readers:
                    jvm = reader == "spark" and jvm_class_available(spark, CLASS)
                    for upto in PIECES[:1] + (("python decode",) if jvm else ()) + PIECES[1:]:
                        for attempt in range(args.repeat):  # the last one counts: the JVM's code warm
                            res = piece(spark, cfg, reader, upto, work, f"{which}-{reader}-{upto}-{attempt}")
                        report(f"{reader:<6} {upto}", n, res, tuned)
                    reader_work = os.path.join(work, f"job-{which}-{reader}")
                    cpu0, t0 = tree_cpu_s(), time.perf_counter()
                    if which == "events":
                        r = job_throughput(spark, broker.bootstrap, topic, reader_work, n, 500_000,
                                           connector=reader)
                        res = {"wall_s": time.perf_counter() - t0, "rows": r["read"],
                               "cpu_s": sum(r["cpu_s"].values())}
                    else:
                        r = job_drain(spark, broker.bootstrap, reader_work, n, connector=reader)
                        res = {"wall_s": r["wall_s"], "rows": r["records"], "cpu_s": r["cpu_s"]}
                    report(f"{reader:<6} job (start-up incl.)", n, res, tuned)
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
