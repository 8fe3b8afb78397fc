"""Instrumentation of kafka-python's `KafkaConsumer` (written against kafka-python 3.0.x).

How it hooks in (all on the one consumer instance; nothing global is patched):

* The group coordinator (`consumer._coordinator`) sends every group request through its network
  manager (`coordinator._manager.send(request, ...)`), from the consumer's IO thread. The
  instrumentation puts a thin proxy in front of that manager which looks at each request and attaches
  a callback to its response future, so it sees exactly what went over the wire:
  - JoinGroup request            -> `join` (member_id "" on the first attempt, protocols, topics,
                                    owned partitions, session/rebalance timeouts, heartbeat interval)
  - JoinGroup response           -> remembered (generation, leader, protocol, errors such as
                                    MEMBER_ID_REQUIRED) for the `sync` and the next `join` reason
  - SyncGroup response (no error) -> `sync` (generation, protocol, leader, this member's assignment)
  - Heartbeat response / failure -> `heartbeat` (error: null or the Kafka error name)
  - LeaveGroup request           -> `leave` (reason: the request's reason if any, otherwise what
                                    caused it: close(), the poll-timeout leave of the heartbeat loop,
                                    unsubscribe())
  - OffsetCommit response        -> `commit` (the offsets the broker accepted)
* `consumer.poll` (also used by iteration) -> `poll`, rate-limited (at most one per second per
  member by default, records summed).
* `consumer.close` / `consumer.unsubscribe` -> remembered, to give the leave its reason.
* The rebalance listener (installed, or wrapped around the user's) -> `revoked` / `lost`.

Every hook is guarded: a failure is counted in `emitter.stats()["errors"]` and never reaches the
consumer. If the internals move in a future kafka-python release, `instrument_consumer` still
attaches whatever hooks it can and reports the missing ones in `KafkaPythonInstrumentation.missing`.
"""
from __future__ import annotations

import logging
import threading

from .member_events import Identity, PollAggregator, default_host, guarded, tp_list
from .emitter import Emitter
from .kafka_python_listener import ListenerTap
from .kafka_python_reasons import join_reason, leave_reason
from .kafka_python_protocol import (ManagerProxy, accepted_offsets, decode_assignment, decode_subscription,
                                    error_name, exception_error_name, request_kind)

log = logging.getLogger("rebalance_monitor.instrument")

try:  # kafka-python >= 2.1 names
    from kafka.protocol.consumer import (HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                                         SyncGroupRequest)
except Exception:  # pragma: no cover - other kafka-python layouts
    HeartbeatRequest = JoinGroupRequest = LeaveGroupRequest = SyncGroupRequest = None


class KafkaPythonInstrumentation:
    """The hooks attached to one `KafkaConsumer`; `detach()` removes them."""

    def __init__(self, consumer, emitter: Emitter, *, poll_interval_s: float = 1.0,
                 host: str | None = None, heartbeats: bool = True):
        self.consumer = consumer
        self.emitter = emitter
        self.heartbeats = heartbeats
        self.missing: list[str] = []
        cfg = getattr(consumer, "config", {}) or {}
        self.identity = Identity(group=cfg.get("group_id") or "", client_id=cfg.get("client_id"),
                                 group_instance_id=cfg.get("group_instance_id"),
                                 host=host if host is not None else default_host())
        self.heartbeat_interval_ms = cfg.get("heartbeat_interval_ms")
        self._state_lock = threading.Lock()
        self._closing = False
        self._unsubscribing = False
        # member ids whose leave was emitted: a heartbeat or a SyncGroup sent before the leave and answered (or
        # failed) after it is not emitted, since the member's membership had ended (the monitor would only count
        # it as stale, and the events would no longer tell the client's own order)
        self._left: set[str] = set()
        self._last_join_error: str | None = None
        self._last_heartbeat_error: str | None = None
        self._join_result: dict = {}
        self._polls = PollAggregator(emitter, self.identity, self.member_id, interval_s=poll_interval_s)
        self._originals: dict = {}
        self._attach()

    # --- public ----------------------------------------------------------------------------------
    def member_id(self) -> str:
        coord = getattr(self.consumer, "_coordinator", None)
        gen = getattr(coord, "_generation", None)
        return getattr(gen, "member_id", "") or ""

    def generation(self) -> int:
        coord = getattr(self.consumer, "_coordinator", None)
        gen = getattr(coord, "_generation", None)
        return getattr(gen, "generation_id", -1)

    def detach(self) -> None:
        """Remove every hook (the consumer goes on unobserved)."""
        self._polls.flush()
        self.emitter.remove_ticker(self._polls.tick)
        for (obj, name), value in self._originals.items():
            try:
                if value is _ABSENT:
                    delattr(obj, name)
                else:
                    setattr(obj, name, value)
            except Exception:
                pass
        self._originals.clear()

    # --- attaching -------------------------------------------------------------------------------
    def _replace(self, obj, name, value) -> None:
        key = (obj, name)
        if key not in self._originals:
            self._originals[key] = obj.__dict__.get(name, _ABSENT) if hasattr(obj, "__dict__") else _ABSENT
        setattr(obj, name, value)

    def _attach(self) -> None:
        consumer = self.consumer
        coord = getattr(consumer, "_coordinator", None)
        manager = getattr(coord, "_manager", None)
        if coord is None or manager is None or not hasattr(manager, "send"):
            self.missing.append("coordinator network manager (join/sync/heartbeat/leave/commit)")
        else:
            self._replace(coord, "_manager", ManagerProxy(manager, self._on_send))
            self.heartbeat_interval_ms = coord.config.get("heartbeat_interval_ms", self.heartbeat_interval_ms)

        orig_poll = consumer.poll
        inst = self

        def poll(*args, **kwargs):
            result = orig_poll(*args, **kwargs)
            inst._on_poll(result)
            return result

        self._replace(consumer, "poll", poll)

        orig_close = consumer.close

        def close(*args, **kwargs):
            inst._closing = True
            try:
                return orig_close(*args, **kwargs)
            finally:
                inst._polls.flush()
                inst.emitter.remove_ticker(inst._polls.tick)

        self._replace(consumer, "close", close)

        orig_unsubscribe = consumer.unsubscribe

        def unsubscribe(*args, **kwargs):
            inst._unsubscribing = True
            try:
                return orig_unsubscribe(*args, **kwargs)
            finally:
                inst._unsubscribing = False

        self._replace(consumer, "unsubscribe", unsubscribe)

        orig_subscribe = consumer.subscribe

        def subscribe(topics=(), pattern=None, listener=None):
            return orig_subscribe(topics=topics, pattern=pattern, listener=inst._tap(listener))

        self._replace(consumer, "subscribe", subscribe)
        sub = getattr(consumer, "_subscription", None)
        if sub is not None and hasattr(sub, "rebalance_listener"):
            if getattr(sub, "subscription", None) is not None:
                sub.rebalance_listener = self._tap(sub.rebalance_listener)
        else:
            self.missing.append("rebalance listener (revoked/lost)")
        self.emitter.add_ticker(self._polls.tick)

    def _tap(self, listener):
        """A ConsumerRebalanceListener that emits revoked/lost and then calls `listener` (if any)."""
        if isinstance(listener, ListenerTap):
            return listener
        try:
            return ListenerTap(self._on_partitions, listener)
        except Exception:
            self.emitter.count_error()
            return listener

    # --- hooks -----------------------------------------------------------------------------------
    @guarded
    def _on_poll(self, result) -> None:
        count = None
        if isinstance(result, dict):
            count = sum(len(v) for v in result.values())
        self._polls.record(count)

    @guarded
    def _on_send(self, request, future) -> None:
        kind = request_kind(request)
        if not kind or getattr(request, "group_id", self.identity.group) != self.identity.group:
            return
        if kind == "JoinGroupRequest":
            self._emit_join(request)
            future.add_callback(self._on_join_response)
        elif kind == "SyncGroupRequest":
            future.add_callback(self._on_sync_response, request)
        elif kind == "HeartbeatRequest":
            if self.heartbeats:
                future.add_callback(self._on_heartbeat_response, request)
                future.add_errback(self._on_heartbeat_failure, request)
        elif kind == "LeaveGroupRequest":
            self._emit_leave(request)
        elif kind == "OffsetCommitRequest":
            future.add_callback(self._on_commit_response, request)

    def _emit_join(self, request) -> None:
        protocols, topics, owned, owned_gen = [], [], [], None
        for i, proto in enumerate(getattr(request, "protocols", None) or ()):
            name = getattr(proto, "name", None)
            if name is None and isinstance(proto, (tuple, list)):
                name = proto[0]
            protocols.append(str(name))
            if i == 0:
                meta = getattr(proto, "metadata", None)
                if meta is None and isinstance(proto, (tuple, list)):
                    meta = proto[1]
                try:
                    topics, owned, owned_gen = decode_subscription(meta)
                except Exception:
                    self.emitter.count_error()
        if not topics:
            sub = getattr(getattr(self.consumer, "_subscription", None), "subscription", None) or ()
            topics = sorted(sub)
        if not owned:
            try:
                sub = self.consumer._subscription
                owned = tp_list(sub.assigned_partitions())
                if owned:
                    gen = self.generation()
                    owned_gen = gen if gen >= 0 else None
            except Exception:
                owned = []
        reason = getattr(request, "reason", None)
        if not reason:
            reason = self._join_reason(request)
        fields = {
            "protocols": protocols, "topics": list(topics), "owned": owned,
            "session_timeout_ms": getattr(request, "session_timeout_ms", None),
            "rebalance_timeout_ms": getattr(request, "rebalance_timeout_ms", None),
            "heartbeat_interval_ms": self.heartbeat_interval_ms,
            "reason": reason,
        }
        if owned_gen is not None and owned:
            fields["generation"] = owned_gen
        gid = getattr(request, "group_instance_id", None)
        ev = self.identity.event("join", getattr(request, "member_id", "") or "", **fields)
        if gid is not None:
            ev["group_instance_id"] = gid
        self.emitter.emit(ev)

    def _join_reason(self, request) -> str | None:
        """A KIP-800-style reason for this JoinGroup, from what the instrumentation saw before it."""
        with self._state_lock:
            join_err, hb_err = self._last_join_error, self._last_heartbeat_error
            self._last_join_error = None
            self._last_heartbeat_error = None
        return join_reason(self.consumer, request, join_err, hb_err)

    @guarded
    def _on_join_response(self, response) -> None:
        err = error_name(getattr(response, "error_code", 0))
        with self._state_lock:
            self._last_join_error = err
            if err is None:
                self._join_result = {
                    "generation": getattr(response, "generation_id", -1),
                    "leader": getattr(response, "leader", None),
                    "protocol": getattr(response, "protocol_name", None),
                    "member_id": getattr(response, "member_id", ""),
                }

    @guarded
    def _on_sync_response(self, request, response) -> None:
        if getattr(response, "error_code", 0):
            with self._state_lock:
                self._last_join_error = error_name(response.error_code)
            return
        with self._state_lock:
            joined = dict(self._join_result)
        generation = getattr(request, "generation_id", joined.get("generation", -1))
        leader = joined.get("leader") if joined.get("generation") == generation else None
        protocol = getattr(response, "protocol_name", None) or getattr(request, "protocol_name", None) \
            or joined.get("protocol")
        try:
            assignment = decode_assignment(getattr(response, "assignment", b""))
        except Exception:
            self.emitter.count_error()
            return
        member = getattr(request, "member_id", "") or ""
        with self._state_lock:  # (a sync sent before the leave and answered after it: as a heartbeat's)
            if member in self._left:
                return
            self.emitter.emit(self.identity.event(
                "sync", member, generation=int(generation), protocol=protocol,
                leader=leader or None, assignment=assignment))

    @guarded
    def _on_heartbeat_response(self, request, response) -> None:
        self._emit_heartbeat(request, error_name(getattr(response, "error_code", 0)), response=True)

    @guarded
    def _on_heartbeat_failure(self, request, exc) -> None:
        self._emit_heartbeat(request, exception_error_name(exc), response=False)

    def _emit_heartbeat(self, request, err: str | None, response: bool) -> None:
        member = getattr(request, "member_id", "") or ""
        with self._state_lock:  # (with the leave's: a heartbeat is queued before it, or not at all)
            if member in self._left:
                return
            if err and response:
                self._last_heartbeat_error = err
            self.emitter.emit(self.identity.event(
                "heartbeat", member, generation=int(getattr(request, "generation_id", -1)), error=err))

    def _emit_leave(self, request) -> None:
        members = getattr(request, "members", None) or ()
        member_id = getattr(request, "member_id", "") or ""
        reason = None
        gid = self.identity.group_instance_id
        if members:
            first = members[0]
            member_id = getattr(first, "member_id", member_id) or member_id
            reason = getattr(first, "reason", None)
            gid = getattr(first, "group_instance_id", gid)
        if not reason:
            reason = leave_reason(self.consumer, self._closing, self._unsubscribing)
        self._polls.flush()
        ev = self.identity.event("leave", member_id, reason=reason)
        ev["group_instance_id"] = gid
        with self._state_lock:
            if len(self._left) >= 64:  # (a member id is never reused: the oldest matter least)
                self._left.clear()
            self._left.add(member_id)
            self.emitter.emit(ev)

    @guarded
    def _on_commit_response(self, request, response) -> None:
        offsets = accepted_offsets(request, response)
        if not offsets:
            return
        generation = getattr(request, "generation_id_or_member_epoch", None)
        if generation is None:
            generation = getattr(request, "generation_id", None)
        fields = {"offsets": offsets}
        if isinstance(generation, int) and generation >= 0:
            fields["generation"] = generation
        self.emitter.emit(self.identity.event("commit", getattr(request, "member_id", "") or "", **fields))

    @guarded
    def _on_partitions(self, etype: str, partitions) -> None:
        parts = tp_list(partitions)
        if not parts:
            return
        gen = self.generation()
        fields = {"partitions": parts}
        if gen >= 0:
            fields["generation"] = gen
        member = self.member_id() or (self._join_result.get("member_id") or "")
        self.emitter.emit(self.identity.event(etype, member, **fields))


_ABSENT = object()


def instrument_consumer(consumer, emitter: Emitter, *, poll_interval_s: float = 1.0,
                        host: str | None = None, heartbeats: bool = True) -> KafkaPythonInstrumentation:
    """Attach the rebalance-monitor hooks to a kafka-python `KafkaConsumer` (before its first poll).

    Returns the instrumentation handle (`.detach()`, `.missing`). Never raises because of the
    consumer's internals: a hook that cannot be attached is listed in `.missing`."""
    return KafkaPythonInstrumentation(consumer, emitter, poll_interval_s=poll_interval_s, host=host,
                                      heartbeats=heartbeats)


def _kafka_consumer_class():
    from kafka import KafkaConsumer

    return KafkaConsumer


class InstrumentedKafkaConsumer(_kafka_consumer_class()):
    """A `KafkaConsumer` that instruments itself: `InstrumentedKafkaConsumer(*topics, emitter=e, **configs)`."""

    def __init__(self, *topics, emitter: Emitter, instrument_options: dict | None = None, **configs):
        super().__init__(**configs)
        self.instrumentation = instrument_consumer(self, emitter, **(instrument_options or {}))
        if topics:
            self.subscribe(topics=list(topics))
