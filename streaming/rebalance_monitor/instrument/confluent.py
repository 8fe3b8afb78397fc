"""Instrumentation of confluent-kafka's `Consumer` (librdkafka).

librdkafka runs the group protocol in its own C threads and exposes only part of it, so this
instrumentation emits what can be known from the public Python API:

| event       | source                                                                        |
| ----------- | ----------------------------------------------------------------------------- |
| `join`      | `subscribe()` (first join, member_id ""), and after each `on_revoke` / `on_lost` |
|             | (librdkafka re-joins right after); `reason` from the statistics' `rebalance_reason` |
| `sync`      | `on_assign`: member id (`memberid()`), generation (decoded from                 |
|             | `consumer_group_metadata()`), assignment; `leader` is null (not exposed),       |
|             | `protocol` only when one assignment strategy is configured                     |
| `revoked`   | `on_revoke`                                                                   |
| `lost`      | `on_lost`                                                                     |
| `poll`      | `poll()` / `consume()`, rate-limited like the kafka-python instrumentation     |
| `commit`    | `commit()` results and the `on_commit` callback (auto-commits too)             |
| `leave`     | `close()` (dynamic members), and the poll-timeout leave reported by `poll()` as |
|             | `_MAX_POLL_EXCEEDED` (stamped last poll + max.poll.interval.ms)                 |
| `heartbeat` | KIP-848 members: liveness, from the emitter's thread (see below)               |

Not available: per-heartbeat results (librdkafka does not surface heartbeats), the group leader,
and the exact moment a JoinGroup is sent (only the statistics callback's `join_state`, sampled every
`statistics.interval.ms`). `stats()` of the instrumentation returns the last cgrp statistics.

Liveness (KIP-848): librdkafka heartbeats from its own thread whether or not the application polls, and
nothing of it reaches Python but the statistics, which (like the callbacks) are served only inside
`poll()`. So that a crash is seen as the broker sees it, the instrumentation sends its own `heartbeat`
(error null, generation = the member epoch last seen) from the emitter's background thread while the
consumer is a member (a member id, not closed, and the last statistics, if any, say the group handler is
`up`): a process that dies silences them, a slow poll loop does not (librdkafka keeps heartbeating too, and
its poll-timeout leave is reported as `leave`). `session_timeout_ms` is the broker's
`group.consumer.session.timeout.ms` (KIP-848 sessions are the broker's; the client's `session.timeout.ms`
does not apply; default 45000, Kafka's). `liveness=False` turns these heartbeats off.
"""
from __future__ import annotations

import json
import logging
import sys
import threading
import time

import confluent_kafka

from .member_events import (LEAVE_REASON_CLOSE, LEAVE_REASON_POLL_TIMEOUT, Identity, PollAggregator,
                      default_host, guarded, tp_list)
from .emitter import Emitter, now_ms

log = logging.getLogger("rebalance_monitor.instrument")


def decode_group_metadata(blob) -> dict | None:
    """Decode librdkafka's serialised consumer group metadata (`consumer_group_metadata()`).

    Layout (librdkafka 1.4+): b"CGMDv2:", int32 generation id (host byte order), group id NUL,
    member id NUL, a flag byte (1 = no group instance id), group instance id [NUL]. Returns None if the
    blob does not have this shape."""
    try:
        data = bytes(blob)
    except Exception:
        return None
    magic = b"CGMDv2:"
    if not data.startswith(magic) or len(data) < len(magic) + 5:
        return None
    pos = len(magic)
    generation = int.from_bytes(data[pos:pos + 4], sys.byteorder, signed=True)
    pos += 4
    try:
        end = data.index(b"\x00", pos)
        group_id = data[pos:end].decode("utf-8")
        pos = end + 1
        end = data.index(b"\x00", pos)
        member_id = data[pos:end].decode("utf-8")
        pos = end + 1
    except (ValueError, UnicodeDecodeError):
        return None
    instance_id = None
    if pos < len(data) and data[pos] == 0:
        rest = data[pos + 1:]
        instance_id = rest.split(b"\x00", 1)[0].decode("utf-8", "replace") or None
    return {"generation": generation, "group_id": group_id, "member_id": member_id,
            "group_instance_id": instance_id}


class InstrumentedConfluentConsumer(confluent_kafka.Consumer):
    """`confluent_kafka.Consumer` that emits rebalance-monitor events to `emitter`.

    `InstrumentedConfluentConsumer(config, emitter, poll_interval_s=1.0, host=None,
    stats_interval_ms=1000, session_timeout_ms=None, liveness=None)`. `config` is the usual librdkafka
    configuration; a user `stats_cb` / `on_commit` is still called. `session_timeout_ms` (KIP-848): the
    broker's group.consumer.session.timeout.ms; `liveness` (default: on for KIP-848): the liveness
    heartbeats of the module docstring."""

    def __init__(self, config: dict, emitter: Emitter, *, poll_interval_s: float = 1.0,
                 host: str | None = None, stats_interval_ms: int = 1000, session_timeout_ms: int | None = None,
                 liveness: bool | None = None):
        cfg = dict(config)
        self.emitter = emitter
        self._user_stats_cb = cfg.pop("stats_cb", None)
        self._user_on_commit = cfg.pop("on_commit", None)
        self.identity = Identity(group=str(cfg.get("group.id", "")), client_id=cfg.get("client.id", "rdkafka"),
                                 group_instance_id=cfg.get("group.instance.id"),
                                 host=host if host is not None else default_host())
        self._consumer_protocol = str(cfg.get("group.protocol", "classic")).lower() == "consumer"
        if self._consumer_protocol:
            # KIP-848: the broker assigns (group.remote.assignor, default uniform); the client declares none
            remote = cfg.get("group.remote.assignor")
            self._protocols = [str(remote)] if remote else []
        else:
            strategies = str(cfg.get("partition.assignment.strategy", "range,roundrobin"))
            self._protocols = [s.strip() for s in strategies.split(",") if s.strip()]
        # incremental callbacks (KIP-848 and cooperative-sticky): on_assign / on_revoke name what is added or
        # taken away, not the whole assignment
        self._incremental = self._consumer_protocol or self._protocols == ["cooperative-sticky"]
        self._session_timeout_ms = int(cfg.get("session.timeout.ms", 45000) if session_timeout_ms is None
                                       else session_timeout_ms)
        self._max_poll_interval_ms = int(cfg.get("max.poll.interval.ms", 300000))
        self._heartbeat_interval_ms = int(cfg.get("heartbeat.interval.ms", 3000))
        self._topics: list[str] = []
        self._last_stats: dict = {}
        self._last_poll_wall = 0
        self._member_cache = ""
        self._generation_cache = -1
        self._closed_once = False
        self._lock = threading.Lock()
        cfg["stats_cb"] = self._on_stats
        cfg["on_commit"] = self._on_commit
        cfg.setdefault("statistics.interval.ms", stats_interval_ms)
        self._polls = PollAggregator(emitter, self.identity, self._member_id, interval_s=poll_interval_s)
        super().__init__(cfg)
        emitter.add_ticker(self._polls.tick)
        self._liveness = self._consumer_protocol if liveness is None else bool(liveness)
        # at least three beats per session, like a heartbeat.interval.ms of a third of it
        self._beat_every_s = min(self._heartbeat_interval_ms, self._session_timeout_ms // 3) / 1000.0
        self._last_beat = float("-inf")
        if self._liveness:
            emitter.add_ticker(self._beat)

    # --- identity ---------------------------------------------------------------------------------
    def _member_id(self) -> str:
        return self._member_cache

    def _refresh_member(self) -> dict:
        if self._closed_once:
            # Inside close(): librdkafka serves callbacks (an offset commit's) on this thread while it closes,
            # and memberid() / consumer_group_metadata() would wait for an answer from the closing group
            # handler, holding the GIL: the whole process would hang. What was last seen is used instead.
            return {"member_id": self._member_cache, "generation": self._generation_cache}
        meta = None
        try:
            meta = decode_group_metadata(self.consumer_group_metadata())
        except Exception:
            meta = None
        member = ""
        try:
            member = super().memberid() or ""
        except Exception:
            member = (meta or {}).get("member_id", "") or ""
        if member:
            self._member_cache = member
        generation = (meta or {}).get("generation", -1)
        if generation >= 0:
            self._generation_cache = generation
        return {"member_id": member or self._member_cache, "generation": generation}

    def rebalance_stats(self) -> dict:
        """The last `cgrp` statistics librdkafka reported (state, join_state, rebalance_cnt, ...)."""
        with self._lock:
            return dict(self._last_stats)

    @guarded
    def _beat(self) -> None:
        """A liveness `heartbeat` (emitter thread): see the module docstring."""
        if self._closed_once or not self._member_cache:
            return
        now = time.monotonic()
        if now - self._last_beat < self._beat_every_s:
            return
        state = self.rebalance_stats().get("state")
        if state is not None and state != "up":  # librdkafka has no coordinator: it does not heartbeat either
            return
        self._last_beat = now
        self.emitter.emit(self.identity.event("heartbeat", self._member_cache,
                                              generation=int(self._generation_cache), error=None))

    # --- hooks ------------------------------------------------------------------------------------
    @guarded
    def _emit_join(self, member_id: str, owned=(), generation: int | None = None) -> None:
        reason = (self.rebalance_stats().get("rebalance_reason") or None) if member_id else "initial join"
        fields = {"protocols": list(self._protocols), "topics": list(self._topics), "owned": tp_list(owned),
                  "session_timeout_ms": self._session_timeout_ms,
                  "rebalance_timeout_ms": self._max_poll_interval_ms,
                  "heartbeat_interval_ms": self._heartbeat_interval_ms, "reason": reason}
        if owned and generation is not None and generation >= 0:
            fields["generation"] = generation
        if self._consumer_protocol:
            fields["group_protocol"] = "consumer"
        self.emitter.emit(self.identity.event("join", member_id, **fields))

    @guarded
    def _on_stats(self, stats_json) -> None:
        try:
            cgrp = json.loads(stats_json).get("cgrp") or {}
            with self._lock:
                self._last_stats = cgrp
        finally:
            if self._user_stats_cb is not None:
                self._user_stats_cb(stats_json)

    def _on_commit(self, err, partitions) -> None:
        try:
            self._emit_commit(err, partitions)
        finally:
            if self._user_on_commit is not None:
                self._user_on_commit(err, partitions)

    @guarded
    def _emit_commit(self, err, partitions) -> None:
        if err is not None or not partitions:
            return
        offsets = sorted({(p.topic, p.partition, p.offset) for p in partitions
                          if p.error is None and p.offset is not None and p.offset >= 0})
        if not offsets:
            return
        info = self._refresh_member()
        fields = {"offsets": [list(o) for o in offsets]}
        if info["generation"] >= 0:
            fields["generation"] = info["generation"]
        self.emitter.emit(self.identity.event("commit", info["member_id"], **fields))

    @guarded
    def _emit_assign(self, partitions) -> None:
        info = self._refresh_member()
        protocol = self._protocols[0] if len(self._protocols) == 1 else None
        if self._incremental and not partitions and self._consumer_protocol:
            return  # nothing added (the callback after a revocation): the revocation's sync said it already
        if self._incremental:
            # the whole assignment once this increment is added (the library assigns it after the callback)
            partitions = set(self._current()) | {(p.topic, p.partition) for p in partitions}
            partitions = [confluent_kafka.TopicPartition(t, p) for t, p in sorted(partitions)]
        self.emitter.emit(self.identity.event(
            "sync", info["member_id"], generation=int(info["generation"]), protocol=protocol, leader=None,
            assignment=tp_list(partitions)))

    def _current(self) -> list[tuple[str, int]]:
        try:
            return [(p.topic, p.partition) for p in super().assignment()]
        except Exception:
            return []

    @guarded
    def _emit_sync_now(self, info: dict, partitions) -> None:
        protocol = self._protocols[0] if len(self._protocols) == 1 else None
        self.emitter.emit(self.identity.event(
            "sync", info.get("member_id", self._member_cache), generation=int(info.get("generation", -1)),
            protocol=protocol, leader=None, assignment=tp_list(partitions)))

    @guarded
    def _emit_partitions(self, etype: str, partitions) -> dict:
        info = self._refresh_member()
        parts = tp_list(partitions)
        if parts:
            fields = {"partitions": parts}
            if info["generation"] >= 0:
                fields["generation"] = info["generation"]
            self.emitter.emit(self.identity.event(etype, info["member_id"], **fields))
        return info

    def _after_revoke(self, etype: str, partitions) -> None:
        info = self._emit_partitions(etype, partitions) or {}
        if self._consumer_protocol:
            # KIP-848: no JoinGroup follows; the member reconciles through its heartbeats. What it keeps is
            # its whole assignment now (a sync of the same member epoch until the next one).
            gone = {(p.topic, p.partition) for p in partitions}
            keep = [confluent_kafka.TopicPartition(t, p) for t, p in self._current() if (t, p) not in gone]
            if etype == "revoked" and not self._closed_once:
                self._emit_sync_now(info, keep)
            return
        if not self._closed_once:
            # librdkafka re-joins right after the revoke/lost callback returns
            self._emit_join(info.get("member_id", self._member_cache), owned=() if etype == "lost" else (),
                            generation=info.get("generation"))

    @guarded
    def _on_poll_result(self, records: int, msgs) -> None:
        self._polls.record(records)
        for msg in msgs:
            err = msg.error() if msg is not None else None
            if err is not None and err.code() == confluent_kafka.KafkaError._MAX_POLL_EXCEEDED:
                ts = now_ms()
                if self._last_poll_wall:
                    ts = min(ts, self._last_poll_wall + self._max_poll_interval_ms)
                self.emitter.emit(self.identity.event("leave", self._member_cache, ts=ts,
                                                      reason=LEAVE_REASON_POLL_TIMEOUT))
        self._last_poll_wall = now_ms()

    # --- consumer API -----------------------------------------------------------------------------
    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None, **kwargs):
        self._topics = sorted(set(topics))
        inst = self

        def assign_cb(consumer, partitions):
            inst._emit_assign(partitions)
            if on_assign is not None:
                on_assign(consumer, partitions)

        def revoke_cb(consumer, partitions):
            try:
                if on_revoke is not None:
                    on_revoke(consumer, partitions)
            finally:
                inst._after_revoke("revoked", partitions)

        def lost_cb(consumer, partitions):
            try:
                if on_lost is not None:
                    on_lost(consumer, partitions)
                elif on_revoke is not None:
                    on_revoke(consumer, partitions)
            finally:
                inst._after_revoke("lost", partitions)

        result = super().subscribe(topics, on_assign=assign_cb, on_revoke=revoke_cb, on_lost=lost_cb, **kwargs)
        self._emit_join(self._member_cache)
        return result

    def poll(self, *args, **kwargs):
        msg = super().poll(*args, **kwargs)
        self._on_poll_result(0 if msg is None or msg.error() is not None else 1, [msg] if msg is not None else [])
        return msg

    def consume(self, *args, **kwargs):
        msgs = super().consume(*args, **kwargs)
        self._on_poll_result(sum(1 for m in msgs if m.error() is None), msgs)
        return msgs

    def commit(self, *args, **kwargs):
        result = super().commit(*args, **kwargs)
        if isinstance(result, list):
            self._emit_commit(None, result)
        return result

    def close(self, *args, **kwargs):
        self._closed_once = True
        member = self._member_cache
        try:
            return super().close(*args, **kwargs)
        finally:
            self._emit_close_leave(member)

    @guarded
    def _emit_close_leave(self, member: str) -> None:
        self._polls.flush()
        self.emitter.remove_ticker(self._polls.tick)
        self.emitter.remove_ticker(self._beat)
        if member and self.identity.group_instance_id is None:
            self.emitter.emit(self.identity.event("leave", member, reason=LEAVE_REASON_CLOSE))


def instrumented_confluent_consumer(config: dict, emitter: Emitter, **options) -> InstrumentedConfluentConsumer:
    """Shorthand for `InstrumentedConfluentConsumer(config, emitter, **options)`."""
    return InstrumentedConfluentConsumer(config, emitter, **options)
