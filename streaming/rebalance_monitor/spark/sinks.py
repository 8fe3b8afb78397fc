"""Where the job's output goes besides the metrics: the history sink (Parquet files and/or a Kafka topic)
and the dead-letter sink (JSON-lines files and/or a Kafka topic).

File outputs are written per micro-batch under names the job makes itself (never from input data), each file
replaced whole (files/hadoop.py: a temporary file renamed over it, or one PUT on S3), so a batch replayed
after a crash overwrites its own output instead of duplicating it. They go through the file-system object the
job passes (Hadoop's FileSystem API: a local directory, `s3a://`, `hdfs://` alike). Kafka outputs are
at-least-once (a replayed batch is produced again).

    <sinks.history.parquet_path>/batch_id=<N>/part-0.parquet     (columns kind, group, ts, payload, kafka_cluster)
    <sinks.dead_letter.path>/dead-letters-<N, 12 digits>.jsonl

Every record written carries `kafka_cluster`, the name of the cluster it is of (`kafka.cluster_name`, exactly as
configured): the payload's first field, and the history's Parquet column. The core knows of one cluster only;
the name is stamped here, on the way out (cluster_stamp.py). (Several clusters: each cluster's query has its own sinks, and its files
under `<path>/clusters/<name>` unless it is the configuration's default cluster; config_clusters.py.)
"""
from __future__ import annotations

import io
import json
import logging

from ..cluster_stamp import stamp_prefix, stamped
from ..files import LocalFiles, join
from ..kafka_connection import KafkaConnection

log = logging.getLogger(__name__)


def batch_file(directory: str, prefix: str, batch_id: int, suffix: str) -> str:
    """`directory/<prefix>-<batch id, 12 digits><suffix>`: a name of the job's own, directly inside `directory`."""
    name = f"{prefix}-{int(batch_id):012d}{suffix}"
    if "/" in name or name.startswith("."):  # defensive: the name is ours, but never write outside the directory
        raise ValueError(f"refusing to write outside {directory}")
    return join(directory, name)


HISTORY_COLUMNS = ("kind", "group", "ts", "payload", "kafka_cluster")


def parquet_bytes(rows: list[tuple], cluster: str = "default") -> bytes:
    """The history rows (kind, group, ts, payload: the payload already stamped) as one Parquet file (what pandas'
    to_parquet writes), with the cluster's name in column kafka_cluster."""
    import pandas as pd

    buf = io.BytesIO()
    pd.DataFrame([(*r, cluster) for r in rows], columns=list(HISTORY_COLUMNS)).to_parquet(buf, index=False)
    return buf.getvalue()


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

    def partitions(self, timeout_s: float = 30.0) -> list[int]:
        """The topic's partitions (raises when the topic is unknown)."""
        if self._kind == "confluent":
            meta = self._producer.list_topics(self.topic, timeout=timeout_s).topics.get(self.topic)
            if meta is None or meta.error is not None or not meta.partitions:
                raise RuntimeError(f"no partitions of {self.topic}: {getattr(meta, 'error', None)}")
            return sorted(meta.partitions)
        parts = self._producer.partitions_for(self.topic)
        if not parts:
            raise RuntimeError(f"no partitions of {self.topic}")
        return sorted(parts)

    def send(self, items: list[tuple], timeout_s: float = 30.0) -> None:
        """Produce (key, value) pairs, or (key, value, partition) triples, and wait for them; raises if they
        could not all be delivered."""
        errors = []
        if self._kind == "confluent":
            def on_delivery(err, _msg):
                if err is not None:
                    errors.append(err)

            for key, value, *at in items:
                extra = {"partition": at[0]} if at else {}
                while True:
                    try:
                        self._producer.produce(self.topic, value.encode(), key.encode(), on_delivery=on_delivery,
                                               **extra)
                        break
                    except BufferError:
                        self._producer.poll(0.1)
            left = self._producer.flush(timeout_s)
            if left:
                errors.append(f"{left} messages not delivered within {timeout_s}s")
        else:
            futures = [self._producer.send(self.topic, value=v.encode(), key=k.encode(),
                                           partition=at[0] if at else None) for k, v, *at in items]
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
    """The history and dead-letter outputs of cluster `cluster` (its records stamped with the name). `files`
    writes the file outputs (the job passes `HadoopFiles`; by default `LocalFiles`, local paths only); their
    directories are created here."""

    def __init__(self, history_parquet: str | None, history_topic: str | None, dead_letter_path: str | None,
                 dead_letter_topic: str | None, kafka: KafkaConnection, files=None, cluster: str = "default"):
        self.files = files if files is not None else LocalFiles()
        self.cluster = cluster
        self._prefix = stamp_prefix(cluster)
        self.history_parquet = history_parquet or None
        self.dead_letter_dir = dead_letter_path or None
        for directory in (self.history_parquet, self.dead_letter_dir):
            if directory is not None:
                self.files.mkdirs(directory)
        self.history_topic = KafkaTopicWriter(history_topic, kafka) if history_topic else None
        self.dead_letter_topic = KafkaTopicWriter(dead_letter_topic, kafka) if dead_letter_topic else None

    def write_history(self, batch_id: int, rows: list[tuple]) -> None:
        """rows: (kind, group, ts, payload) of the records worth keeping (not group_status)."""
        if not rows:
            return
        rows = [(kind, group, ts, stamped(payload, self._prefix)) for kind, group, ts, payload in rows]
        if self.history_parquet is not None:
            target = join(self.history_parquet, f"batch_id={int(batch_id)}", "part-0.parquet")
            self.files.write_bytes(target, parquet_bytes(rows, self.cluster))
        if self.history_topic is not None:
            self.history_topic.send([(g, p) for _, g, _, p in rows])

    def write_dead_letters(self, batch_id: int, payloads: list[str]) -> None:
        if not payloads:
            return
        payloads = [stamped(p, self._prefix) for p in payloads]
        if self.dead_letter_dir is not None:
            text = "".join(f"{p}\n" for p in payloads)
            self.files.write_bytes(batch_file(self.dead_letter_dir, "dead-letters", batch_id, ".jsonl"),
                                   text.encode("utf-8"))
        if self.dead_letter_topic is not None:
            self.dead_letter_topic.send([(json.loads(p).get("reason", ""), p) for p in payloads])

    def close(self) -> None:
        for w in (self.history_topic, self.dead_letter_topic):
            if w is not None:
                w.close()
