"""`rebalance-monitor demo`: the whole system on one machine, with nothing configured.

Starts Apache Kafka (one KRaft node from the jars scripts/bootstrap.sh fetched) on free loopback ports, runs
real instrumented consumer groups through a rebalance storm, a crash and a steady phase, runs the real Spark job
and the Prometheus exporter on them, reads committed and end offsets from the broker for lag, and shows a live
view. Ctrl-C (or --duration) stops everything and leaves no process behind.
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


class DemoError(RuntimeError):
    pass


def preflight() -> None:
    """Say exactly what to install when something the demo needs is missing."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise DemoError("Java 17 is required by Spark: `apt-get install openjdk-17-jre-headless` "
                        "(or run scripts/bootstrap.sh, which installs it)")
    missing = []
    from .testing.kafka_install import KafkaNotInstalled, kafka_home

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


class DivertedOutput:
    """While the live view runs, the terminal shows nothing but the view: this process's file descriptors 1 and
    2 (and so the JVM's, Kafka's, the Python workers' and every client library's output, which inherit them)
    go to a log file; the view is drawn on a copy of the terminal kept aside."""

    def __init__(self, log_path: str):
        self.log_path = log_path
        self.terminal = None
        self._saved: tuple[int, int] | None = None

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self._saved = (os.dup(1), os.dup(2))
        self.terminal = os.fdopen(os.dup(1), "w", buffering=1)
        fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        return self

    def __exit__(self, *exc) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        if self._saved is not None:
            os.dup2(self._saved[0], 1)
            os.dup2(self._saved[1], 2)
            for fd in self._saved:
                os.close(fd)
            self._saved = None
        if self.terminal is not None:
            self.terminal.close()
            self.terminal = None


def run_demo(duration_s: float | None = None, prometheus: bool = False, port: int = 9308, live: bool = True) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        preflight()
    except DemoError as exc:
        print(f"rebalance-monitor demo: {exc}", file=sys.stderr)
        return 2
    from .config import load_config
    from .demo_view import GroupBoard, lag_by_group, render
    from .spark.run import Monitor
    from .testing.broker import Broker
    from .testing.kafka_install import KAFKA_VERSION
    from .testing.processes import free_port

    work = tempfile.mkdtemp(prefix="rebalance-monitor-demo-")
    live = live and sys.stdout.isatty()
    # the live view owns the terminal: everything else is written to a log file it names
    log_path = os.path.join(tempfile.gettempdir(), f"rebalance-monitor-demo-{os.getpid()}.log")
    diverted = DivertedOutput(log_path) if live else None
    stop = threading.Event()
    phase = {"now": "starting"}

    def _on_signal(signum, _frame):
        stop.set()

    # the monitor installs its own (which set `stop` too) once its exporter is up, and again once Spark is
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    broker = monitor = prom = None
    workload = None
    view = None
    try:
        if diverted is not None:
            diverted.__enter__()
            view = _start_view(diverted.terminal)
            view.update(render(GroupBoard(), "...", "starting Apache Kafka and Spark", log_path))
        print(f"starting Apache Kafka {KAFKA_VERSION}...", flush=True)
        broker = Broker(log_path=os.path.join(work, "broker.log"), work_dir=os.path.join(work, "kafka")).start()
        print(f"broker at {broker.bootstrap}", flush=True)
        events_topic = "rebalance-events"
        broker.create_topics({events_topic: 1})
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
            "spark.local_dir": os.path.join(work, "spark")})
        board = GroupBoard()
        deadline = time.monotonic() + duration_s if duration_s else None
        shown = 0

        def tick() -> None:
            """While the monitor's query runs: the workload started once, the view or the log lines shown."""
            nonlocal workload, shown
            if workload is None:
                workload = threading.Thread(target=_run_workloads, args=(broker.bootstrap, events_topic, stop, phase),
                                            name="demo-workload", daemon=True)
                workload.start()
            if deadline is not None and time.monotonic() >= deadline:
                stop.set()
            if view is not None:
                board.set_lag(lag_by_group(monitor.updater))
                _fit(view.console)
                view.update(render(board, monitor.exporter.url, phase["now"], log_path))
                return
            with board.lock:
                new = board.log[shown - len(board.log):] if shown else list(board.log)
                shown = len(board.log)
            for line in new:
                print(line, flush=True)
            board.set_lag(lag_by_group(monitor.updater))
            for line in board.lag_changes():
                print(line, flush=True)

        monitor = Monitor(cfg, on_records=board.on_records, on_tick=tick, stop=stop)
        monitor.start_exporter()
        monitor.handle_signals()
        if prometheus:
            prom = _start_prometheus(monitor.exporter, work)
        print(f"starting Spark and the monitor job (metrics at {monitor.exporter.url}/metrics)...", flush=True)
        code = monitor.serve()
        if code != 0:
            print(f"the monitor job failed (exit code {code}); its log: {log_path}", file=sys.stderr)
            return 1
        print(f"demo stopping: {board.generations} generations reconstructed", flush=True)
        return 0
    except KeyboardInterrupt:  # a Ctrl-C before our handler was back in place
        print("demo stopping (interrupted)", flush=True)
        return 0
    finally:
        stop.set()
        if view is not None:
            view.stop()
        if diverted is not None:
            diverted.__exit__(None, None, None)
            print(f"demo stopping; the logs of this run are in {log_path}", flush=True)
        if workload is not None and workload.is_alive():
            print("waiting for the running workload scenario to clean up its consumers...", flush=True)
            workload.join(timeout=120)
        if monitor is not None:
            monitor.close(stop_spark=True)
        if prom is not None:
            prom.stop()
        if broker is not None:
            broker.stop()
        for s, h in old.items():
            signal.signal(s, h)
        shutil.rmtree(work, ignore_errors=True)
        print("demo stopped; nothing left running", flush=True)


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


def _run_workloads(bootstrap: str, events_topic: str, stop: threading.Event, phase: dict) -> None:
    from .workload import run_scenario

    for name in SCENARIO_PLAN:
        if stop.is_set():
            return
        phase["now"] = name
        try:
            run_scenario(name, bootstrap, events_topic, group=f"demo-{name}")
        except Exception as exc:  # noqa: BLE001 - keep the demo alive; say what went wrong
            log.warning("workload %s: %s", name, exc)
    phase["now"] = "done (the monitor keeps running)"


def _start_prometheus(exporter, work: str):
    try:
        from .testing.prometheus import PrometheusServer

        prom = PrometheusServer([f"127.0.0.1:{exporter.port}"]).start()
        print(f"Prometheus at {prom.url}", flush=True)
        return prom
    except Exception as exc:  # noqa: BLE001
        print(f"Prometheus not started ({exc}); install it with `apt-get install prometheus`", flush=True)
        return None
