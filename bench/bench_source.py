"""Throughput of the Python Kafka source ("rmkafka") next to plain consumers draining the same topic.

    .venv/bin/python bench/bench_source.py [--records 500000] [--partitions 4] [--skip-kafka-python]
    .venv/bin/python bench/bench_source.py --ranges   (what one range costs, each client kept or opened anew)

Starts Apache Kafka (testing.broker) on a loopback port, produces small JSON records, then drains the topic with:
a plain confluent-kafka consumer, a plain kafka-python consumer, and Spark (local[2]) reading format
"rmkafka" with Trigger.AvailableNow into the noop sink, once per client. Spark's figure excludes the
session start but includes query planning and Python worker start-up. Prints records/s and ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time


def produce(bootstrap: str, topic: str, n: int, partitions: int) -> float:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 1_000_000, "log.connection.close": False})
    t0 = time.perf_counter()
    for i in range(n):
        value = json.dumps({"v": 1, "type": "heartbeat", "ts": 1_700_000_000_000 + i, "group": f"g{i % 50}",
                            "member_id": f"m-{i % 500}", "generation": i % 7, "error": None}).encode()
        while True:
            try:
                p.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
        if i % 10000 == 0:
            p.poll(0)
    remaining = p.flush(120)
    if remaining:
        raise RuntimeError(f"{remaining} records not delivered")
    return n / (time.perf_counter() - t0)


def drain_confluent(bootstrap: str, topic: str, n: int, partitions: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-never-joined", "enable.auto.commit": False,
                  "log.connection.close": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    t0 = time.perf_counter()
    while got < n:
        for m in c.consume(num_messages=10000, timeout=1.0):
            if m.error() is None:
                m.value()
                got += 1
    elapsed = time.perf_counter() - t0
    c.close()
    return got / elapsed


def drain_kafka_python(bootstrap: str, topic: str, n: int, partitions: int) -> float:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, max_poll_records=10000)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    c.assign(tps)
    for tp in tps:
        c.seek(tp, 0)
    got = 0
    t0 = time.perf_counter()
    while got < n:
        for recs in c.poll(timeout_ms=1000).values():
            for r in recs:
                r.value
                got += 1
    elapsed = time.perf_counter() - t0
    c.close()
    return got / elapsed


def spark_source(spark, bootstrap: str, topic: str, n: int, client: str, checkpoint: str) -> tuple[float, float]:
    """(records/s over the whole query, records/s inside the micro-batches (addBatch))."""
    df = (spark.readStream.format("rmkafka").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("startingOffsets", "earliest").option("client", client).load())
    t0 = time.perf_counter()
    q = (df.writeStream.format("noop").trigger(availableNow=True)
         .option("checkpointLocation", checkpoint).start())
    q.awaitTermination()
    elapsed = time.perf_counter() - t0
    if q.exception() is not None:
        raise RuntimeError(q.exception())
    rows = sum(p["numInputRows"] for p in q.recentProgress)
    if rows != n:
        raise RuntimeError(f"Spark read {rows} rows, expected {n}")
    in_batches = sum(p["durationMs"].get("addBatch", 0) for p in q.recentProgress) / 1000
    return rows / elapsed, rows / max(in_batches, 1e-9)


def range_costs(bootstrap: str, topic: str, n: int, parts: int, clients: list[str]) -> None:
    """One range after another per partition, as a worker reads a partition's share of each micro-batch: ms per
    range with a new client per range and with the client kept between ranges (spark/kafka_source/client_pool.py),
    side by side, for small ranges (a quiet partition's batch) and large ones."""
    from rebalance_monitor.spark.kafka_source import client_pool, range_reader
    from rebalance_monitor.spark.kafka_source.offsets import OffsetRange
    from rebalance_monitor.spark.kafka_source.options import SourceOptions

    per_part = n // parts
    for client in clients:
        for size in (100, min(50_000, per_part // 4)):
            line = []
            for reuse in ("false", "true", "false", "true"):
                client_pool.POOL.close_all()
                opts = SourceOptions.parse({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                            "reuseClients": reuse})
                ranges = [OffsetRange(topic, p, k * size, (k + 1) * size)
                          for k in range(min(4, per_part // size)) for p in range(parts)]
                t0 = time.perf_counter()
                read = sum(len(c) if isinstance(c, list) else sum(1 for _ in c)
                           for r in ranges for c in range_reader.read_range(opts, client, r, as_records=True))
                dt = time.perf_counter() - t0
                assert read == len(ranges) * size, (read, len(ranges) * size)
                line.append(f"{'kept' if reuse == 'true' else 'new'} {dt / len(ranges) * 1000:6.1f} ms")
            print(f"  ranges of {size:>6,} records, {client:<12}: " + ", ".join(line), flush=True)
            client_pool.POOL.close_all()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--skip-kafka-python", action="store_true", help="skip the (slow) kafka-python runs")
    ap.add_argument("--ranges", action="store_true", help="only the cost of a range, client kept or new")
    args = ap.parse_args(argv)

    from rebalance_monitor.spark.session import build_session
    from rebalance_monitor.testing.broker import Broker

    n, parts = args.records, args.partitions
    results: dict[str, float] = {}
    work = tempfile.mkdtemp(prefix="bench-source-")
    with Broker(log_path=os.path.join(work, "broker.log")) as broker:
        topic = "bench-source"
        broker.create_topics({topic: parts})
        print(f"producing {n} records to {parts} partitions ...", flush=True)
        print(f"  producer: {produce(broker.bootstrap, topic, n, parts):,.0f} rec/s", flush=True)
        clients = ["confluent"] + ([] if args.skip_kafka_python else ["kafka-python"])
        if args.ranges:
            range_costs(broker.bootstrap, topic, n, parts, clients)
            shutil.rmtree(work, ignore_errors=True)
            return 0

        results["plain confluent-kafka consumer"] = drain_confluent(broker.bootstrap, topic, n, parts)
        if not args.skip_kafka_python:
            results["plain kafka-python consumer"] = drain_kafka_python(broker.bootstrap, topic, n, parts)

        t0 = time.perf_counter()
        spark = build_session(app_name="bench-source", local_dir=os.path.join(work, "spark"))
        print(f"  SparkSession start: {time.perf_counter() - t0:.1f} s", flush=True)
        try:
            # Warm-up: the first query pays for JVM code loading and Python worker start-up.
            broker.create_topics({"bench-warmup": parts})
            produce(broker.bootstrap, "bench-warmup", 2000, parts)
            for client in clients:
                t0 = time.perf_counter()
                spark_source(spark, broker.bootstrap, "bench-warmup", 2000, client, os.path.join(work, f"w-{client}"))
                print(f"  warm-up query ({client}, 2,000 records): {time.perf_counter() - t0:.1f} s", flush=True)
            for client in clients:
                rate, in_batch = spark_source(spark, broker.bootstrap, topic, n, client,
                                              os.path.join(work, f"ck-{client}"))
                results[f"Spark rmkafka, client={client}: whole query"] = rate
                results[f"Spark rmkafka, client={client}: inside addBatch"] = in_batch
        finally:
            spark.stop()
    shutil.rmtree(work, ignore_errors=True)

    base = results["plain confluent-kafka consumer"]
    width = max(len(k) for k in results)
    print(f"\n{n:,} records, {parts} partitions, machine: {os.cpu_count()} cores; Spark local[2], "
          "Trigger.AvailableNow into the noop sink (after a warm-up query)")
    print(f"{'reader':<{width}}  {'records/s':>12}  {'vs plain confluent':>18}")
    for name, rate in results.items():
        print(f"{name:<{width}}  {rate:>12,.0f}  {rate / base:>17.2f}x")
    if "plain kafka-python consumer" in results:
        kp = results["plain kafka-python consumer"]
        sp = results.get("Spark rmkafka, client=kafka-python: whole query")
        if sp:
            print(f"Spark rmkafka (kafka-python) vs plain kafka-python: {sp / kp:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
