"""A member's events as both instrumentations (kafka-python, confluent-kafka) build them: its identity, polls summed
per interval, hooks guarded so that a failure never reaches the consumer, the leave reasons."""
from __future__ import annotations

import functools
import logging
import socket
import threading
import time

from .emitter import Emitter, now_ms

log = logging.getLogger("rebalance_monitor.instrument")

LEAVE_REASON_CLOSE = "the consumer is being closed"
LEAVE_REASON_POLL_TIMEOUT = "consumer poll timeout has expired."
LEAVE_REASON_UNSUBSCRIBE = "the consumer unsubscribed from all topics"
LEAVE_REASON_OTHER = "the consumer is leaving the group"


def default_host() -> str:
    try:
        return socket.gethostname()
    except Exception:
        return "unknown"


def guarded(fn):
    """Run an instrumentation hook so that nothing it raises reaches the consumer.

    The instance must have an `emitter` attribute (failures are counted as `errors` there)."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - instrumentation must never break the consumer
            try:
                self.emitter.count_error()
                log.debug("instrumentation hook %s failed: %s", fn.__name__, exc, exc_info=True)
            except Exception:
                pass
            return None

    return wrapper


def tp_list(partitions) -> list:
    """[[topic, partition], ...] sorted, from TopicPartition-like objects or pairs."""
    out = set()
    for tp in partitions or ():
        if isinstance(tp, (tuple, list)):
            topic, part = tp[0], tp[1]
        else:
            topic, part = tp.topic, tp.partition
        out.add((str(topic), int(part)))
    return [[t, p] for t, p in sorted(out)]


class Identity:
    """The fields every member event of one consumer carries."""

    def __init__(self, group: str, client_id: str | None, group_instance_id: str | None, host: str | None):
        self.group = group
        self.client_id = client_id
        self.group_instance_id = group_instance_id
        self.host = host

    def event(self, etype: str, member_id: str, ts: int | None = None, **fields) -> dict:
        ev = {"v": 1, "type": etype, "ts": ts if ts is not None else now_ms(), "group": self.group,
              "member_id": member_id or "", "group_instance_id": self.group_instance_id,
              "client_id": self.client_id, "host": self.host}
        ev.update(fields)
        return ev


class PollAggregator:
    """Rate-limits `poll` events: at most one per `interval_s`, with the records of the polls summed.

    A poll that falls inside the interval is held back and flushed by the emitter ticker once the
    interval passed, stamped with the time of the latest poll it covers (so the monitor's "last poll"
    is never older than the real one by more than the interval)."""

    def __init__(self, emitter: Emitter, identity: Identity, member_id_fn, interval_s: float = 1.0):
        self.emitter = emitter
        self.identity = identity
        self.member_id_fn = member_id_fn
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._last_emit = float("-inf")
        self._pending = False
        self._pending_records: int | None = None
        self._pending_ts = 0
        self._pending_member = ""

    @guarded
    def record(self, records: int | None) -> None:
        member_id = self.member_id_fn() or ""
        now = time.monotonic()
        with self._lock:
            if self._pending and self._pending_member != member_id:
                self._emit_locked()  # member id changed: close the previous member's aggregate first
            self._pending = True
            self._pending_member = member_id
            if records is not None:
                self._pending_records = (self._pending_records or 0) + int(records)
            self._pending_ts = now_ms()
            if now - self._last_emit >= self.interval_s:
                self._emit_locked()

    @guarded
    def tick(self) -> None:
        with self._lock:
            if self._pending and time.monotonic() - self._last_emit >= self.interval_s:
                self._emit_locked()

    def flush(self) -> None:
        try:
            with self._lock:
                if self._pending:
                    self._emit_locked()
        except Exception:
            self.emitter.count_error()

    def _emit_locked(self) -> None:
        member = self._pending_member
        self._pending = False
        records = self._pending_records
        self._pending_records = None
        self._last_emit = time.monotonic()
        if not member:
            return  # not in a group yet: nothing the monitor could attribute it to
        fields = {} if records is None else {"records": records}
        self.emitter.emit(self.identity.event("poll", member, ts=self._pending_ts, **fields))
