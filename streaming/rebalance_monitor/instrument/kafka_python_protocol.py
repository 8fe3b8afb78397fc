"""What kafka-python's group requests and responses say, read for the instrumentation (kafka_python.py):
the request kinds it hooks, error names, the JoinGroup subscription and SyncGroup assignment decoded, and the
proxy in front of the coordinator's network manager that shows it every request."""
from __future__ import annotations

from collections.abc import Callable

from .member_events import tp_list


def error_name(code) -> str | None:
    """The Kafka error name for a response error code (None for no error)."""
    if not code:
        return None
    from kafka import errors as Errors

    cls = Errors.for_code(code)
    return getattr(cls, "message", None) or cls.__name__


def exception_error_name(exc) -> str:
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


def request_kind(request) -> str:
    name = type(request).__name__
    for known in ("JoinGroupRequest", "SyncGroupRequest", "HeartbeatRequest", "LeaveGroupRequest",
                  "OffsetCommitRequest"):
        if name.startswith(known):
            return known
    return ""


def decode_subscription(metadata):
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


def decode_assignment(assignment):
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    if isinstance(assignment, (bytes, bytearray, memoryview)):
        if not bytes(assignment):
            return []
        assignment = ConsumerProtocolAssignment.decode(bytes(assignment))
    return tp_list(assignment.partitions())


class ManagerProxy:
    """Stands in front of the coordinator's network manager; forwards everything, and shows each request and its
    future to `on_send` (the instrumentation's)."""

    def __init__(self, real, on_send: Callable[[object, object], None]):
        object.__setattr__(self, "_rm_real", real)
        object.__setattr__(self, "_rm_on_send", on_send)

    def send(self, request, *args, **kwargs):
        future = self._rm_real.send(request, *args, **kwargs)
        self._rm_on_send(request, future)
        return future

    def __getattr__(self, name):
        return getattr(self._rm_real, name)

    def __setattr__(self, name, value):
        setattr(self._rm_real, name, value)


def accepted_offsets(request, response) -> list[list]:
    """The offsets of an OffsetCommit request that its response accepted: [[topic, partition, offset], ...]."""
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
    return offsets
