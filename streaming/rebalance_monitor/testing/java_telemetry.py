"""The monitor's Java plugins (streaming/java/, built by scripts/build_java.sh into var/java/) and the stock Kafka
tools the tests run with them: a KIP-714 client-metrics subscription (`kafka-client-metrics.sh`'s class) and a
console consumer (`kafka-console-consumer.sh`'s), a Java consumer the project did not write.

`plugin_broker` starts a broker with the broker plugin on its class path and its properties set;
`consumer_properties` are the two (three) properties that give a Java consumer the client reporter.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..client_metrics_subscription import SUBSCRIPTION_METRICS  # the plugin's metric prefixes
from .broker import Broker
from .kafka_install import KAFKA_VERSION, classpath, java_binary, project_root, stock_examples_classpath
from .processes import free_port

BROKER_JAR = "broker-telemetry-plugin.jar"
REPORTER_JAR = "client-metrics-reporter.jar"
STREAMS_APP_JAR = "streams-test-app.jar"  # a test application: stock Kafka Streams, a stateless topology
STREAMS_APP = "rebalancemonitor.testapp.StreamsTestApp"
EXPORTER_PLUGIN = "rebalancemonitor.telemetry.broker.ExporterPlugin"  # Kafka 4.2+ (KIP-1217)
RECEIVER_PLUGIN = "rebalancemonitor.telemetry.broker.ReceiverPlugin"  # Kafka 3.7-4.1 (KIP-714's first pair)
REPORTER = "rebalancemonitor.telemetry.client.ConsumerReporter"
# Kafka's own examples: a stateful word count (a count per word in a state store), from `streams-plaintext-input`
# to `streams-wordcount-output`, application id `streams-wordcount` unless its properties file says another
WORD_COUNT_DEMO = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"
WORD_COUNT_TOPICS = ("streams-plaintext-input", "streams-wordcount-output")


def jar(name: str) -> Path:
    """A plugin jar of var/java/, built first (scripts/build_java.sh: nothing to do when up to date); of
    $RM_JAVA_HOME as it is, when set (an installed package has no checkout to build from)."""
    built = os.environ.get("RM_JAVA_HOME")
    if built:
        path = Path(built) / name
        if not path.is_file():
            raise FileNotFoundError(f"{path}: RM_JAVA_HOME has no {name} (scripts/build_java.sh builds it)")
        return path
    root = project_root()
    subprocess.run([str(root / "scripts" / "build_java.sh")], check=True, cwd=root)
    path = root / "var" / "java" / name
    if not path.is_file():
        raise FileNotFoundError(f"{path}: scripts/build_java.sh did not build it")
    return path


def plugin_broker(events_topic: str, plugin: str = EXPORTER_PLUGIN, version: str = KAFKA_VERSION,
                  log_path: str | None = None, queue_capacity: int | None = None,
                  settings: dict[str, str] | None = None) -> Broker:
    """A broker (not started) with the broker plugin: metric.reporters, the jar, and the plugin's properties
    sending its events to `events_topic` on the broker itself; its other `settings` besides (e.g. short streams
    sessions)."""
    port = free_port("127.0.0.1")
    settings = {**(settings or {}), "metric.reporters": plugin,
                "rebalance.monitor.bootstrap.servers": f"127.0.0.1:{port}", "rebalance.monitor.events.topic": events_topic}
    if queue_capacity is not None:
        settings["rebalance.monitor.queue.capacity"] = str(queue_capacity)
    return Broker(port=port, version=version, log_path=log_path, settings=settings,
                  extra_classpath=(str(jar(BROKER_JAR)),))


def subscribe(bootstrap: str, name: str, interval_ms: int, metrics=SUBSCRIPTION_METRICS,
              version: str = KAFKA_VERSION) -> None:
    """Ask every client to push `metrics` every `interval_ms` (kafka-client-metrics.sh --alter)."""
    cmd = [java_binary(), "-Xmx128m", "-cp", classpath(version), "org.apache.kafka.tools.ClientMetricsCommand",
           "--bootstrap-server", bootstrap, "--alter", "--name", name, "--metrics", ",".join(metrics),
           "--interval", str(interval_ms)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"kafka-client-metrics --alter failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")


def consumer_properties(events_bootstrap: str, events_topic: str, interval_ms: int = 2000) -> dict[str, str]:
    """A Java consumer's properties for the client reporter (with its jar on the class path)."""
    return {"metric.reporters": REPORTER, "rebalance.monitor.bootstrap.servers": events_bootstrap,
            "rebalance.monitor.events.topic": events_topic, "rebalance.monitor.interval.ms": str(interval_ms)}


def word_count_demo(properties: dict[str, str], properties_path: Path, log_path: Path | None = None,
                    extra_classpath: tuple[str, ...] = ()) -> subprocess.Popen:
    """Kafka's own WordCountDemo (kafka-streams-examples, run on Kafka Streams 4.4 and Kafka 4.4's clients) with
    the Streams `properties` given (written to `properties_path`, its one argument), in a process of its own
    session; SIGTERM runs its shutdown hook (`KafkaStreams.close()`)."""
    properties_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    cp = ":".join((stock_examples_classpath(), *extra_classpath))
    return _start([java_binary(), "-Xmx192m", "-cp", cp, WORD_COUNT_DEMO, str(properties_path)], log_path)


def console_consumer(bootstrap: str, topic: str, group: str, client_id: str, properties: dict[str, str] | None = None,
                     extra_classpath: tuple[str, ...] = (), version: str = KAFKA_VERSION,
                     log_path: Path | None = None) -> subprocess.Popen:
    """Kafka's own console consumer (org.apache.kafka.tools.consumer.ConsoleConsumer) in `group`, as a process
    of its own session (kill it with its pid). Its records go to `log_path` (or nowhere)."""
    props = {"client.id": client_id, **(properties or {})}
    cmd = [java_binary(), "-Xmx128m", "-cp", ":".join((classpath(version), *extra_classpath)),
           "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", bootstrap, "--topic", topic,
           "--group", group, "--from-beginning"]
    for k, v in props.items():
        cmd += ["--consumer-property", f"{k}={v}"]
    return _start(cmd, log_path)


def _start(cmd: list[str], log_path: Path | None) -> subprocess.Popen:
    """`cmd` in a process of its own session, no stdin, its output appended to `log_path` (or dropped)."""
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    try:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    finally:
        if log_path:
            out.close()


def plain_java_consumer(bootstrap: str, topic: str, group: str, client_id: str, settings: dict[str, str],
                        log_path: Path, version: str = KAFKA_VERSION) -> subprocess.Popen:
    """The project's plain Java consumer (streaming/java/test-programs/java-consumer/RmJavaConsumer.java, no
    instrumentation; its keys: session.timeout.ms, max.poll.interval.ms, stall.ms, stall.after.ms, ...) in
    `group`, as a process of its own session. Its stdin stays open: the consumer closes (leaving its group) at its end; its output goes to
    `log_path`."""
    cmd = [java_binary(), "-Xmx128m", "-cp", classpath(version), "RmJavaConsumer", f"bootstrap={bootstrap}",
           f"group={group}", f"topics={topic}", f"client.id={client_id}", *(f"{k}={v}" for k, v in settings.items())]
    with open(log_path, "ab") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.PIPE,
                                start_new_session=True)


def streams_app(properties: dict[str, str], properties_path: Path, extra_classpath: tuple[str, ...] = (),
                log_path: Path | None = None) -> subprocess.Popen:
    """The Kafka Streams test application (streaming/java/test-programs/streams-test-app: stock Kafka Streams
    4.4, a stateless topology from `input.topic` to `output.topic`) with the Streams `properties` given (written to
    `properties_path`), in a process of its own session; SIGTERM closes it (leaving the group unless
    `leave.group.on.close` is "false"). Its consumers are Streams' own: `<client.id>-StreamThread-N-consumer`."""
    properties_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    cmd = [java_binary(), "-Xmx192m", "-cp", ":".join((classpath(KAFKA_VERSION), str(jar(STREAMS_APP_JAR)),
                                                        *extra_classpath)), STREAMS_APP, str(properties_path)]
    return _start(cmd, log_path)
