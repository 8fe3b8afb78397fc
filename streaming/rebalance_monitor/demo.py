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


class GroupBoard:
    """What the live view shows, kept from the job's output records."""

    def __init__(self):
        self.lock = threading.Lock()
        self.groups: dict[str, dict] = {}
        self.log: list[str] = []
        self.generations = 0

    def on_records(self, batch_id, records, dead) -> None:
        with self.lock:
            for r in records:
                g = r.get("group")
                if not g:
                    continue
                row = self.groups.setdefault(g, {"state": "?", "generation": None, "members": 0,
                                                 "cause": "", "storm": False, "timeouts": 0, "lag": None})
                kind = r["kind"]
                if kind == "group_status":
                    row.update(state=r["state"], generation=r["generation"], members=r["members"],
                               storm=r["in_storm"])
                elif kind == "generation":
                    self.generations += 1
                    causes = ", ".join(
                        c["cause"] + (f" ({c.get('client_id') or c.get('member_id')})"
                                      if c.get("client_id") or c.get("member_id") else "") for c in r["causes"])
                    row.update(generation=r["generation"], cause=causes)
                    dur = f"{r['duration_ms']} ms" if r["duration_ms"] is not None else "?"
                    self._say(f"generation {r['generation']} of {g}: {len(r['members'])} members, "
                              f"{dur}, caused by {causes}; moved {r['partitions_moved']}, "
                              f"mismatched {r['mismatched_partitions']}")
                elif kind == "member_timeout":
                    row["timeouts"] += 1
                    self._say(f"{r['timeout']} timeout of {r['member_id']} in {g} "
                              f"(last seen {r['last_seen_ms']}, deadline {r['deadline_ms']})")
                elif kind == "storm":
                    row["storm"] = r["ended_ms"] is None
                    what = "started" if r["ended_ms"] is None else "ended"
                    self._say(f"storm {what} in {g}: {r['rebalances']} rebalances in {r['window_ms'] // 1000} s")

    def _say(self, line: str) -> None:
        self.log.append(f"{time.strftime('%H:%M:%S')} {line}")
        del self.log[:-12]

    def set_lag(self, lags: dict[str, tuple]) -> None:
        """{group: (offset lag, time lag in seconds or None)} from the exporter."""
        with self.lock:
            for g, v in lags.items():
                if g in self.groups:
                    self.groups[g]["lag"] = v

    def lag_changes(self) -> list[str]:
        """One line per group whose lag changed since the last call (the plain view's lag column)."""
        out = []
        with self.lock:
            for g, row in sorted(self.groups.items()):
                lag = row.get("lag")
                if lag is not None and lag != row.get("lag_said"):
                    row["lag_said"] = lag
                    out.append(f"{time.strftime('%H:%M:%S')} lag of {g}: {_lag_text(lag)}")
        return out


def _lag_text(lag) -> str:
    if lag is None:
        return "-"
    offsets, seconds = lag
    return f"{offsets} records" + (f", {seconds:.1f} s behind" if seconds is not None else "")


def _render(board: GroupBoard, url: str, phase: str):
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table

    t = Table(title="consumer groups", expand=True)
    for col in ("group", "state", "gen", "members", "last cause", "storm", "timeouts", "lag"):
        t.add_column(col)
    with board.lock:
        for name, r in sorted(board.groups.items()):
            t.add_row(name, r["state"], str(r["generation"]), str(r["members"]), r["cause"][:60],
                      "[bold red]STORM[/]" if r["storm"] else "-", str(r["timeouts"]),
                      _lag_text(r["lag"]))
        lines = "\n".join(board.log) or "waiting for the first generation..."
    return Group(Panel(f"metrics: {url}/metrics   workload: {phase}   (Ctrl-C to stop)"), t,
                 Panel(lines, title="what happened"))


def _lag_by_group(updater) -> dict[str, tuple]:
    """{group: (offset lag, time lag in seconds or None)} as the exporter shows them."""
    offsets: dict[str, int] = {}
    seconds: dict[str, float] = {}
    try:
        from prometheus_client.parser import text_string_to_metric_families

        for fam in text_string_to_metric_families(updater.render()):
            if fam.name == "kafka_consumergroup_lag_sum":
                for s in fam.samples:
                    offsets[s.labels["group"]] = int(s.value)
            elif fam.name == "kafka_consumergroup_lag_seconds":
                for s in fam.samples:
                    seconds[s.labels["group"]] = float(s.value)
    except Exception:  # noqa: BLE001 - the view is best effort
        pass
    return {g: (v, seconds.get(g)) for g, v in offsets.items()}


def run_demo(duration_s: float | None = None, prometheus: bool = False, port: int = 9308, live: bool = True) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        preflight()
    except DemoError as exc:
        print(f"rebalance-monitor demo: {exc}", file=sys.stderr)
        return 2
    from .config import load_config
    from .metrics.exporter import ExporterSettings, MetricsExporter
    from .spark.job import MonitorJob
    from .metrics.broker_offsets import BrokerOffsets, BrokerOffsetsPoller
    from .testing.broker import Broker, free_port
    from .testing.kafka_install import KAFKA_VERSION

    work = tempfile.mkdtemp(prefix="rebalance-monitor-demo-")
    stop = threading.Event()
    phase = {"now": "starting"}

    def _on_signal(signum, _frame):
        stop.set()

    # installed again once Spark is up: PySpark replaces the SIGINT handler when its context starts
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    broker = exporter = job = prom = poller = None
    workload = None
    try:
        print(f"starting Apache Kafka {KAFKA_VERSION}...", flush=True)
        broker = Broker(log_path=os.path.join(work, "broker.log"), work_dir=os.path.join(work, "kafka")).start()
        print(f"broker at {broker.bootstrap}", flush=True)
        events_topic = "rebalance-events"
        broker.create_topics({events_topic: 1})
        if port == 0 or not _port_free(port):
            port = free_port()
        exporter = MetricsExporter(ExporterSettings(host="127.0.0.1", port=port)).start()
        cfg = load_config(env={}, overrides={
            "kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": events_topic,
            "kafka.starting_offsets": "earliest", "kafka.connector": "python",
            "spark.trigger_interval": "2s", "state.watermark_delay": "1s",
            "state.checkpoint_location": os.path.join(work, "checkpoint"),
            "sinks.history.parquet_path": os.path.join(work, "history"),
            "sinks.dead_letter.path": os.path.join(work, "dead-letter"),
            "storm.window": "2m", "storm.min_rebalances": 4,
            "spark.local_dir": os.path.join(work, "spark")})
        board = GroupBoard()
        print(f"starting Spark and the monitor job (metrics at {exporter.url}/metrics)...", flush=True)
        job = MonitorJob(cfg, updater=exporter.updater, on_records=board.on_records)
        query = job.start()
        # lag: committed and log-end offsets from the broker, every few seconds
        poller = BrokerOffsetsPoller(exporter.updater, BrokerOffsets(broker.bootstrap), interval_s=3.0).start()
        for s_ in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s_, _on_signal)
        if prometheus:
            prom = _start_prometheus(exporter, work)
        workload = threading.Thread(target=_run_workloads, args=(broker.bootstrap, events_topic, stop, phase),
                                    name="demo-workload", daemon=True)
        workload.start()
        deadline = time.monotonic() + duration_s if duration_s else None
        if live and sys.stdout.isatty():
            from rich.live import Live

            with Live(_render(board, exporter.url, phase["now"]), refresh_per_second=2) as view:
                while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
                    if not query.isActive:
                        break
                    board.set_lag(_lag_by_group(exporter.updater))
                    view.update(_render(board, exporter.url, phase["now"]))
                    stop.wait(0.5)
        else:
            shown = 0
            while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
                if not query.isActive:
                    break
                with board.lock:
                    new = board.log[shown - len(board.log):] if shown else list(board.log)
                    shown = len(board.log)
                for line in new:
                    print(line, flush=True)
                lags = _lag_by_group(exporter.updater)
                board.set_lag(lags)
                for line in board.lag_changes():
                    print(line, flush=True)
                stop.wait(1.0)
        exc = query.exception() if not query.isActive else None
        if exc is not None:
            print(f"the monitor job failed: {exc}", file=sys.stderr)
            return 1
        print(f"demo stopping: {board.generations} generations reconstructed", flush=True)
        return 0
    except KeyboardInterrupt:  # a Ctrl-C before our handler was back in place
        print("demo stopping (interrupted)", flush=True)
        return 0
    finally:
        stop.set()
        if workload is not None and workload.is_alive():
            print("waiting for the running workload scenario to clean up its consumers...", flush=True)
            workload.join(timeout=120)
        if poller is not None:
            poller.stop()
        if job is not None:
            job.stop()
            if job.spark is not None:
                job.spark.stop()
        if prom is not None:
            prom.stop()
        if exporter is not None:
            exporter.stop()
        if broker is not None:
            broker.stop()
        for s, h in old.items():
            signal.signal(s, h)
        shutil.rmtree(work, ignore_errors=True)
        print("demo stopped; nothing left running", flush=True)


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
