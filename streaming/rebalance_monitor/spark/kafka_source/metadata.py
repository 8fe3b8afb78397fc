"""What the Python Kafka source asks the cluster before a batch: topics and partitions, earliest and latest offsets.

One implementation per client, never joining a group. `Metadata.latest` confirms the listed latest offsets with a
fetch per partition when ``verifyEndOffsets`` is true (a Kafka-protocol broker may answer ListOffsets(latest) with
less than the high watermark; the fetch response carries the true one).
"""
from __future__ import annotations

import logging
import time
from typing import Mapping

from .offsets import TP
from .options import SourceOptions

log = logging.getLogger("rebalance_monitor.spark.kafka_source")


class Metadata:
    """Topic metadata and offset lookups (no group membership)."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts

    def partitions(self) -> list[TP]:
        """The partitions to read (of the topics `SourceOptions.topic_selected` picks), in order."""
        raise NotImplementedError

    def earliest(self, tps: list[TP]) -> dict[TP, int]:
        """The first offset still in each partition's log."""
        raise NotImplementedError

    def listed_latest(self, tps: list[TP]) -> dict[TP, int]:
        """ListOffsets(latest) of each partition."""
        raise NotImplementedError

    def fetched_high_watermarks(self, listed: Mapping[TP, int], timeout_s: float) -> dict[TP, int]:
        """The high watermarks fetch responses carry, fetching from the `listed` offsets."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the clients."""

    def latest(self, tps: list[TP]) -> dict[TP, int]:
        """The latest offset of each partition (the next to be written), confirmed by a fetch with
        verifyEndOffsets."""
        listed = self.listed_latest(tps)
        if not self.opts.verify_end_offsets or not listed:
            return listed
        hwm = self.fetched_high_watermarks(listed, timeout_s=10.0)
        out = {}
        for tp, off in listed.items():
            if tp in hwm and hwm[tp] >= off:
                out[tp] = hwm[tp]
            else:
                log.warning("no fetch response for %s-%s: using the listed latest offset %s", tp[0], tp[1], off)
                out[tp] = off
        return out

    def selected(self, all_tps: dict[str, list[int]]) -> list[TP]:
        """The partitions of `all_tps` ({topic: [partition, ...]}) the options select, in order."""
        o = self.opts
        tps: list[TP] = []
        for topic in sorted(all_tps):
            if not o.topic_selected(topic):
                continue
            parts = all_tps[topic]
            if o.assign is not None:
                parts = [p for p in o.assign[topic] if p in parts]
            tps.extend((topic, p) for p in sorted(parts))
        return tps


# ListOffsets errors of a partition whose leader is not (yet) where the client asked: a topic created a moment
# ago, a leader moving. librdkafka's admin results do not mark them retriable (KafkaError.retriable() is False).
LEADER_MOVING = ("NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PART", "REQUEST_TIMED_OUT",
                 "_TIMED_OUT", "_TRANSPORT")


def leader_moving(err) -> bool:
    """Whether a ListOffsets error of confluent-kafka's admin client is worth asking again."""
    if err is None:
        return False
    if getattr(err, "retriable", lambda: False)():
        return True
    name = getattr(err, "name", lambda: "")()
    return name in LEADER_MOVING


class ConfluentMetadata(Metadata):
    """Through librdkafka's admin client (Metadata, ListOffsets) and a probing consumer."""

    def __init__(self, opts: SourceOptions):
        super().__init__(opts)
        from confluent_kafka import Consumer
        from confluent_kafka.admin import AdminClient

        conf = opts.confluent_conf()
        self.admin = AdminClient({k: v for k, v in conf.items()
                                  if k not in ("group.id", "enable.auto.commit", "enable.auto.offset.store")})
        probe = dict(conf)
        probe.update({"fetch.wait.max.ms": 10, "queued.min.messages": 1,
                      "max.partition.fetch.bytes": 1024, "queued.max.messages.kbytes": 1024})
        self._probe_conf = probe
        self._probe = None
        self._consumer_cls = Consumer

    def partitions(self) -> list[TP]:
        try:
            md = self.admin.list_topics(timeout=30)
        finally:
            self.admin.poll(0)  # serves the client's log lines (kafka_connection.ClientLog), which else pile up
        return self.selected({t: list(m.partitions) for t, m in md.topics.items() if m.error is None})

    def _list(self, tps, spec, attempts: int = 10) -> dict[TP, int]:
        """ListOffsets; partitions answered with a retriable error (a topic created a moment ago has no leader
        yet: NOT_LEADER_FOR_PARTITION, LEADER_NOT_AVAILABLE) are asked again, with a growing pause (up to 5 s
        each, about half a minute in all: a loaded broker can take that long to elect a new topic's leaders)."""
        from confluent_kafka import KafkaException, TopicPartition

        out: dict[TP, int] = {}
        pending = list(tps)
        for attempt in range(attempts):
            if not pending:
                break
            futures = self.admin.list_offsets({TopicPartition(t, p): spec for t, p in pending}, request_timeout=30)
            retry = []
            for tp, f in futures.items():
                try:
                    out[(tp.topic, tp.partition)] = f.result().offset
                except KafkaException as exc:
                    if attempt + 1 < attempts and leader_moving(exc.args[0] if exc.args else None):
                        retry.append((tp.topic, tp.partition))
                    else:
                        raise
            pending = retry
            if pending:
                time.sleep(min(5.0, 0.2 * 2 ** attempt))
                # a fresh look at the topics' leaders (librdkafka sends ListOffsets to the leader it has cached)
                for topic in sorted({t for t, _ in pending}):
                    try:
                        self.admin.list_topics(topic=topic, timeout=10)
                    except KafkaException:
                        pass
        return out

    def earliest(self, tps):
        from confluent_kafka.admin import OffsetSpec

        return self._list(tps, OffsetSpec.earliest())

    def listed_latest(self, tps):
        from confluent_kafka.admin import OffsetSpec

        return self._list(tps, OffsetSpec.latest())

    def fetched_high_watermarks(self, listed, timeout_s):
        from confluent_kafka import TopicPartition

        if self._probe is None:
            self._probe = self._consumer_cls(self._probe_conf)
        c = self._probe
        c.assign([TopicPartition(t, p, off) for (t, p), off in listed.items()])
        out: dict[TP, int] = {}
        deadline = time.monotonic() + timeout_s
        try:
            while len(out) < len(listed) and time.monotonic() < deadline:
                c.consume(num_messages=1000, timeout=0.02)
                for (t, p), off in listed.items():
                    if (t, p) in out:
                        continue
                    _, high = c.get_watermark_offsets(TopicPartition(t, p), cached=True)
                    if high is not None and high >= off:
                        out[(t, p)] = high
        finally:
            c.unassign()
        return out

    def close(self):
        if self._probe is not None:
            self._probe.close()
            self._probe = None


class KafkaPythonMetadata(Metadata):
    """Through a kafka-python consumer (metadata, ListOffsets) and a probing consumer."""

    def __init__(self, opts: SourceOptions):
        super().__init__(opts)
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(**opts.kafka_python_conf())
        probe = opts.kafka_python_conf()
        probe.update({"fetch_max_wait_ms": 10, "max_partition_fetch_bytes": 1024})
        self._probe_conf = probe
        self._probe = None
        self._consumer_cls = KafkaConsumer

    def partitions(self):
        topics = self.consumer.topics()  # refreshes metadata of all topics
        # `topics()` leaves internal topics out whatever the consumer's exclude_internal_topics says: a topic named
        # in `subscribe` (`__consumer_offsets`) is looked up by name, as Spark's connector and librdkafka read it
        # (a pattern leaves internal topics out, as Java's consumer does by default)
        topics = set(topics) | set(self.opts.topics or ())
        all_tps = {}
        for t in topics:
            parts = self.consumer.partitions_for_topic(t)
            if parts:
                all_tps[t] = list(parts)
        return self.selected(all_tps)

    def earliest(self, tps):
        from kafka import TopicPartition

        if not tps:
            return {}
        res = self.consumer.beginning_offsets([TopicPartition(t, p) for t, p in tps])
        return {(tp.topic, tp.partition): off for tp, off in res.items()}

    def listed_latest(self, tps):
        from kafka import TopicPartition

        if not tps:
            return {}
        res = self.consumer.end_offsets([TopicPartition(t, p) for t, p in tps])
        return {(tp.topic, tp.partition): off for tp, off in res.items()}

    def fetched_high_watermarks(self, listed, timeout_s):
        from kafka import TopicPartition

        if self._probe is None:
            self._probe = self._consumer_cls(**self._probe_conf)
        c = self._probe
        tps = {TopicPartition(t, p): off for (t, p), off in listed.items()}
        # kafka-python fetches only from partitions whose leader its metadata knows, and does not look up a topic
        # it was merely assigned: without this a topic created after the probe started was never fetched from,
        # and every batch waited out `timeout_s` (seen with a pattern subscription picking up a new topic)
        for topic in {tp.topic for tp in tps}:
            c.partitions_for_topic(topic)
        # the assignment is kept between calls: assigning the same partitions again after clearing them left the
        # probe without a fetch response for good (kafka-python 3.0), so every other batch waited out `timeout_s`
        if set(c.assignment()) != set(tps):
            c.assign(list(tps))
        for tp, off in tps.items():
            c.seek(tp, off)
        out: dict[TP, int] = {}
        deadline = time.monotonic() + timeout_s
        while len(out) < len(tps) and time.monotonic() < deadline:
            c.poll(timeout_ms=20, max_records=1000)
            for tp, off in tps.items():
                key = (tp.topic, tp.partition)
                if key in out:
                    continue
                high = c.highwater(tp)
                if high is not None and high >= off:
                    out[key] = high
        if len(out) < len(tps):  # a fresh probe next time (new connections, new metadata)
            c.close()
            self._probe = None
        return out

    def close(self):
        for c in (self._probe, self.consumer):
            if c is not None:
                c.close()
        self._probe = None


def open_meta(opts: SourceOptions, client: str) -> Metadata:
    """The metadata client of `client` ("confluent" or "kafka-python")."""
    return ConfluentMetadata(opts) if client == "confluent" else KafkaPythonMetadata(opts)
