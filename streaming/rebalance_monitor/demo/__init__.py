"""`rebalance-monitor demo`: the whole system on one machine, with nothing configured.

Starts Apache Kafka (one KRaft node from the jars scripts/bootstrap.sh fetched) on free loopback ports, runs
real instrumented consumer groups through a rebalance storm, a crash and a steady phase, a group of plain Java
consumers watched through the broker's KIP-714 plugin, one of which stalls (java.py), and, beside them, a Kafka
Streams application on the streams protocol and a share group of Kafka's console share consumer, which scale out,
are killed and close (new_group_types.py). A second Kafka cluster (`second`, one more KRaft node) runs a group of
the same name as one of the first's (`demo-steady`), with its own members: one monitor watches both clusters
(`clusters:`), and the view shows the two groups apart. Runs the real Spark job and the Prometheus exporter on
them, reads committed and end offsets from the brokers for lag, and shows a live view. Ctrl-C (or --duration)
stops everything and leaves no process behind.

| module | holds |
| --- | --- |
| `__init__.py` | `run_demo`, what `rebalance-monitor demo` calls: preflight, start and stop order, the scenarios |
| `java.py` | the Java group (`demo-java`): plain Java consumers seen through the broker's plugin, one stalling |
| `new_group_types.py` | `demo-streams` (Kafka Streams, KIP-1071) and `demo-share` (KIP-932), from `__consumer_offsets` |
| `output_routing.py` | `DemoOutput`: the operator's lines, once each, in the live view or as lines when stdout is a pipe |
| `view.py` | `GroupBoard` (what the view shows per group), the live view's rendering, lag read from the exporter |
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

log = logging.getLogger("rebalance_monitor.demo")

SCENARIO_PLAN = ("storm", "crash", "steady")
CLUSTERS = ("main", "second")  # the demo's two Kafka clusters; the second runs SECOND_SCENARIO's group
SECOND_SCENARIO = "steady"


class DemoError(RuntimeError):
    pass


def preflight() -> None:
    """Say exactly what to install when something the demo needs is missing."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise DemoError("Java 17 is required by Spark: `apt-get install openjdk-17-jre-headless` "
                        "(or run scripts/bootstrap.sh, which installs it)")
    missing = []
    from ..testing.kafka_install import KafkaNotInstalled, kafka_home

    try:
        kafka_home()
    except (KafkaNotInstalled, OSError) as exc:
        raise DemoError(str(exc)) from None
    for module, package in (("pyspark", "pyspark"), ("kafka", "kafka-python"),
                            ("pyarrow", "pyarrow"), ("rich", "rich")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise DemoError(f"missing Python packages: {', '.join(missing)}: `pip install "
                        f"'kafka-rebalance-monitor[demo]'` (or run scripts/bootstrap.sh)")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def run_demo(duration_s: float | None = None, prometheus: bool = False, port: int = 9308, live: bool = True) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        preflight()
    except DemoError as exc:
        print(f"rebalance-monitor demo: {exc}", file=sys.stderr)
        return 2
    from ..config import load_config
    from ..spark.run import MonitorService as Monitor
    from ..testing.broker import TEST_BROKER_SETTINGS, Broker
    from ..testing.kafka_install import KAFKA_VERSION
    from ..testing.processes import free_port
    from . import java, new_group_types
    from .output_routing import DemoOutput
    from .view import GroupBoard, lag_by_group, render

    work = tempfile.mkdtemp(prefix="rebalance-monitor-demo-")
    live = live and sys.stdout.isatty()
    # the live view or the line mode's lines are for the operator: everything else goes to a log file
    log_path = os.path.join(tempfile.gettempdir(), f"rebalance-monitor-demo-{os.getpid()}.log")
    output = DemoOutput(log_path, live)
    stop = threading.Event()
    phase = {"now": "starting"}

    def _on_signal(signum, _frame):
        stop.set()

    # the monitor installs its own (which set `stop` too) once its exporter is up, and again once Spark is
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    broker = second = monitor = prom = None
    workload = second_workload = None
    java_group = java_start = None
    new_types = new_types_run = None
    view = None
    say = output.say
    output.__enter__()
    try:
        if live:
            view = _start_view(output.terminal)
            view.update(render(GroupBoard(), "...", "starting Apache Kafka and Spark", log_path))
        else:
            say(f"rebalance-monitor demo: Spark, Kafka and client logs go to {log_path}")
        events_topic = "rebalance-events"
        java_missing = java.missing()
        if java_missing and view is None:  # the live view says it in its panel (GroupBoard.note, below)
            say(f"the Java group ({java.GROUP}) is left out: {java_missing}")
        say(f"starting Apache Kafka {KAFKA_VERSION}" + ("" if java_missing else " with the KIP-714 plugin") + "...")
        streams_missing = new_group_types.missing()
        if streams_missing and view is None:
            say(f"the streams group ({new_group_types.STREAMS_GROUP}) is left out: {streams_missing}")
        options = {} if java_missing else java.broker_options(free_port(), events_topic)
        options["settings"] = {**options.get("settings", {}), **new_group_types.BROKER_SETTINGS}
        broker = Broker(log_path=os.path.join(work, "broker.log"), work_dir=os.path.join(work, "kafka"),
                        **options).start()
        say(f"broker at {broker.bootstrap}")
        broker.create_topics({events_topic: 1})
        second = Broker(log_path=os.path.join(work, "broker-second.log"), work_dir=os.path.join(work, "kafka-second"),
                        heap="384m").start()
        say(f"second cluster's broker at {second.bootstrap}")
        second.create_topics({events_topic: 1})
        if not java_missing:
            java_group = java.JavaGroup(broker, work)
        new_types = new_group_types.NewGroupTypes(broker, work, stop, lambda line: board.note(line))
        if port == 0 or not _port_free(port):
            port = free_port()
        cfg = load_config(env={}, overrides={
            "kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": events_topic,
            "kafka.starting_offsets": "earliest", "kafka.connector": "python",
            "spark.trigger_interval": "2s", "state.watermark_delay": "1s",
            "state.checkpoint_location": os.path.join(work, "checkpoint"),
            "sinks.history.parquet_path": os.path.join(work, "history"),
            "sinks.dead_letter.path": os.path.join(work, "dead-letter"),
            "storm.window": "2m", "storm.min_rebalances": 5,
            "exporter.host": "127.0.0.1", "exporter.port": port,
            # lag: committed and log-end offsets from the broker, every few seconds
            "lag.broker_poll_interval": "3s",
            # the log file keeps Spark's WARN lines (at INFO `run` logs them at DEBUG only)
            "logging.spark_level": "WARN",
            "spark.local_dir": os.path.join(work, "spark"),
            # the Java, streams and share groups are seen through the broker alone: the coordinator's records (and
            # the plugin's events)
            "kafka.offsets_topic": "__consumer_offsets",
            "kafka.offsets_topic_partitions": int(TEST_BROKER_SETTINGS["offsets.topic.num.partitions"]),
            # two clusters: the first keeps the paths above, the second's nest under them
            "kafka.cluster_name": CLUSTERS[0],
            "clusters": [{"name": CLUSTERS[0]},
                         {"name": CLUSTERS[1], "kafka": {"bootstrap_servers": second.bootstrap}}]})
        # the demo's groups only: with __consumer_offsets read, the monitor's own reader groups would show too
        board = GroupBoard(prefix="demo-", home=CLUSTERS[0])
        if java_missing and view is not None:
            board.note(f"the Java group ({java.GROUP}) is left out: {java_missing}")
        if streams_missing and view is not None:
            board.note(f"the streams group ({new_group_types.STREAMS_GROUP}) is left out: {streams_missing}")
        deadline = time.monotonic() + duration_s if duration_s else None

        def tick() -> None:
            """While the monitor's query runs: the workload started once, the view or the new lines shown."""
            nonlocal workload, java_start, second_workload
            if workload is None:
                workload = threading.Thread(target=_run_workloads, args=(broker.bootstrap, events_topic, stop, phase),
                                            name="demo-workload", daemon=True)
                workload.start()
                second_workload = threading.Thread(target=_run_workloads,
                                                   args=(second.bootstrap, events_topic, stop, {}, (SECOND_SCENARIO,)),
                                                   name="demo-workload-second", daemon=True)
                second_workload.start()
                if java_group is not None:
                    java_start = threading.Thread(target=_start_java, args=(java_group,), name="demo-java",
                                                  daemon=True)
                    java_start.start()
                new_types_run = threading.Thread(target=new_types.run, args=(streams_missing is None,),
                                                 name="demo-new-group-types", daemon=True)
                new_types_run.start()
            if deadline is not None and time.monotonic() >= deadline:
                stop.set()
            board.set_lag(lag_by_group(monitor.exporter.updater))   # every cluster's
            # the line mode's lines: on the terminal, or with the live view in the log file only
            for line in board.take_new() + board.lag_changes():
                say(line)
            if view is not None:
                _fit(view.console)
                view.update(render(board, monitor.exporter.url, phase["now"], log_path))

        monitor = Monitor(cfg, on_records=board.on_records, on_tick=tick, stop=stop)
        monitor.start_exporter()
        monitor.handle_signals()
        if prometheus:
            prom = _start_prometheus(monitor.exporter, work, say)
        say(f"starting Spark and the monitor job (metrics at {monitor.exporter.url}/metrics)...")
        code = monitor.serve()
        if code != 0:
            say(f"the monitor job failed (exit code {code}); its log: {log_path}")
            return 1
        for line in board.take_new():
            say(line)
        say(f"demo stopping: {board.generations} generations reconstructed")
        return 0
    except KeyboardInterrupt:  # a Ctrl-C before our handler was back in place
        say("demo stopping (interrupted)")
        return 0
    finally:
        stop.set()
        if view is not None:
            view.stop()
            view = None
            output.live = False  # from here on the lines go to the terminal in both modes
            say(f"demo stopping; the logs of this run are in {log_path}")
        if workload is not None and workload.is_alive():
            say("waiting for the running workload scenario to clean up its consumers...")
            workload.join(timeout=120)
        if second_workload is not None:
            second_workload.join(timeout=120)
        if new_types is not None:
            if new_types_run is not None:
                new_types_run.join(timeout=60)
            new_types.stop_all()
        if java_group is not None:
            if java_start is not None:
                java_start.join(timeout=120)
            java_group.stop()
        if monitor is not None:
            monitor.close(stop_spark=True)
        if prom is not None:
            prom.stop()
        for b in (second, broker):
            if b is not None:
                b.stop()
        for s, h in old.items():
            signal.signal(s, h)
        shutil.rmtree(work, ignore_errors=True)
        say("demo stopped; nothing left running")
        output.__exit__(None, None, None)


def _start_view(terminal):
    from rich.console import Console
    from rich.live import Live

    console = Console(file=terminal, force_terminal=True)
    _fit(console)
    view = Live(console=console, refresh_per_second=2, redirect_stdout=False, redirect_stderr=False, screen=True,
                vertical_overflow="crop")
    view.start()
    return view


def _fit(console) -> None:
    """The view's size is the terminal's (the process's own stdout is the log file by now)."""
    try:
        size = os.get_terminal_size(console.file.fileno())
        console.size = (size.columns, size.lines)
    except (OSError, ValueError, AttributeError):
        pass


def _run_workloads(bootstrap: str, events_topic: str, stop: threading.Event, phase: dict,
                   plan: tuple = SCENARIO_PLAN) -> None:
    from ..workload import run_scenario

    for name in plan:
        if stop.is_set():
            return
        phase["now"] = name
        try:
            run_scenario(name, bootstrap, events_topic, group=f"demo-{name}")
        except Exception as exc:  # noqa: BLE001 - keep the demo alive; say what went wrong
            log.warning("workload %s: %s", name, exc)
    if plan == SCENARIO_PLAN:
        phase["now"] = "done (the monitor keeps running)"


def _start_java(java_group) -> None:
    try:
        java_group.start()
    except Exception as exc:  # noqa: BLE001 - keep the demo alive; say what went wrong
        log.warning("the Java group: %s", exc)


def _start_prometheus(exporter, work: str, say):
    try:
        from ..testing.prometheus import PrometheusServer

        prom = PrometheusServer([f"127.0.0.1:{exporter.port}"]).start()
        say(f"Prometheus at {prom.url}")
        return prom
    except Exception as exc:  # noqa: BLE001
        say(f"Prometheus not started ({exc}); install it with `apt-get install prometheus`")
        return None
