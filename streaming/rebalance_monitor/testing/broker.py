"""Apache Kafka for the tests, the workloads and the demo: one KRaft node (broker and controller in one JVM) on
loopback ports, started from the jars scripts/fetch_kafka.sh fetched with Maven (`kafka_install`).

The node logs like a production broker, with one difference: the group coordinator's loggers
(`kafka.coordinator.group`, the classic coordinator of 3.x; `org.apache.kafka.coordinator.group`, 4.x), and
AppInfoParser's start-up lines (`Kafka version: X`), go to their own file, `coordinator_log`, in Kafka's own
layout (`[%d] %p %m (%c)%n`) — the file a log shipper would tail for the monitor's coordinator-log input. Everything else goes to `log_path`.

`kill()` then `start()` is a real broker crash and restart: the data directory stays until `stop()`.
Users point the monitor at their own cluster instead; `KafkaCluster` (tests/helpers/kafka_cluster.py) starts three nodes.
`Broker(sasl_ssl=SaslSslListener(...))` secures the client listener (`bootstrap`) with SASL_SSL and SCRAM
(`sasl_listener.py`); its brokers and controller then talk PLAINTEXT on `internal_port`.
"""
from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .kafka_install import KAFKA_VERSION, classpath, java_binary
from .processes import ServiceUnavailable, free_port, stop_process_group
from .sasl_listener import SaslSslListener

# Group settings of the test broker: a new group forms its first generation at once (production waits 3 s),
# and members may use short sessions, so crash scenarios take seconds. KIP-848 groups default to 10 s sessions
# (production: 45 s). Everything else is Kafka's default.
TEST_BROKER_SETTINGS = {
    "num.partitions": "1",
    "offsets.topic.num.partitions": "10",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "auto.create.topics.enable": "true",
    "log.flush.interval.messages": "100000",
    "delete.topic.enable": "true",
    # records up to 10 MiB: the monitor's own limit (kafka.max_record_bytes, dead-lettered as too_large above
    # it) is tested with records larger than Kafka's 1 MiB default
    "message.max.bytes": "10485760",
    "replica.fetch.max.bytes": "10485760",
}

LOG_PATTERN = "[%d] %p %m (%c)%n"
# the coordinator's loggers, and AppInfoParser's: its start-up line names the broker's release (`Kafka version: X`),
# which the server assignors' expected assignments follow (inputs/coordinator_log/broker_info.py)
COORDINATOR_LOGGERS = ("kafka.coordinator.group", "org.apache.kafka.coordinator.group",
                       "org.apache.kafka.common.utils.AppInfoParser",  # (3.9, 4.0)
                       "org.apache.kafka.common.utils.internals.AppInfoParser")  # (4.4)


class BrokerUnavailable(ServiceUnavailable):
    """The Kafka node could not be started, or did not serve in time."""


def new_cluster_id() -> str:
    """A KRaft cluster id (a base64url UUID); never one that starts with '-', which the storage tool's
    argument parser takes for an option."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def log4j2_properties(coordinator_log: Path) -> str:
    lines = [
        "status = error",
        "appender.stdout.type = Console", "appender.stdout.name = STDOUT",
        "appender.stdout.layout.type = PatternLayout", f"appender.stdout.layout.pattern = {LOG_PATTERN}",
        "appender.coord.type = File", "appender.coord.name = COORDINATOR",
        f"appender.coord.fileName = {coordinator_log}",
        "appender.coord.layout.type = PatternLayout", f"appender.coord.layout.pattern = {LOG_PATTERN}",
        "rootLogger.level = INFO", "rootLogger.appenderRef.stdout.ref = STDOUT",
    ]
    for i, name in enumerate(COORDINATOR_LOGGERS):
        lines += [f"logger.gc{i}.name = {name}", f"logger.gc{i}.level = INFO", f"logger.gc{i}.additivity = false",
                  f"logger.gc{i}.appenderRef.coord.ref = COORDINATOR"]
    return "\n".join(lines) + "\n"


def log4j1_properties(coordinator_log: Path) -> str:
    lines = [
        "log4j.rootLogger=INFO, stdout",
        "log4j.appender.stdout=org.apache.log4j.ConsoleAppender",
        "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.stdout.layout.ConversionPattern={LOG_PATTERN}",
        "log4j.appender.coord=org.apache.log4j.FileAppender",
        f"log4j.appender.coord.File={coordinator_log}",
        "log4j.appender.coord.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.coord.layout.ConversionPattern={LOG_PATTERN}",
    ]
    for name in COORDINATOR_LOGGERS:
        lines += [f"log4j.logger.{name}=INFO, coord", f"log4j.additivity.{name}=false"]
    return "\n".join(lines) + "\n"


@dataclass
class Broker:
    """One Apache Kafka KRaft node. Alone (the default) it is its own single-voter controller quorum;
    `KafkaCluster` gives several nodes one `voters` string and one `cluster_id`."""

    host: str = "127.0.0.1"
    port: int = 0
    log_path: str | None = None
    version: str = KAFKA_VERSION
    node_id: int = 1
    controller_port: int = 0
    voters: str | None = None
    cluster_id: str | None = None
    work_dir: str | None = None
    replication: int = 1
    settings: dict[str, str] = field(default_factory=dict)
    heap: str = "768m"
    # jars added to the broker's class path (a metric.reporters plugin such as the monitor's KIP-714 plugin)
    extra_classpath: tuple[str, ...] = ()
    # options of the broker's JVM (e.g. remote JMX on a loopback port, for the benches)
    jvm_args: tuple[str, ...] = ()
    # the client listener secured with SASL_SSL and SCRAM (None: PLAINTEXT); the brokers' own on internal_port
    sasl_ssl: SaslSslListener | None = None
    internal_port: int = 0
    proc: subprocess.Popen | None = field(default=None, repr=False)
    _own_work_dir: bool = field(default=False, repr=False)
    _log_offset: int = field(default=0, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def plaintext_bootstrap(self) -> str:
        """The PLAINTEXT listener: `bootstrap`, or the inter-broker one when the client listener is SASL_SSL."""
        return f"{self.host}:{self.internal_port}" if self.sasl_ssl is not None else self.bootstrap

    @property
    def coordinator_log(self) -> Path:
        """The group coordinator's log lines (Kafka's layout), the file a log shipper would tail."""
        return Path(self.work_dir or ".") / "coordinator.log"

    @property
    def server_log(self) -> Path:
        return Path(self.log_path) if self.log_path else Path(self.work_dir or ".") / "server.log"

    def _prepare(self) -> Path:
        if not self.work_dir:
            self.work_dir = tempfile.mkdtemp(prefix=f"rm-kafka-{self.node_id}-")
            self._own_work_dir = True
        work = Path(self.work_dir)
        work.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port(self.host)
        if not self.controller_port:
            self.controller_port = free_port(self.host)
        if not self.voters:
            self.voters = f"{self.node_id}@{self.host}:{self.controller_port}"
        if not self.cluster_id:
            self.cluster_id = new_cluster_id()
        listeners = {}
        if self.sasl_ssl is not None:
            if not self.internal_port:
                self.internal_port = free_port(self.host)
            listeners = self.sasl_ssl.server_properties(self.host, self.port, self.internal_port, self.controller_port)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters,
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(work / "data"),
            "offsets.topic.replication.factor": str(self.replication),
            "transaction.state.log.replication.factor": str(self.replication),
            "transaction.state.log.min.isr": "1",
            "default.replication.factor": str(self.replication),
            **listeners,
            **TEST_BROKER_SETTINGS,
            **self.settings,
        }
        (work / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (work / "log4j2.properties").write_text(log4j2_properties(self.coordinator_log))
        (work / "log4j.properties").write_text(log4j1_properties(self.coordinator_log))
        return work

    def _java(self, main: str, *args: str, heap: str = "256m", jvm_args: tuple[str, ...] = ()) -> list[str]:
        work = Path(self.work_dir)
        return [java_binary(), f"-Xmx{heap}", "-Xss1m", "-Djava.awt.headless=true", *jvm_args,
                f"-Dlog4j2.configurationFile={work / 'log4j2.properties'}",
                f"-Dlog4j.configuration=file:{work / 'log4j.properties'}",
                f"-Dkafka.logs.dir={work}",
                "-cp", ":".join((classpath(self.version), *self.extra_classpath)), main, *args]

    def _format(self, work: Path) -> None:
        if (work / "data" / "meta.properties").exists():
            return  # a restart: keep the data
        cmd = self._java("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c",
                         str(work / "server.properties"), "--ignore-formatted",
                         *(self.sasl_ssl.format_args() if self.sasl_ssl is not None else ()))
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise BrokerUnavailable(f"formatting KRaft storage failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")

    def launch(self) -> "Broker":
        """Start the JVM without waiting (a cluster starts its nodes together, then waits for each)."""
        work = self._prepare()
        self._format(work)
        out = open(self.server_log, "ab")
        self._log_offset = out.tell()
        cmd = self._java("kafka.Kafka", str(work / "server.properties"), heap=self.heap, jvm_args=self.jvm_args)
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=work)
        out.close()
        return self

    def wait_ready(self, timeout_s: float = 90.0) -> "Broker":
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                tail = self._log_tail()
                self.stop()
                raise BrokerUnavailable(f"Kafka exited with code {code}: {tail}")
            if self._serving():
                return self
            time.sleep(0.2)
        tail = self._log_tail()
        self.stop()
        raise BrokerUnavailable(f"Kafka did not serve on {self.bootstrap} within {timeout_s}s: {tail}")

    def start(self, timeout_s: float = 90.0) -> "Broker":
        return self.launch().wait_ready(timeout_s)

    def _serving(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                pass
        except OSError:
            return False
        try:
            with open(self.server_log, "rb") as f:
                f.seek(self._log_offset)
                return b"Kafka Server started" in f.read()
        except OSError:
            return False

    def _log_tail(self, n: int = 3000) -> str:
        try:
            return self.server_log.read_text(errors="replace")[-n:]
        except OSError:
            return "(no log)"

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Stop the broker process only (a crash with SIGKILL); its data stays, `start()` brings it back on the
        same ports."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=60)
        self.proc = None

    def stop(self) -> None:
        stop_process_group(self.proc, timeout_s=30.0)
        self.proc = None
        if self._own_work_dir and self.work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None
            self._own_work_dir = False

    def create_topics(self, topics: dict[str, int]) -> None:
        """Create topics ({name: partitions}) if missing, and wait until their metadata is visible."""
        from .kafka_admin import create_topics

        create_topics(self.plaintext_bootstrap, topics, replication=self.replication)

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
