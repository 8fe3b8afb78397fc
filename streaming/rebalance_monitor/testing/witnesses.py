"""The three witnesses of a consumer group on a real broker, read back from Kafka: the instrumented clients'
events, the coordinator's log lines shipped into a topic, and `__consumer_offsets` (read without joining a
group). Used by the witness tests and `scripts/witness.py` to compare what each input lets the monitor
reconstruct with what the clients saw.

`read_topic` drains a topic from its beginning to the end offsets it had when called.
"""
from __future__ import annotations

import base64
import json

WITNESSES = ("events", "coordinator-log", "offsets-topic")


def read_topic(bootstrap: str, topic: str, timeout_s: float = 30.0) -> list[tuple[bytes | None, bytes | None, int]]:
    """(key, value, timestamp ms) of every record of `topic` up to its current end, in partition order."""
    import time

    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="rm-witness-reader", group_id=None,
                             enable_auto_commit=False, exclude_internal_topics=False,
                             auto_offset_reset="earliest", isolation_level="read_committed")
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        if not tps:
            return []
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out: list[tuple] = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(consumer.position(tp) >= ends[tp] for tp in tps):
                break
            for _tp, recs in consumer.poll(timeout_ms=500).items():
                out.extend((r.key, r.value, r.timestamp) for r in recs)
        return out
    finally:
        consumer.close()


def offsets_dump_lines(records) -> list[str]:
    """`replay --source offsets-topic` lines for raw `__consumer_offsets` records."""
    def b64(b):
        return None if b is None else base64.b64encode(b).decode()

    return [json.dumps({"ts": ts, "key": b64(k), "value": b64(v)}) for k, v, ts in records]


def reconstruct(source: str, records, cfg=None, groups: set[str] | None = None, topic_names=None) -> list[dict]:
    """The records the monitor's core makes of one input (the same core as replay and the Spark job), for
    `groups` only if given. Records are fed in time order, as the job's watermark would release them.
    `topic_names`: the topic id -> name map of KIP-848 `__consumer_offsets` records (inputs/topic_ids.py)."""
    from rebalance_monitor.config import load_config
    from rebalance_monitor.core.reconstruct import Reconstructor
    from rebalance_monitor.decoding.reference import decode_record

    cfg = cfg or load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10})
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay),
                          offsets_partitions=cfg.kafka.offsets_topic_partitions)
    events = []
    for key, value, ts in records:
        evs, _rejects = decode_record(source, value, key=key, ts_ms=ts, topic_names=topic_names,
                                      max_future_ms=int(cfg.kafka.max_future_skew))
        events.extend(evs)
    events.sort(key=lambda e: e.ts)
    out: list[dict] = []
    for ev in events:
        if groups is not None and ev.group and ev.group not in groups:
            continue
        out.extend(recon.feed(ev))
    out.extend(recon.finish())
    return [r for r in out if groups is None or r.get("group") in groups]


def reconstruct_together(captured: dict, sources, groups: set[str] | None = None, topic_names=None) -> list[dict]:
    """What the core makes of several inputs read together (as the job reads them: one event stream in time
    order), e.g. ("coordinator-log", "offsets-topic"); `captured` as `load_captured` gives it. The configuration
    says whether `__consumer_offsets` is among them, as the job's does (core settings `member_list_input`)."""
    from rebalance_monitor.config import load_config
    from rebalance_monitor.core.reconstruct import Reconstructor
    from rebalance_monitor.decoding.reference import decode_record

    overrides = {"kafka.offsets_topic_partitions": 10}
    if "offsets-topic" in sources:
        overrides["kafka.offsets_topic"] = "__consumer_offsets"
    cfg = load_config(env={}, overrides=overrides)
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay),
                          offsets_partitions=cfg.kafka.offsets_topic_partitions)
    events = []
    for source in sources:
        for key, value, ts in captured[source]:
            evs, _rejects = decode_record(source, value, key=key, ts_ms=ts,
                                          topic_names=topic_names if source == "offsets-topic" else None,
                                          max_future_ms=int(cfg.kafka.max_future_skew))
            events.extend(evs)
    events.sort(key=lambda e: e.ts)
    out: list[dict] = []
    for ev in events:
        if groups is None or not ev.group or ev.group in groups:
            out.extend(recon.feed(ev))
    out.extend(recon.finish())
    return [r for r in out if groups is None or r.get("group") in groups]


def load_captured(directory) -> dict[str, list[tuple[bytes | None, bytes | None, int | None]]]:
    """What scripts/capture_witnesses.py saved of real brokers and clients (tests/witnesses/data/<version>/):
    (key, value, timestamp ms or None) per witness, in the order they were recorded."""
    from pathlib import Path

    d = Path(directory)

    def lines(name: str) -> list[str]:
        return [ln for ln in (d / name).read_text().splitlines() if ln.strip()]

    def dec(v):
        return None if v is None else base64.b64decode(v)

    offsets = [(dec(o["key"]), dec(o["value"]), o["ts"]) for o in map(json.loads, lines("offsets.jsonl"))]
    return {"events": [(None, ln.encode(), None) for ln in lines("events.jsonl")],
            "coordinator-log": [(None, ln.encode(), None) for ln in lines("coordinator.log")],
            "offsets-topic": offsets}


def produce_records(bootstrap: str, topic: str, records, partition: int | None = 0) -> None:
    """Produce (key, value, timestamp ms or None) records, all to `partition` (None: round robin over 3)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i, (key, value, ts) in enumerate(records):
        kwargs = {"partition": partition if partition is not None else i % 3}
        if ts is not None:
            kwargs["timestamp"] = int(ts)
        p.produce(topic, value=value, key=key, **kwargs)
    if p.flush(30):
        raise RuntimeError(f"producing to {topic}: records left undelivered after 30 s")
