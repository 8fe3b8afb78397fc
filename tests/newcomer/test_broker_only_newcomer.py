"""A newcomer's first day, end to end, from the broker alone (issue 27, item 6).

Everything is set up as a user would set it up, with nothing of the project's own in between:

- an Apache Kafka 4.4 broker started from its own `server.properties`, logging with Kafka's default layout
  (`[%d] %p %m (%c)%n`) to `server.log`, whose lines a stock tool ships into a topic (`tail -F server.log` piped
  into Kafka's console producer);
- consumer groups of stock Java tools: Kafka's console consumer, classic and `group.protocol=consumer` (KIP-848), and
  a plain Java consumer whose handler stalls past `max.poll.interval.ms`;
- a `kill -9`, a graceful stop (SIGTERM: the console consumer closes and leaves), the stall;
- `rebalance-monitor run` of the base install (`pip install .`: this module runs in scripts/test_base_install.sh),
  first with `kafka.offsets_topic` alone, then with the shipped log topic too.

Asserted on `rebalance-monitor history` and `/metrics`: every generation, causes naming the member by client id
and host, timeouts counted, expected assignments computed, lag exported, KIP-848 groups Stable.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.eventually import eventually
from helpers.exposition import parse
from helpers.monitor_process import kill_hard, scrape

from rebalance_monitor.testing.broker import new_cluster_id
from rebalance_monitor.testing.kafka_install import classpath, java_binary
from rebalance_monitor.testing.processes import free_port

pytestmark = [pytest.mark.integration]

SESSION_MS = 10_000
SLOW_POLL_MS = 25_000  # well above the session timeout, as Java's defaults are (300 s and 45 s)


def _base_install() -> bool:
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return True
    return False


if not _base_install():
    pytestmark.append(pytest.mark.skip(
        reason="runs in the base install only (scripts/test_base_install.sh, the second part of make test): the "
               "newcomer's monitor is `pip install .` without extras"))

KAFKA_DEFAULT_LOG4J2 = """\
status = error
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
appender.kafka.type = File
appender.kafka.name = KafkaAppender
appender.kafka.fileName = {logs}/server.log
appender.kafka.layout.type = PatternLayout
appender.kafka.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
rootLogger.appenderRef.kafka.ref = KafkaAppender
"""


class Newcomer:
    """The user's broker, log shipper and Java consumers (processes of their own), stopped together."""

    def __init__(self, work: Path):
        self.work = work
        self.procs: list[subprocess.Popen] = []
        self.port, self.cport = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"

    def java(self, main: str, *args: str, log4j: Path | None = None) -> list[str]:
        opts = [f"-Dlog4j2.configurationFile={log4j}"] if log4j else ["-Dlog4j2.level=WARN"]
        return [java_binary(), "-Xmx256m", "-XX:TieredStopAtLevel=1", *opts, "-cp", classpath(), main, *args]

    def spawn(self, cmd, name: str, **kw) -> subprocess.Popen:
        out = open(self.work / f"{name}.out", "ab")
        p = subprocess.Popen(cmd, stdout=kw.pop("stdout", out), stderr=subprocess.STDOUT, start_new_session=True,
                             **kw)
        self.procs.append(p)
        return p

    def start_broker(self) -> None:
        logs = self.work / "logs"
        logs.mkdir()
        props = self.work / "server.properties"
        props.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{self.cport}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.cport}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            f"log.dirs={self.work / 'data'}",
            "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1", "num.partitions=1", ""]))
        log4j = self.work / "log4j2.properties"
        log4j.write_text(KAFKA_DEFAULT_LOG4J2.format(logs=logs))
        subprocess.run(self.java("kafka.tools.StorageTool", "format", "-t", new_cluster_id(), "-c", str(props)),
                       check=True, capture_output=True, timeout=120)
        self.broker = self.spawn(self.java("kafka.Kafka", str(props), log4j=log4j), "broker")
        self.server_log = logs / "server.log"
        eventually(lambda: self.server_log.exists() and "Kafka Server started" in self.server_log.read_text(),
                   120, "the user's broker")

    def tool(self, main: str, *args: str, timeout: float = 120) -> str:
        done = subprocess.run(self.java(main, *args), capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    def ship_logs(self, topic: str) -> None:
        """`tail -F server.log | kafka-console-producer.sh --topic <topic>`: every line, as it comes."""
        tail = subprocess.Popen(["tail", "-n", "+1", "-F", str(self.server_log)], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(tail)
        self.spawn(self.java("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", self.bootstrap,
                             "--topic", topic), "shipper", stdin=tail.stdout)

    def console_consumer(self, group: str, topic: str, client_id: str, *props: str) -> subprocess.Popen:
        args = ["--bootstrap-server", self.bootstrap, "--topic", topic, "--group", group,
                "--consumer-property", f"client.id={client_id}"]
        for p in props:
            args += ["--consumer-property", p]
        return self.spawn(self.java("org.apache.kafka.tools.consumer.ConsoleConsumer", *args), client_id,
                          stdout=subprocess.DEVNULL)

    def slow_consumer(self, group: str, topic: str, client_id: str) -> subprocess.Popen:
        """The project's plain Java consumer (no instrumentation): one stall of its handler past
        max.poll.interval.ms, its heartbeats going on meanwhile."""
        return self.spawn(self.java("RmJavaConsumer", f"bootstrap={self.bootstrap}", f"group={group}",
                                    f"topics={topic}", f"client.id={client_id}", f"session.timeout.ms={SESSION_MS}",
                                    f"max.poll.interval.ms={SLOW_POLL_MS}", "stall.ms=40000", "stall.after.ms=4000"),
                          client_id, stdin=subprocess.PIPE)

    def produce(self, topic: str, n: int) -> None:
        from kafka import KafkaProducer

        p = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=20)
        for i in range(n):
            p.send(topic, f"order-{i}".encode())
        p.flush()
        p.close()

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(30)


def run_monitor(n: Newcomer, name: str, **kafka) -> tuple[subprocess.Popen, int, Path]:
    """`rebalance-monitor run` of this interpreter's install (the base install) with a user's config file."""
    import yaml

    port = free_port()
    d = n.work / name
    d.mkdir()
    cfg = {"kafka": {"bootstrap_servers": n.bootstrap, "starting_offsets": "earliest", "events_topic": "",
                     **kafka},
           "state": {"checkpoint_location": str(d / "ck"), "watermark_delay": "2s"},
           "spark": {"trigger_interval": "2s", "local_dir": str(d / "spark"), "shuffle_partitions": 2},
           "exporter": {"port": port},
           "lag": {"broker_poll_interval": "5s"},
           "sinks": {"history": {"parquet_path": str(d / "history")}, "dead_letter": {"path": str(d / "dlq")}}}
    (d / "monitor.yaml").write_text(yaml.safe_dump(cfg))
    proc = subprocess.Popen([sys.executable, "-m", "rebalance_monitor", "run", "--config", str(d / "monitor.yaml")],
                            stdout=open(d / "run.log", "ab"), stderr=subprocess.STDOUT, start_new_session=True)
    return proc, port, d


def history(d: Path, group: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "rebalance_monitor", "history", "--config", str(d / "monitor.yaml"),
                           "--group", group, "--since", "2h", "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0 and "no history at" in done.stderr:
        return []  # the job has written no batch yet
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def value(text: str, family: str, **labels) -> float | None:
    """The value of `family`'s sample with these labels (among others; counters: its _total sample), or None."""
    for (name, lbl), v in parse(text).items():
        if name in (family, family + "_total") and all(dict(lbl).get(k) == str(x) for k, x in labels.items()):
            return v
    return None


def generations(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["event"] == "generation"]


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory):
    n = Newcomer(tmp_path_factory.mktemp("newcomer"))
    try:
        n.start_broker()
        n.tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", n.bootstrap, "--create", "--topic",
               "orders", "--partitions", "6")
        n.tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", n.bootstrap, "--create", "--topic",
               "broker-logs", "--partitions", "1")
        n.ship_logs("broker-logs")
        n.produce("orders", 600)
        session = f"session.timeout.ms={SESSION_MS}"
        classic = {cid: n.console_consumer("shop-classic", "orders", cid, session) for cid in ("shop-0", "shop-1", "shop-2")}
        kip848 = {cid: n.console_consumer("shop-848", "orders", cid, "group.protocol=consumer")
                  for cid in ("k848-0", "k848-1")}
        slow = n.slow_consumer("shop-slow", "orders", "slow-0")
        time.sleep(25)  # the groups form and commit (auto-commit every 5 s) before anything happens to them
        n.produce("orders", 300)
        os.killpg(classic["shop-2"].pid, signal.SIGKILL)  # a crash: its session timeout ends it
        time.sleep(SESSION_MS / 1000 + 10)  # the crash's rebalance is over before the graceful stop
        classic["shop-1"].send_signal(signal.SIGTERM)  # a graceful stop: the console consumer closes and leaves
        classic["shop-1"].wait(60)
        kip848["k848-1"].send_signal(signal.SIGTERM)
        kip848["k848-1"].wait(60)
        n.produce("orders", 300)
        time.sleep(20)  # the slow consumer's stall (from 4 s after its first partitions, 40 s) is past its poll limit
        n.dead = {"crash": "shop-2", "left": "shop-1", "slow": slow}
        yield n
    finally:
        n.stop()


def check_groups(n: Newcomer, d: Path, port: int, with_log: bool) -> None:
    classic = eventually(lambda: (lambda rows: rows if len(generations(rows)) >= 3 and any(
        "member_left" in (g["detail"] or "") for g in generations(rows)) else None)(history(d, "shop-classic")),
        240, "the classic group's generations in history")
    gens = generations(classic)
    details = " | ".join(g["detail"] or "" for g in gens)
    # the crash: a session timeout naming the member by client id and host (inferred from the commits of its
    # partitions when __consumer_offsets is read alone; the coordinator's word with its log)
    assert "session_timeout (shop-2@" in details, details
    assert "member_left (shop-1@" in details, details
    assert any(r["event"] == "session timeout" and (r["detail"] or "").startswith("shop-2") for r in classic), classic
    assert all(g["mismatched"] == 0 for g in gens), gens  # the expected assignment computed, and met
    slow = eventually(lambda: [r for r in history(d, "shop-slow") if r["event"].endswith("timeout")
                               or "timeout" in (r["detail"] or "")], 240, "the stalled consumer's timeout")
    assert any("slow-0" in (r["detail"] or "") for r in slow), slow
    text = eventually(lambda: scrape(port), 60, "/metrics")
    assert value(text, "kafka_consumergroup_member_timeouts_total", group="shop-classic", timeout="session") >= 1
    eventually(lambda: value(scrape(port) or "", "kafka_consumergroup_lag_sum", group="shop-classic") is not None,
               120, lambda: "the classic group's lag; its lag lines: " + " | ".join(
                   ln for ln in (scrape(port) or "").splitlines() if "lag" in ln and "shop-classic" in ln))
    eventually(lambda: value(scrape(port) or "", "kafka_consumergroup_state", group="shop-848", state="Stable") == 1,
               120, "the KIP-848 group Stable")
    text = scrape(port)
    for state in ("Dead", "Unknown"):
        assert not value(text, "kafka_consumergroup_state", group="shop-848", state=state), state
    if with_log:  # the log's reasons are in the union
        assert "heartbeat expiration" in details or "session_timeout (shop-2@" in details


@pytest.mark.parametrize("with_log", [False, True], ids=["offsets-topic-alone", "with-the-log-topic"])
def test_the_newcomers_fleet_from_the_broker_alone(newcomer, with_log):
    kafka = {"offsets_topic": "__consumer_offsets"}
    if with_log:
        kafka["coordinator_log_topic"] = "broker-logs"
    proc, port, d = run_monitor(newcomer, "with-log" if with_log else "offsets-alone", **kafka)
    try:
        check_groups(newcomer, d, port, with_log)
        assert proc.poll() is None, (d / "run.log").read_text()[-3000:]
    finally:
        kill_hard(proc)
