"""Topic id -> topic name for the KIP-848 records of `__consumer_offsets`.

ConsumerGroupTargetAssignmentMember and ConsumerGroupCurrentMemberAssignment records name partitions by topic
id. Kafka 3.8-4.0 also wrote ConsumerGroupPartitionMetadata records (id, name, partition count per subscribed
topic); from 4.1 the coordinator tracks subscriptions by a metadata hash (KIP-1101) and writes none, so on
4.x the topic itself does not say which topic an id is. The cluster does: a DescribeTopics / Metadata answer
gives every topic's id.

`TopicNames` is the map the decoder resolves ids with (`decode_offsets_record(..., topic_names=...)`): ids
learned from ConsumerGroupPartitionMetadata records (and a share group's ShareGroupStatePartitionMetadata), ids given up front (a file), and, when an id is not known,
the cluster's own topics (`lookup`), asked again when a new unknown id appears, at most every `retry_s`
seconds (an id of a deleted topic stays unknown and must not make every record ask the cluster). An id still
unknown stays its UUID string in the events and is counted in `unresolved` (reason `unresolved_topic_id`).

`resolver_for(spec, settings)` gives one `TopicNames` per process and spec: the replay command and the Spark
decode stage (in every Python worker) share it, so the cluster is asked once per worker, not per batch.
"""
from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from dataclasses import asdict
from typing import Callable, Mapping

from ..kafka_connection import KafkaConnection

log = logging.getLogger(__name__)

UNRESOLVED_REASON = "unresolved_topic_id"
CLUSTER = "cluster"  # spec: ask the cluster the job reads (kafka.bootstrap_servers)
NONE = "none"  # spec: do not resolve (ids from ConsumerGroupPartitionMetadata records only)


class TopicNames:
    """A topic id -> name map with a fallback `lookup` (() -> {id: name}, e.g. `cluster_lookup`)."""

    def __init__(self, known: Mapping[str, str] | None = None, lookup: Callable[[], Mapping[str, str]] | None = None,
                 retry_s: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self.names: dict[str, str] = dict(known or {})
        self.lookup = lookup
        self.retry_s = retry_s
        self.clock = clock
        self.unresolved: dict[str, int] = {}  # id -> references left unresolved (since the last `take_unresolved`)
        self.lookups = 0
        self.lookup_errors = 0
        self._asked_at: float | None = None
        self._asked_for: set[str] = set()  # ids unknown at the last lookup
        self._lock = threading.Lock()

    def __bool__(self) -> bool:  # an empty map still resolves (through `lookup`)
        return True

    def __setitem__(self, topic_id: str, name: str) -> None:
        """Learned from a ConsumerGroupPartitionMetadata record."""
        self.names[topic_id] = name

    def __getitem__(self, topic_id: str) -> str:
        name = self.get(topic_id)
        if name is None:
            raise KeyError(topic_id)
        return name

    def get(self, topic_id: str, default=None):
        name = self.names.get(topic_id)
        if name is None and self.lookup is not None and self._may_ask(topic_id):
            self._refresh(topic_id)
            name = self.names.get(topic_id)
        if name is None:
            self.unresolved[topic_id] = self.unresolved.get(topic_id, 0) + 1
            return default
        return name

    def _may_ask(self, topic_id: str) -> bool:
        if self._asked_at is None:
            return True
        if topic_id in self._asked_for:  # the cluster did not know it: ask again only after retry_s
            return self.clock() - self._asked_at >= self.retry_s
        # a new id (a topic created since): ask, but not more often than every retry_s / 10
        return self.clock() - self._asked_at >= self.retry_s / 10

    def _refresh(self, wanted: str) -> None:
        with self._lock:
            self._asked_at = self.clock()
            self.lookups += 1
            try:
                found = dict(self.lookup())
            except Exception as exc:  # noqa: BLE001 - a broker away must not stop decoding
                self.lookup_errors += 1
                log.warning("topic ids: cannot read the cluster's topics (%s: %s); ids stay ids for %.0f s",
                            type(exc).__name__, str(exc)[:200], self.retry_s)
                self._asked_for.add(wanted)
                return
            self.names.update(found)
            if wanted not in self.names:
                self._asked_for.add(wanted)
                log.info("topic ids: %s is not a topic of the cluster (deleted?)", wanted)

    def take_unresolved(self) -> dict[str, int]:
        """The unresolved references counted since the last call (per id), and forget them."""
        out, self.unresolved = self.unresolved, {}
        return out


def kafka_uuid(msb: int, lsb: int) -> str:
    """A Kafka Uuid from its two signed 64-bit halves, as the decoder writes ids (8-4-4-4-12 hex)."""
    return str(uuid.UUID(int=((msb & 0xFFFFFFFFFFFFFFFF) << 64) | (lsb & 0xFFFFFFFFFFFFFFFF)))


def cluster_lookup(connection: KafkaConnection, timeout_s: float = 10.0) -> Callable[[], dict[str, str]]:
    """() -> {topic id: name} of every topic of the cluster `connection` reaches, through librdkafka's admin
    client (Metadata for the names, DescribeTopics for the ids), or kafka-python's where confluent-kafka (an
    extra) is not installed: the base install names topic ids too."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return _kafka_python_lookup(connection)
    conf = connection.confluent()
    conf.setdefault("client.id", "rebalance-monitor-topic-ids")

    def lookup() -> dict[str, str]:
        from confluent_kafka import TopicCollection
        from confluent_kafka.admin import AdminClient

        # a client per lookup (lookups are rare): none stays connected, or retrying a broker that went away
        admin = AdminClient(conf)
        names = sorted(admin.list_topics(timeout=timeout_s).topics)
        if not names:
            return {}
        futures = admin.describe_topics(TopicCollection(names), request_timeout=timeout_s)
        out = {}
        for name, fut in futures.items():
            try:
                desc = fut.result(timeout=timeout_s)
            except Exception:  # noqa: BLE001 - deleted between the two requests, or not authorised
                continue
            tid = desc.topic_id
            out[kafka_uuid(tid.get_most_significant_bits(), tid.get_least_significant_bits())] = name
        return out

    return lookup


def _kafka_python_lookup(connection: KafkaConnection) -> Callable[[], dict[str, str]]:
    """() -> {topic id: name} through kafka-python's admin client (its Metadata v10+ carries every topic's id)."""
    conf = connection.kafka_python()
    conf.setdefault("client_id", "rebalance-monitor-topic-ids")

    def lookup() -> dict[str, str]:
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(**conf)  # a client per lookup, as above
        try:
            topics = admin.describe_topics()
        finally:
            admin.close()
        out = {}
        for t in topics:
            tid, name = t.get("topic_id"), t.get("name") or t.get("topic")
            if tid is None or name is None:
                continue
            tid = str(tid if isinstance(tid, uuid.UUID) else uuid.UUID(str(tid)))
            if tid != "00000000-0000-0000-0000-000000000000":
                out[tid] = name
        return out

    return lookup


def load_file(path: str) -> dict[str, str]:
    """A JSON object {topic id: topic name} (e.g. what scripts/capture_witnesses.py saves)."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"{path}: expected a JSON object {{topic id: topic name}}")
    return data


_RESOLVERS: dict[str, TopicNames] = {}
_RESOLVERS_LOCK = threading.Lock()


def resolver_for(spec: str | None, source: KafkaConnection | Mapping | None = None) -> TopicNames:
    """The process's `TopicNames` for `spec` (kafka.topic_ids): `cluster` (the cluster `source`, a
    `KafkaConnection`, reaches), `none`, or the path of a JSON file {id: name}, whose content `source` may carry
    instead (the Spark job reads the file on the driver, so the workers need not see it)."""
    spec = spec or NONE
    shown = asdict(source) if isinstance(source, KafkaConnection) else dict(source or {})
    key = json.dumps([spec, shown if spec != NONE else None], sort_keys=True, default=str)
    with _RESOLVERS_LOCK:
        found = _RESOLVERS.get(key)
        if found is None:
            if spec == CLUSTER:
                if not isinstance(source, KafkaConnection):
                    raise ValueError("kafka.topic_ids: cluster needs the Kafka connection (bootstrap servers)")
                found = TopicNames(lookup=cluster_lookup(source))
            elif spec == NONE:
                found = TopicNames()
            else:
                found = TopicNames(source if source is not None else load_file(spec))
            _RESOLVERS[key] = found
        return found
