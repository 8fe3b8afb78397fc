"""Where the job's output goes besides the metrics: the history sink (Parquet files and/or a Kafka topic)
and the dead-letter sink (JSON-lines files and/or a Kafka topic).

File outputs are written per micro-batch under names the job makes itself (never from input data), by
write-to-temporary-then-rename, so a batch replayed after a crash overwrites its own output instead of
duplicating it. Kafka outputs are at-least-once (a replayed batch is produced again).
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from ..kafka_connection import KafkaConnection

log = logging.getLogger(__name__)


def safe_dir(path: str) -> Path:
    """The configured directory, created if missing; output files only ever go directly inside it."""
    p = Path(path).resolve()
    p.mkdir(parents=True, exist_ok=True)
    return p


def batch_file(directory: Path, prefix: str, batch_id: int, suffix: str) -> Path:
    name = f"{prefix}-{int(batch_id):012d}{suffix}"
    target = (directory / name).resolve()
    if target.parent != directory:  # defensive: the name is ours, but never write outside the directory
        raise ValueError(f"refusing to write outside {directory}")
    return target


def write_lines_atomically(target: Path, lines: list[str]) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line)
            f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)


class KafkaTopicWriter:
    """A small producer for the Kafka outputs (confluent-kafka when installed, else kafka-python)."""

    def __init__(self, topic: str, connection: KafkaConnection):
        self.topic = topic
        try:
            from confluent_kafka import Producer

            self._producer = Producer({**connection.confluent(), "linger.ms": 50})
            self._kind = "confluent"
        except ImportError:
            from kafka import KafkaProducer

            self._producer = KafkaProducer(**connection.kafka_python(), linger_ms=50)
            self._kind = "kafka-python"

    def send(self, items: list[tuple[str, str]], timeout_s: float = 30.0) -> None:
        """Produce (key, value) pairs and wait for them; raises if they could not all be delivered."""
        errors = []
        if self._kind == "confluent":
            def on_delivery(err, _msg):
                if err is not None:
                    errors.append(err)

            for key, value in items:
                while True:
                    try:
                        self._producer.produce(self.topic, value.encode(), key.encode(), on_delivery=on_delivery)
                        break
                    except BufferError:
                        self._producer.poll(0.1)
            left = self._producer.flush(timeout_s)
            if left:
                errors.append(f"{left} messages not delivered within {timeout_s}s")
        else:
            futures = [self._producer.send(self.topic, value=v.encode(), key=k.encode()) for k, v in items]
            self._producer.flush(timeout_s)
            for fut in futures:
                if fut.failed():
                    errors.append(fut.exception)
        if errors:
            raise RuntimeError(f"producing to {self.topic} failed: {errors[0]}")

    def close(self) -> None:
        try:
            if self._kind == "confluent":
                self._producer.flush(5)
            else:
                self._producer.close(5)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass


class Sinks:
    def __init__(self, history_parquet: str | None, history_topic: str | None, dead_letter_path: str | None,
                 dead_letter_topic: str | None, kafka: KafkaConnection):
        self.history_parquet = safe_dir(history_parquet) if history_parquet else None
        self.dead_letter_dir = safe_dir(dead_letter_path) if dead_letter_path else None
        self.history_topic = KafkaTopicWriter(history_topic, kafka) if history_topic else None
        self.dead_letter_topic = KafkaTopicWriter(dead_letter_topic, kafka) if dead_letter_topic else None

    def write_history(self, spark, batch_id: int, rows: list[tuple]) -> None:
        """rows: (kind, group, ts, payload) of the records worth keeping (not group_status)."""
        if not rows:
            return
        if self.history_parquet is not None:
            import pandas as pd

            target = self.history_parquet / f"batch_id={int(batch_id)}"
            pdf = pd.DataFrame(rows, columns=["kind", "group", "ts", "payload"])
            tmp = self.history_parquet / f".batch_id={int(batch_id)}.tmp.parquet"
            pdf.to_parquet(tmp, index=False)
            target.mkdir(exist_ok=True)
            os.replace(tmp, target / "part-0.parquet")
        if self.history_topic is not None:
            self.history_topic.send([(g, p) for _, g, _, p in rows])

    def write_dead_letters(self, batch_id: int, payloads: list[str]) -> None:
        if not payloads:
            return
        if self.dead_letter_dir is not None:
            write_lines_atomically(batch_file(self.dead_letter_dir, "dead-letters", batch_id, ".jsonl"), payloads)
        if self.dead_letter_topic is not None:
            self.dead_letter_topic.send([(json.loads(p).get("reason", ""), p) for p in payloads])

    def close(self) -> None:
        for w in (self.history_topic, self.dead_letter_topic):
            if w is not None:
                w.close()
