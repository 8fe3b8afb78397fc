"""The Python Kafka source's options (`SourceOptions.parse`) and its choice of Kafka client (`resolve_client`).

Option names are case-insensitive; the package docstring lists them. The ``kafka.*`` options, in Java, librdkafka
or kafka-python spelling, are read into a `KafkaConnection` (kafka_connection.py), whose other client options pass
through to the chosen client.
"""
from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

from ...kafka_connection import KafkaConnection

FORMAT = "rmkafka"
CLIENTS = ("auto", "confluent", "kafka-python")


FETCH_QUEUE_BACKOFF_MS = 10


def resolve_client(prefer: str = "auto") -> tuple[str, str]:
    """("confluent" | "kafka-python", reason). Raises ImportError when a forced client is missing."""
    prefer = (prefer or "auto").strip().lower()
    if prefer not in CLIENTS:
        raise ValueError(f"option client must be one of {CLIENTS}, got {prefer!r}")
    if prefer == "confluent":
        import confluent_kafka  # noqa: F401

        return "confluent", "forced by option client=confluent"
    if prefer == "kafka-python":
        import kafka  # noqa: F401

        return "kafka-python", "forced by option client=kafka-python"
    try:
        import confluent_kafka  # noqa: F401

        return "confluent", "auto: confluent-kafka (librdkafka) is importable"
    except ImportError:
        import kafka  # noqa: F401

        return "kafka-python", "auto: confluent-kafka is not importable, falling back to kafka-python"


def truthy(value: Any) -> bool:
    """An option's boolean value ("true", "1", "yes", "on", any case)."""
    return str(value).strip().lower() in ("1", "true", "yes", "on")


@dataclass
class SourceOptions:
    """The parsed options of one "rmkafka" reader: what to read, from where, how much per batch, with which
    client, and the Kafka connection."""

    connection: KafkaConnection
    topics: list | None = None
    pattern: str | None = None
    assign: dict | None = None
    starting: Any = "latest"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    client: str = "auto"
    verify_end_offsets: bool = True
    poll_timeout_ms: int = 120_000
    group_id_prefix: str = "rmkafka"
    include_headers: bool = False
    arrow_batch_rows: int = 20_000
    reuse_clients: bool = True  # keep each partition's client for its next range (client_pool.py)
    decode: dict | None = None  # option "decode": emit decoded rows (decoding/record_decoder.py) instead of records

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> "SourceOptions":
        opts = {str(k).lower(): v for k, v in options.items()}
        o = cls(connection=KafkaConnection.from_options(opts))
        chosen = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k)]
        if len(chosen) != 1:
            raise ValueError("give exactly one of the options subscribe, subscribePattern, assign")
        if "subscribe" in chosen:
            o.topics = [t.strip() for t in str(opts["subscribe"]).split(",") if t.strip()]
        elif "subscribepattern" in chosen:
            o.pattern = str(opts["subscribepattern"])
            re.compile(o.pattern)
        else:
            raw = json.loads(opts["assign"])
            o.assign = {str(t): sorted(int(p) for p in parts) for t, parts in raw.items()}
        start = str(opts.get("startingoffsets", "latest")).strip()
        if start.lower() in ("earliest", "latest"):
            o.starting = start.lower()
        else:
            raw = json.loads(start)
            o.starting = {str(t): {str(int(p)): int(off) for p, off in parts.items()} for t, parts in raw.items()}
        if opts.get("maxoffsetspertrigger") not in (None, ""):
            o.max_offsets_per_trigger = int(opts["maxoffsetspertrigger"])
            if o.max_offsets_per_trigger <= 0:
                raise ValueError("maxOffsetsPerTrigger must be positive")
        if opts.get("minpartitions") not in (None, ""):
            o.min_partitions = int(opts["minpartitions"])
        o.fail_on_data_loss = truthy(opts.get("failondataloss", "true"))
        o.client = str(opts.get("client", "auto")).strip().lower()
        if o.client not in CLIENTS:
            raise ValueError(f"option client must be one of {CLIENTS}, got {o.client!r}")
        o.verify_end_offsets = truthy(opts.get("verifyendoffsets", "true"))
        o.poll_timeout_ms = int(opts.get("kafkaconsumer.polltimeoutms", 120_000))
        o.group_id_prefix = str(opts.get("groupidprefix", "rmkafka"))
        o.include_headers = truthy(opts.get("includeheaders", "false"))
        o.arrow_batch_rows = max(1, int(opts.get("arrowbatchrows", 20_000)))
        o.reuse_clients = truthy(opts.get("reuseclients", "true"))
        if opts.get("decode"):
            o.decode = json.loads(opts["decode"])
            if not isinstance(o.decode, dict) or not isinstance(o.decode.get("topics"), dict):
                raise ValueError('option decode must be JSON {"topics": {topic: format}, "max_bytes": n, '
                                 '"max_future_ms": n}')
        return o

    def topic_selected(self, topic: str) -> bool:
        """Whether `topic` is one to read: subscribed, assigned, or matching the pattern as a whole (topics
        starting with ``__`` only when the pattern does too)."""
        if self.topics is not None:
            return topic in self.topics
        if self.assign is not None:
            return topic in self.assign
        if topic.startswith("__") and not self.pattern.startswith("__"):
            return False
        return re.fullmatch(self.pattern, topic) is not None

    def subscription(self) -> str:
        """What the reader reads, in words (for its log line)."""
        if self.topics is not None:
            return f"topics {','.join(self.topics)}"
        if self.pattern is not None:
            return f"pattern {self.pattern!r}"
        return f"assignment {self.assign}"

    def confluent_conf(self) -> dict:
        """A confluent-kafka consumer's configuration: never joins its (random) group, never commits."""
        conf = self.connection.confluent()
        conf.setdefault("log.connection.close", False)  # brokers close idle connections: not worth a log line
        # librdkafka stops fetching a partition for this long once its queue holds queued.min.messages (100,000)
        # records; its default (1,000 ms) left a reader that drains faster than that idle most of the time: a plain
        # consumer of small records drained at ~4.6 us a record instead of ~0.9 us (CPU ~1 us either way)
        conf.setdefault("fetch.queue.backoff.ms", FETCH_QUEUE_BACKOFF_MS)
        conf.setdefault("group.id", f"{self.group_id_prefix}-{uuid.uuid4().hex[:12]}")
        conf["enable.auto.commit"] = False
        conf["enable.auto.offset.store"] = False
        return conf

    def kafka_python_conf(self) -> dict:
        """A kafka-python consumer's configuration: no group, never commits."""
        conf = self.connection.kafka_python()
        conf["group_id"] = None
        conf["enable_auto_commit"] = False
        # kafka-python leaves internal topics out of its metadata by default (`__consumer_offsets` was never
        # read with the base install); metadata.KafkaPythonMetadata.partitions looks named topics up as well
        conf["exclude_internal_topics"] = False
        conf["allow_auto_create_topics"] = False  # a subscribed topic looked up before it exists is not created
        return conf
