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

import inspect
import logging
import threading

from ._common import (LEAVE_REASON_CLOSE, LEAVE_REASON_OTHER, LEAVE_REASON_POLL_TIMEOUT,
                      LEAVE_REASON_UNSUBSCRIBE, Identity, PollAggregator, default_host, guarded, tp_list)
from .emitter import Emitter

log = logging.getLogger("rebalance_monitor.instrument")

try:  # kafka-python >= 2.1 names
    from kafka.protocol.consumer import (HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                                         SyncGroupRequest)
except Exception:  # pragma: no cover - other kafka-python layouts
    HeartbeatRequest = JoinGroupRequest = LeaveGroupRequest = SyncGroupRequest = None


def _error_name(code) -> str | None:
    """The Kafka error name for a response error code (None for no error)."""
    if not code:
        return None
    from kafka import errors as Errors

    cls = Errors.for_code(code)
    return getattr(cls, "message", None) or cls.__name__


def _exception_error_name(exc) -> str:
    """A Kafka-style error name for a request that failed without a response."""
    from kafka import errors as Errors

    msg = getattr(exc, "message", None) or getattr(type(exc), "message", None)
    if isinstance(msg, str) and msg.isupper():
        return msg
    if isinstance(exc, (Errors.KafkaTimeoutError, Errors.RequestTimedOutError)):
        return "REQUEST_TIMED_OUT"
    if isinstance(exc, (Errors.KafkaConnectionError, Errors.NodeNotReadyError)):
        return "NETWORK_EXCEPTION"
    return "UNKNOWN_SERVER_ERROR"


def _kind(request) -> str:
    name = type(request).__name__
    for known in ("JoinGroupRequest", "SyncGroupRequest", "HeartbeatRequest", "LeaveGroupRequest",
                  "OffsetCommitRequest"):
        if name.startswith(known):
            return known
    return ""


def _decode_subscription(metadata):
    """(topics, owned [[t, p]], owned_generation) from a JoinGroup protocol's metadata."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    if isinstance(metadata, (bytes, bytearray, memoryview)):
        metadata = ConsumerProtocolSubscription.decode(bytes(metadata))
    topics = sorted(str(t) for t in (getattr(metadata, "topics", None) or ()))
    owned = []
    for item in getattr(metadata, "owned_partitions", None) or ():
        topic = getattr(item, "topic", None)
        parts = getattr(item, "partitions", None)
        if topic is None and isinstance(item, (tuple, list)):
            topic, parts = item[0], item[1]
        owned.extend([topic, p] for p in parts or ())
    generation = getattr(metadata, "generation_id", None)
    if not owned:
        user_data = getattr(metadata, "user_data", None)
        if user_data:
            try:
                from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

                if isinstance(user_data, (bytes, bytearray, memoryview)):
                    user_data = StickyAssignorUserData.decode(bytes(user_data))
                for topic, parts in getattr(user_data, "previous_assignment", None) or ():
                    owned.extend([topic, p] for p in parts)
                generation = getattr(user_data, "generation", generation)
            except Exception:
                pass
    if not isinstance(generation, int) or generation < 0:
        generation = None
    return topics, tp_list(owned), generation


def _decode_assignment(assignment):
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    if isinstance(assignment, (bytes, bytearray, memoryview)):
        if not bytes(assignment):
            return []
        assignment = ConsumerProtocolAssignment.decode(bytes(assignment))
    return tp_list(assignment.partitions())


class _ManagerProxy:
    """Stands in front of the coordinator's network manager; forwards everything."""

    def __init__(self, real, inst: "KafkaPythonInstrumentation"):
        object.__setattr__(self, "_rm_real", real)
        object.__setattr__(self, "_rm_inst", inst)

    def send(self, request, *args, **kwargs):
        future = self._rm_real.send(request, *args, **kwargs)
        self._rm_inst._on_send(request, future)
        return future

    def __getattr__(self, name):
        return getattr(self._rm_real, name)

    def __setattr__(self, name, value):
        setattr(self._rm_real, name, value)


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
        self._leave_sent = False
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
            self._replace(coord, "_manager", _ManagerProxy(manager, self))
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
        if isinstance(listener, _ListenerTap):
            return listener
        try:
            return _ListenerTap(self, listener)
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
        kind = _kind(request)
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
                    topics, owned, owned_gen = _decode_subscription(meta)
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
        if join_err == "MEMBER_ID_REQUIRED":
            return "need to re-join with the given member-id"
        if join_err:
            return f"rebalance failed due to {join_err}"
        if hb_err == "REBALANCE_IN_PROGRESS":
            return "group is already rebalancing"
        if hb_err in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID"):
            return f"member was removed from the group ({hb_err})"
        if not getattr(request, "member_id", ""):
            return "initial join"
        return self._rejoin_reason()

    def _rejoin_reason(self) -> str | None:
        """Why kafka-python's coordinator asked for this rejoin when nothing failed (it sends no reason on the
        wire): the leader's metadata changed since it computed the assignment (partitions added, a topic of
        the group's subscription appeared), or this member's subscription changed. Worded as the Java
        client's KIP-800 reasons."""
        coord = getattr(self.consumer, "_coordinator", None)
        assigned = getattr(coord, "_assignment_snapshot", None)
        current = getattr(coord, "_metadata_snapshot", None)
        if assigned is not None and current is not None and assigned != current:
            def counts(snap) -> str:
                return "{" + ", ".join(f"{t}={len(p or ())}" for t, p in sorted(snap.items())) + "}"

            return (f"cached metadata has changed from {counts(assigned)} at the beginning of the rebalance "
                    f"to {counts(current)}")
        joined = getattr(coord, "_joined_subscription", None)
        sub = getattr(getattr(self.consumer, "_subscription", None), "subscription", None)
        if joined is not None and sub is not None and set(joined) != set(sub):
            return f"subscription has changed from {sorted(joined)} to {sorted(sub)}"
        return None

    @guarded
    def _on_join_response(self, response) -> None:
        err = _error_name(getattr(response, "error_code", 0))
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
                self._last_join_error = _error_name(response.error_code)
            return
        with self._state_lock:
            joined = dict(self._join_result)
        generation = getattr(request, "generation_id", joined.get("generation", -1))
        leader = joined.get("leader") if joined.get("generation") == generation else None
        protocol = getattr(response, "protocol_name", None) or getattr(request, "protocol_name", None) \
            or joined.get("protocol")
        try:
            assignment = _decode_assignment(getattr(response, "assignment", b""))
        except Exception:
            self.emitter.count_error()
            return
        self.emitter.emit(self.identity.event(
            "sync", getattr(request, "member_id", ""), generation=int(generation), protocol=protocol,
            leader=leader or None, assignment=assignment))

    @guarded
    def _on_heartbeat_response(self, request, response) -> None:
        err = _error_name(getattr(response, "error_code", 0))
        if err:
            with self._state_lock:
                self._last_heartbeat_error = err
        self.emitter.emit(self.identity.event(
            "heartbeat", getattr(request, "member_id", ""), generation=int(getattr(request, "generation_id", -1)),
            error=err))

    @guarded
    def _on_heartbeat_failure(self, request, exc) -> None:
        self.emitter.emit(self.identity.event(
            "heartbeat", getattr(request, "member_id", ""), generation=int(getattr(request, "generation_id", -1)),
            error=_exception_error_name(exc)))

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
            reason = self._leave_reason()
        self._polls.flush()
        ev = self.identity.event("leave", member_id, reason=reason)
        ev["group_instance_id"] = gid
        self.emitter.emit(ev)

    def _leave_reason(self) -> str:
        if self._closing:
            return LEAVE_REASON_CLOSE
        if self._unsubscribing:
            return LEAVE_REASON_UNSUBSCRIBE
        coord = getattr(self.consumer, "_coordinator", None)
        hb = getattr(coord, "heartbeat", None)
        try:
            if hb is not None and hb.poll_timeout_expired():
                return LEAVE_REASON_POLL_TIMEOUT
        except Exception:
            pass
        return LEAVE_REASON_OTHER

    @guarded
    def _on_commit_response(self, request, response) -> None:
        sent = {}
        for topic in getattr(request, "topics", None) or ():
            tname = getattr(topic, "name", None)
            for part in getattr(topic, "partitions", None) or ():
                sent[(tname, part.partition_index)] = part.committed_offset
        failed = set()
        for topic_entry in getattr(response, "topics", None) or ():
            try:
                tname, parts = topic_entry[0], topic_entry[1]
            except Exception:
                tname = getattr(topic_entry, "name", None)
                parts = getattr(topic_entry, "partitions", ())
            for part in parts or ():
                try:
                    pidx, code = part[0], part[1]
                except Exception:
                    pidx, code = getattr(part, "partition_index", None), getattr(part, "error_code", 0)
                if code:
                    failed.add((tname, pidx))
        offsets = [[t, p, int(o)] for (t, p), o in sorted(sent.items()) if (t, p) not in failed]
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


def _make_listener_base():
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    return ConsumerRebalanceListener


class _ListenerTap(_make_listener_base()):
    """Emits `revoked` / `lost`, then delegates to the user's listener (sync or async)."""

    def __init__(self, inst: KafkaPythonInstrumentation, inner):
        self._inst = inst
        self._inner = inner
        for method in ("on_partitions_revoked", "on_partitions_assigned", "on_partitions_lost"):
            target = getattr(inner, method, None) if inner is not None else None
            if method == "on_partitions_lost" and target is None and inner is not None:
                target = getattr(inner, "on_partitions_revoked", None)
            setattr(self, method, self._wrap(method, target))

    def _wrap(self, method, target):
        inst = self._inst
        etype = {"on_partitions_revoked": "revoked", "on_partitions_lost": "lost"}.get(method)

        def before(partitions):
            if etype:
                inst._on_partitions(etype, partitions)

        if target is not None and inspect.iscoroutinefunction(target):
            async def async_hook(partitions):
                before(partitions)
                await target(partitions)
            return async_hook

        def hook(partitions):
            before(partitions)
            if target is not None:
                target(partitions)
        return hook

    # the abstract methods are replaced per instance in __init__
    def on_partitions_revoked(self, revoked):  # pragma: no cover
        pass

    def on_partitions_assigned(self, assigned):  # pragma: no cover
        pass


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
