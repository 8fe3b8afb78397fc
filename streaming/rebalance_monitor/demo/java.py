"""The demo's Java group (`demo-java`): two plain Java consumers
(streaming/java/test-programs/java-consumer/RmJavaConsumer.java, nothing of the project inside them) watched
through the broker alone. The demo's broker runs the KIP-714 broker plugin (the jar
scripts/build_java.sh built into var/java/) with a client-metrics subscription every 2 s, so the consumers push
their heartbeat and poll clocks to it; the monitor reads the plugin's events and `__consumer_offsets`.

`java-ok` polls all along; `java-stall` polls for STALL_AFTER_MS, then its handler takes STALL_MS, past its
max.poll.interval.ms: the monitor's poll-gap ratio for it climbs with each push, the core reports it at risk
(a `member_at_risk` record at half its max.poll.interval.ms, the demo's early-warning line) before the
coordinator removes it, and its poll timeout names it. It polls again
after the stall, rejoining the group.
"""
from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

log = logging.getLogger("rebalance_monitor.demo")

GROUP = "demo-java"
TOPIC = "demo-java-orders"
MAX_POLL_MS = 20_000
STALL_AFTER_MS = 20_000
STALL_MS = 40_000
PUSH_INTERVAL_MS = 2_000


def missing() -> str | None:
    """Why the Java group cannot run (the plugin's jar or the Java consumer not built), or None."""
    from ..testing.java_telemetry import BROKER_JAR
    from ..testing.kafka_install import KAFKA_VERSION, cache_root, project_root

    jar = project_root() / "var" / "java" / BROKER_JAR
    if not jar.is_file():
        return f"{jar} is missing: run scripts/build_java.sh (needs Maven)"
    consumer = cache_root() / KAFKA_VERSION / "classes" / "RmJavaConsumer.class"
    if not consumer.is_file():
        return f"{consumer} is missing: run scripts/fetch_kafka.sh"
    return None


def broker_options(port: int, events_topic: str) -> dict:
    """The Broker(...) keywords of a broker on `port` running the plugin, its events going to `events_topic`."""
    from ..testing.java_telemetry import BROKER_JAR, EXPORTER_PLUGIN
    from ..testing.kafka_install import project_root

    return {"port": port, "extra_classpath": (str(project_root() / "var" / "java" / BROKER_JAR),),
            "settings": {"metric.reporters": EXPORTER_PLUGIN,
                         "rebalance.monitor.bootstrap.servers": f"127.0.0.1:{port}",
                         "rebalance.monitor.events.topic": events_topic}}


class JavaGroup:
    """The two consumers, started by `start()` (the subscription first) and stopped by `stop()`."""

    def __init__(self, broker, log_dir: str):
        self.broker = broker
        self.log_dir = log_dir
        self.procs: list[subprocess.Popen] = []

    def start(self) -> None:
        from ..testing.java_telemetry import plain_java_consumer, subscribe

        self.broker.create_topics({TOPIC: 2})
        subscribe(self.broker.bootstrap, "rebalance-monitor-demo", PUSH_INTERVAL_MS)
        common = {"session.timeout.ms": "6000", "max.poll.interval.ms": str(MAX_POLL_MS)}
        for client_id, extra in (("java-ok", {}), ("java-stall", {"stall.after.ms": str(STALL_AFTER_MS),
                                                                    "stall.ms": str(STALL_MS)})):
            self.procs.append(plain_java_consumer(self.broker.bootstrap, TOPIC, GROUP, client_id, {**common, **extra},
                                                  Path(self.log_dir) / f"{client_id}.log"))

    def stop(self) -> None:
        """Each consumer closes (end of its stdin: it leaves the group), or is killed after 20 s."""
        for p in self.procs:
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                log.warning("Java consumer %s did not stop: killed", p.pid)
                os.killpg(p.pid, 9)
                p.wait(timeout=30)
        self.procs = []
