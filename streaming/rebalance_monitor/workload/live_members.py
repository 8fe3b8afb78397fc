"""Real, instrumented consumer-group members for the workload scenarios.

`Member` runs one kafka-python consumer on its own thread (each consumer must poll on its own thread:
a JoinGroup blocks until every member rejoined). `MemberProcess` runs one in a child process, so it
can be killed with SIGKILL and its heartbeats really stop.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field

from rebalance_monitor.instrument.emitter import Emitter
from rebalance_monitor.instrument.kafka_python import instrument_consumer

from .kafka_python_join import settle_finished_join, wait_for_metadata_snapshot

log = logging.getLogger("rebalance_monitor.workload")

ASSIGNOR_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")


def assignor_classes(names) -> list:
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    table = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
             "sticky": StickyPartitionAssignor}
    try:
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        table["cooperative-sticky"] = CooperativeStickyAssignor
    except Exception:  # pragma: no cover - older kafka-python
        pass
    out = []
    for name in names:
        if name not in table:
            raise ValueError(f"unknown assignor {name!r}; known: {', '.join(sorted(table))}")
        out.append(table[name])
    return out


@dataclass
class MemberSpec:
    """How to run one member. Times in ms like the Kafka configs they become."""

    bootstrap: str
    group: str
    topics: list = field(default_factory=list)
    pattern: str | None = None
    client_id: str = "member"
    assignors: list = field(default_factory=lambda: ["range", "roundrobin"])
    group_instance_id: str | None = None
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    max_poll_interval_ms: int = 30000
    auto_commit_interval_ms: int = 2000
    metadata_max_age_ms: int = 300000
    # the record handler: sleep this long once, `slow_after_s` seconds after the first assignment
    slow_sleep_s: float = 0.0
    slow_after_s: float = 1.0
    per_record_sleep_s: float = 0.0
    poll_timeout_ms: int = 200
    host: str | None = None
    # which client runs the member: kafka-python (instrumented), confluent (instrumented librdkafka) or java
    # (kafka-clients, uninstrumented); and its group protocol: classic, or consumer (KIP-848)
    client: str = "kafka-python"
    group_protocol: str = "classic"
    remote_assignor: str | None = None  # KIP-848: group.remote.assignor (None: the broker's default)


@dataclass
class MemberStatus:
    member_id: str = ""
    generation: int = -1
    state: str = "UNJOINED"
    assignment: list = field(default_factory=list)
    records: int = 0
    polls: int = 0
    error: str | None = None
    closed: bool = False
    state_since: float = 0.0  # time.monotonic() when `state` last changed (kafka-python members)


def make_consumer(spec: MemberSpec):
    from kafka import KafkaConsumer

    cfg = dict(bootstrap_servers=spec.bootstrap, group_id=spec.group, client_id=spec.client_id,
               partition_assignment_strategy=assignor_classes(spec.assignors),
               session_timeout_ms=spec.session_timeout_ms, heartbeat_interval_ms=spec.heartbeat_interval_ms,
               max_poll_interval_ms=spec.max_poll_interval_ms, auto_offset_reset="earliest",
               enable_auto_commit=True, auto_commit_interval_ms=spec.auto_commit_interval_ms,
               metadata_max_age_ms=spec.metadata_max_age_ms,
               request_timeout_ms=max(30000, spec.session_timeout_ms + 5000))
    if spec.group_instance_id:
        cfg["group_instance_id"] = spec.group_instance_id
    return KafkaConsumer(**cfg)


class Member:
    """One instrumented kafka-python consumer polling on its own thread."""

    def __init__(self, spec: MemberSpec, emitter: Emitter):
        self.spec = spec
        self.emitter = emitter
        self.status = MemberStatus()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer = None
        self.instrumentation = None
        self.started_at = 0.0

    @property
    def name(self) -> str:
        return self.spec.client_id

    def start(self) -> "Member":
        self._stop.clear()
        self.started_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"member-{self.spec.client_id}", daemon=True)
        self._thread.start()
        return self

    def snapshot(self) -> MemberStatus:
        with self._lock:
            return MemberStatus(**{k: (list(v) if isinstance(v, list) else v)
                                   for k, v in asdict(self.status).items()})

    def stop(self, timeout: float = 20.0) -> None:
        """Close the consumer gracefully (a dynamic member sends LeaveGroup) and join the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def join_state(self) -> str:
        """The kafka-python coordinator's own view of its join, for a stuck member's error message."""
        coord = getattr(self._consumer, "_coordinator", None)
        if coord is None:
            return "no coordinator"
        fields = ("coordinator_id", "state", "rejoin_needed", "rejoining", "_join_task")
        return ", ".join(f"{f}={getattr(coord, f, '?')!r}" for f in fields)

    def _publish(self, consumer) -> None:
        try:
            meta = consumer.group_metadata()
            assignment = sorted([tp.topic, tp.partition] for tp in consumer.assignment())
            with self._lock:
                self.status.member_id = meta.member_id or ""
                self.status.generation = meta.generation_id
                state = str(getattr(meta.state, "value", meta.state)).strip("<>").upper()  # STABLE, REBALANCING..
                if state != self.status.state:
                    self.status.state_since = time.monotonic()
                self.status.state = state
                self.status.assignment = assignment
        except Exception as exc:  # pragma: no cover - status only
            with self._lock:
                self.status.error = repr(exc)

    def _run(self) -> None:
        spec = self.spec
        consumer = None
        slow = SlowHandler(spec, self._stop)
        try:
            consumer = make_consumer(spec)
            self._consumer = consumer
            self.instrumentation = instrument_consumer(consumer, self.emitter, host=spec.host)
            # kafka-python 3.0 drops a join that finishes between two polls (kafka_python_join.py)
            settle_finished_join(consumer)
            if spec.pattern:
                consumer.subscribe(pattern=spec.pattern)
            else:
                # Know the topics' partitions before joining: a leader whose metadata does not have them yet
                # assigns nothing, then rejoins once it learns them (a real but avoidable extra rebalance
                # right after a topic is created, which would blur what each scenario shows).
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline and not all(consumer.partitions_for_topic(t) for t in spec.topics):
                    self._stop.wait(0.2)
                consumer.subscribe(topics=list(spec.topics))
                # ... and the coordinator's own snapshot of them: a first leader that assigned against an empty
                # one rejoins at its next metadata refresh (kafka_python_join.py)
                wait_for_metadata_snapshot(consumer, spec.topics, 15, self._stop)
            while not self._stop.is_set():
                batch = consumer.poll(timeout_ms=spec.poll_timeout_ms)
                n = sum(len(v) for v in batch.values())
                with self._lock:
                    self.status.polls += 1
                    self.status.records += n
                self._publish(consumer)
                if spec.per_record_sleep_s and n:
                    self._stop.wait(spec.per_record_sleep_s * n)
                slow.after_poll(bool(self.status.assignment))
        except Exception as exc:
            log.warning("member %s failed: %r", spec.client_id, exc)
            with self._lock:
                self.status.error = repr(exc)
        finally:
            close_quietly(consumer, timeout_ms=5000)
            with self._lock:
                self.status.closed = True


class SlowHandler:
    """The scenarios' stalling record handler: once, `slow_after_s` after the member's first assignment, it
    sleeps `slow_sleep_s` (the member then polls nothing: a poll timeout)."""

    def __init__(self, spec: MemberSpec, stop: threading.Event):
        self.spec, self.stop = spec, stop
        self.done = spec.slow_sleep_s <= 0
        self.first_assigned: float | None = None

    def after_poll(self, assigned: bool) -> None:
        if self.first_assigned is None and assigned:
            self.first_assigned = time.monotonic()
        if not self.done and self.first_assigned is not None \
                and time.monotonic() - self.first_assigned >= self.spec.slow_after_s:
            self.done = True
            log.info("member %s: slow handler sleeps %.1fs", self.spec.client_id, self.spec.slow_sleep_s)
            self.stop.wait(self.spec.slow_sleep_s)


def close_quietly(consumer, **kwargs) -> None:
    if consumer is not None:
        try:
            consumer.close(**kwargs)
        except Exception as exc:  # pragma: no cover
            log.debug("close failed: %r", exc)


class MemberProcess:
    """A member in a child process (`python -m rebalance_monitor.workload.child`), with its own
    events emitter. `kill()` sends SIGKILL: no LeaveGroup, no more heartbeats (a real crash)."""

    def __init__(self, spec: MemberSpec, events_topic: str):
        self.spec = spec
        self.events_topic = events_topic
        self.proc: subprocess.Popen | None = None
        self.member_id = ""
        self.generation = -1
        self.synced = threading.Event()
        self._reader: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self.spec.client_id

    def start(self) -> "MemberProcess":
        payload = json.dumps({"spec": asdict(self.spec), "events_topic": self.events_topic})
        env = dict(os.environ)
        self.proc = subprocess.Popen([sys.executable, "-m", "rebalance_monitor.workload.child", payload],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"child-{self.spec.client_id}")
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "SYNCED":
                self.member_id, self.generation = parts[1], int(parts[2])
                self.synced.set()

    def wait_synced(self, timeout: float) -> bool:
        return self.synced.wait(timeout)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self, timeout: float = 20.0) -> None:
        """Graceful stop (SIGTERM: the child closes its consumer and flushes its events)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=2)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None
