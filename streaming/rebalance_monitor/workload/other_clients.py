"""Workload members on other clients than kafka-python, with the snapshot interface of `members.Member`
(member id, generation — the member epoch under KIP-848 —, state, assignment), so `Ctx.wait_stable` works:

* `ConfluentMember`: an instrumented confluent-kafka (librdkafka) consumer on its own thread, with the classic
  protocol or KIP-848's (`group.protocol=consumer`, the broker assigns);
* `JavaMember`: a plain Java consumer of kafka-clients
  (streaming/java/test-programs/java-consumer/RmJavaConsumer.java, no instrumentation: the monitor sees it only
  through the broker), in its own JVM; its own rebalance callbacks, printed as JSON
  lines, are its snapshot. `kill()` is a crash (SIGKILL), `stop()` leaves the group.
"""
from __future__ import annotations

import json
import logging
import signal
import subprocess
import threading
from dataclasses import asdict

from rebalance_monitor.instrument.emitter import Emitter

from .live_members import Member, MemberSpec, MemberStatus, SlowHandler, close_quietly

log = logging.getLogger("rebalance_monitor.workload")


class _Snapshotting:
    def __init__(self, spec: MemberSpec):
        self.spec = spec
        self.status = MemberStatus()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.spec.client_id

    def snapshot(self) -> MemberStatus:
        with self._lock:
            return MemberStatus(**{k: (list(v) if isinstance(v, list) else v)
                                   for k, v in asdict(self.status).items()})


class ConfluentMember(Member):
    """One instrumented confluent-kafka consumer polling on its own thread (`Member`'s life cycle)."""

    def config(self) -> dict:
        s = self.spec
        cfg = {"bootstrap.servers": s.bootstrap, "group.id": s.group, "client.id": s.client_id,
               "group.protocol": s.group_protocol, "auto.offset.reset": "earliest", "enable.auto.commit": True,
               "auto.commit.interval.ms": s.auto_commit_interval_ms, "max.poll.interval.ms": s.max_poll_interval_ms,
               "topic.metadata.refresh.interval.ms": s.metadata_max_age_ms, "log_level": 3}
        if s.group_protocol == "classic":
            cfg.update({"session.timeout.ms": s.session_timeout_ms, "heartbeat.interval.ms": s.heartbeat_interval_ms,
                        "partition.assignment.strategy": ",".join(s.assignors)})
        elif s.remote_assignor:
            cfg["group.remote.assignor"] = s.remote_assignor
        if s.group_instance_id:
            cfg["group.instance.id"] = s.group_instance_id
        return cfg

    def _publish(self, consumer) -> None:
        from rebalance_monitor.instrument.confluent import decode_group_metadata

        meta = decode_group_metadata(consumer.consumer_group_metadata()) or {}
        assignment = sorted([p.topic, p.partition] for p in consumer.assignment())
        member = consumer.memberid() or meta.get("member_id") or ""
        with self._lock:
            self.status.member_id = member
            self.status.generation = int(meta.get("generation", -1))
            self.status.state = "STABLE" if member and self.status.generation > 0 else "UNJOINED"
            self.status.assignment = assignment

    def _run(self) -> None:
        from rebalance_monitor.instrument.confluent import instrumented_confluent_consumer

        spec = self.spec
        consumer = None
        slow = SlowHandler(spec, self._stop)
        try:
            # KIP-848 sessions are the broker's (group.consumer.session.timeout.ms): the spec says it
            session = {"session_timeout_ms": spec.session_timeout_ms} if spec.group_protocol == "consumer" else {}
            consumer = instrumented_confluent_consumer(self.config(), self.emitter, host=spec.host, **session)
            consumer.subscribe(list(spec.topics))
            while not self._stop.is_set():
                msg = consumer.poll(spec.poll_timeout_ms / 1000.0)
                with self._lock:
                    self.status.polls += 1
                    self.status.records += 1 if msg is not None and msg.error() is None else 0
                self._publish(consumer)
                slow.after_poll(bool(self.status.assignment))
        except Exception as exc:
            log.warning("member %s failed: %r", spec.client_id, exc)
            with self._lock:
                self.status.error = repr(exc)
        finally:
            close_quietly(consumer)
            with self._lock:
                self.status.closed = True


class JavaMember(_Snapshotting):
    """A plain Java consumer (kafka-clients) in its own JVM; its printed rebalance callbacks are its view."""

    def __init__(self, spec: MemberSpec, version: str | None = None):
        super().__init__(spec)
        self.version = version
        self.proc: subprocess.Popen | None = None
        self.callbacks: list[dict] = []
        self._reader: threading.Thread | None = None

    def command(self) -> list[str]:
        from rebalance_monitor.testing.kafka_install import KAFKA_VERSION, classpath, java_binary

        s = self.spec
        args = [f"bootstrap={s.bootstrap}", f"group={s.group}", f"topics={','.join(s.topics)}",
                f"client.id={s.client_id}", f"protocol={s.group_protocol}",
                f"session.timeout.ms={s.session_timeout_ms}", f"max.poll.interval.ms={s.max_poll_interval_ms}"]
        if s.group_protocol == "classic":
            args.append(f"assignor={s.assignors[0]}")
        elif s.remote_assignor:
            args.append(f"assignor={s.remote_assignor}")
        if s.group_instance_id:
            args.append(f"instance.id={s.group_instance_id}")
        if s.slow_sleep_s > 0:  # one stall, like the Python members' slow handler
            args += [f"stall.ms={int(s.slow_sleep_s * 1000)}", f"stall.after.ms={int(s.slow_after_s * 1000)}"]
        return [java_binary(), "-Xmx128m", "-XX:TieredStopAtLevel=1", "-Dlog4j.rootLogger=WARN",
                "-cp", classpath(self.version or KAFKA_VERSION), "RmJavaConsumer", *args]

    def start(self) -> "JavaMember":
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._read, name=f"java-{self.spec.client_id}", daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                cb = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.callbacks.append(cb)
                st = self.status
                if cb.get("member_id"):
                    st.member_id = cb["member_id"]
                kind = cb.get("kind")
                if kind == "assigned" and self.spec.group_protocol == "consumer":
                    # KIP-848: the callback runs while the member reconciles, before its epoch moves (its
                    # generation here is the old epoch); the "epoch" line after the poll says where it stands
                    st.assignment = sorted(cb.get("assignment") or [])
                elif kind in ("assigned", "epoch"):
                    st.generation = cb["generation"]
                    st.assignment = sorted(cb.get("assignment") or [])
                    st.state = "STABLE"
                elif kind in ("revoked", "lost"):
                    gone = {tuple(p) for p in cb.get("partitions") or []}
                    st.assignment = [p for p in st.assignment if tuple(p) not in gone]
                    if kind == "lost" or self.spec.group_protocol == "classic":
                        st.state = "REBALANCING"
                elif kind == "closed":
                    st.state, st.closed = "UNJOINED", True

    def stop(self, timeout: float = 20.0) -> None:
        """Close the consumer (it leaves the group) by closing its stdin."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=timeout)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=2)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None
