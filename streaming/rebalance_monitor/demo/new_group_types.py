"""The demo's groups of Kafka 4's new types, beside the consumer groups: a Kafka Streams application on the streams
protocol (`demo-streams`, KIP-1071: the broker assigns its tasks) and a share group (`demo-share`, KIP-932: Kafka's
own console share consumer). Nothing of the project runs inside them: the streams application is stock Kafka Streams
(streaming/java/test-programs/streams-test-app, the jar scripts/build_java.sh built into var/java/) and the share
members are `kafka-console-share-consumer`; the monitor sees both through `__consumer_offsets`.

Both rebalance and recover, on a timeline the demo's view shows as it goes:

* streams: one instance, a scale-out to three, a `kill -9` of the second (the coordinator fences it when its
  session runs out), a graceful close of the third (it leaves the group); the first runs on;
* share: two members, a `kill -9` of the first (fenced after its session), a new member in its place; the others
  stop gracefully with the demo.

The demo's broker gives both types a short session (SESSION_MS) so the fences come within the demo's minutes.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
from pathlib import Path

log = logging.getLogger("rebalance_monitor.demo")

STREAMS_GROUP = "demo-streams"
SHARE_GROUP = "demo-share"
STREAMS_TOPICS = ("demo-streams-in", "demo-streams-out")
SHARE_TOPIC = "demo-share-orders"
SESSION_MS = 10_000
# the broker's settings for the two types (its default sessions are 45 s; the share state topic must fit one broker)
BROKER_SETTINGS = {
    "group.streams.session.timeout.ms": str(SESSION_MS), "group.streams.min.session.timeout.ms": "1000",
    "group.streams.heartbeat.interval.ms": "1000", "group.streams.min.heartbeat.interval.ms": "500",
    "group.share.session.timeout.ms": str(SESSION_MS), "group.share.min.session.timeout.ms": "1000",
    "group.share.heartbeat.interval.ms": "1000", "group.share.min.heartbeat.interval.ms": "500",
    "share.coordinator.state.topic.replication.factor": "1", "share.coordinator.state.topic.min.isr": "1",
}
# (seconds after the start, what happens): the streams application's and the share group's timelines
STREAMS_STEPS = ((0, "start", "streams-1"), (15, "start", "streams-2"), (30, "start", "streams-3"),
                 (55, "kill", "streams-2"), (85, "close", "streams-3"))
SHARE_STEPS = ((5, "start", "share-1"), (20, "start", "share-2"), (45, "kill", "share-1"),
               (75, "start", "share-3"))


def missing() -> str | None:
    """Why the streams application cannot run (its jar not built), or None."""
    from ..testing.java_telemetry import STREAMS_APP_JAR
    from ..testing.kafka_install import project_root

    jar = project_root() / "var" / "java" / STREAMS_APP_JAR
    if not jar.is_file():
        return f"{jar} is missing: run scripts/build_java.sh (needs Maven)"
    return None


class NewGroupTypes:
    """The two groups, started by `run()` (a thread: it follows the timelines until `stop` is set) and stopped by
    `stop_all()`."""

    def __init__(self, broker, log_dir: str, stop: threading.Event, say=None):
        self.broker = broker
        self.log_dir = Path(log_dir)
        self.stop = stop
        self.say = say or (lambda line: None)
        self.procs: dict[str, subprocess.Popen] = {}

    def run(self, with_streams: bool = True) -> None:
        self.broker.create_topics({STREAMS_TOPICS[0]: 3, STREAMS_TOPICS[1]: 1, SHARE_TOPIC: 2})
        steps = sorted([*(((t, "streams", a, n) for t, a, n in STREAMS_STEPS) if with_streams else ()),
                        *((t, "share", a, n) for t, a, n in SHARE_STEPS)])
        started = 0.0
        for at, kind, action, name in steps:
            if self.stop.wait(max(0.0, at - started)):
                return
            started = at
            try:
                self._step(kind, action, name)
            except Exception as exc:  # noqa: BLE001 - keep the demo alive; say what went wrong
                log.warning("%s %s %s: %s", kind, action, name, exc)

    def _step(self, kind: str, action: str, name: str) -> None:
        group = STREAMS_GROUP if kind == "streams" else SHARE_GROUP
        if action == "start":  # (its join is said by the generation it causes)
            self.procs[name] = self._streams(name) if kind == "streams" else self._share(name)
        elif action == "kill":
            proc = self.procs.pop(name)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            self.say(f"{group}: {name} killed (kill -9): the coordinator fences it after {SESSION_MS // 1000} s")
        elif action == "close":
            self._close(self.procs.pop(name))
            self.say(f"{group}: {name} closed gracefully (it leaves the group)")

    def _streams(self, client_id: str) -> subprocess.Popen:
        from ..testing.java_telemetry import streams_app

        props = {"application.id": STREAMS_GROUP, "bootstrap.servers": self.broker.bootstrap,
                 "client.id": client_id, "group.protocol": "streams", "num.stream.threads": "1",
                 "state.dir": str(self.log_dir / f"state-{client_id}"),
                 "input.topic": STREAMS_TOPICS[0], "output.topic": STREAMS_TOPICS[1]}
        return streams_app(props, self.log_dir / f"{client_id}.properties", (), self.log_dir / f"{client_id}.log")

    def _share(self, client_id: str) -> subprocess.Popen:
        from ..testing.kafka_install import classpath, java_binary

        cmd = [java_binary(), "-Xmx192m", "-cp", classpath(), "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
               "--bootstrap-server", self.broker.bootstrap, "--topic", SHARE_TOPIC, "--group", SHARE_GROUP,
               "--command-property", f"client.id={client_id}"]
        with open(self.log_dir / f"{client_id}.log", "ab") as out:
            return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    @staticmethod
    def _close(proc: subprocess.Popen) -> None:
        """SIGTERM: Kafka Streams and the console share consumer close, leaving the group; killed after 30 s."""
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            log.warning("process %s did not stop: killed", proc.pid)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            self._close(proc)
        self.procs = {}
