"""`rebalance-monitor run` (and the demo's monitor): the exporter, then each Kafka cluster's watch (its Kafka, then
Spark and its query, kept running).

1. The exporter starts first, so /healthz and /ready answer from the start (/ready says why it is not ready).
2. Each cluster's Kafka is probed with its settings (kafka_reach.py). While it does not answer, its watch logs one
   line per back-off step (1, 2, 4 ... 60 s) with the address and the client's error, /ready says so, and nothing
   else of that cluster starts: the clients' own connection lines are at DEBUG.
3. Once it answers: its broker offsets poller, its broker poller (broker_facts/: the brokers' group settings,
   published as events the job reads), Spark (once for every cluster), its query. A query that dies (a broker
   gone, a sink down) is logged in one line and restarted from its checkpoint after the next back-off step, Kafka
   probed first again; a query that ran for two minutes starts the back-off again from 1 s (cluster_watch.py).
   Several clusters each get a thread of their own, so one cluster's outage holds up no other.
4. SIGTERM/SIGINT stop it: each cluster's query (and its sinks), lag poller and broker poller, then the exporter,
   then Spark, in that order, one log line per step, exit code 0. Spark's JVM ignores SIGTERM (session.py), so a
   stop sent to the whole process group does not stop Spark under the running query.

`run --once` probes once and exits 1 when Kafka does not answer; it starts no broker poller (it reads what its input
held when it started, and writes nothing to it). `MonitorService` holds this order; `run_job` and the demo
(demo/) run it.
"""
from __future__ import annotations

import json
import logging
import signal
import threading
import time

from ..config import MonitorConfig, redacted
from .cluster_watch import ClusterWatch, StartGate
from .driver_jvm import end_session
from .kafka_reach import one_line

log = logging.getLogger("rebalance_monitor.job")


def run_job(cfg: MonitorConfig, once: bool = False) -> int:
    """`rebalance-monitor run`: log set-up, then the monitor (`MonitorService`) until SIGTERM/SIGINT (`once`: until it has
    processed what the input holds)."""
    from ..logs import config_secrets, configure_logging

    configure_logging(cfg.logging.level, config_secrets(cfg), cfg.logging.kafka_clients_level)
    from ..run_summary import config_summary, inputs_summary

    clusters = cfg.cluster_configs()
    for one in clusters:  # each cluster's own lines, named by it when there are several
        prefix = f"[{one.kafka.cluster_name}] " if len(clusters) > 1 else ""
        log.info("%s%s", prefix, config_summary(one))
        log.info("%s%s", prefix, inputs_summary(one))
    log.debug("the whole configuration: %s", json.dumps(redacted(cfg), default=str))
    monitor = MonitorService(cfg)
    monitor.start_exporter()
    monitor.handle_signals()
    try:
        return monitor.serve(once)
    finally:
        monitor.close(stop_spark=True)


class MonitorService:
    """The monitor's parts, started in order (exporter, then each cluster's Kafka probe, lag poller, Spark, query) and
    stopped in reverse, with the loops that keep each cluster's query running (cluster_watch.py); what `run` and
    the demo both run.

    Each configured cluster (`MonitorConfig.cluster_configs`) gets a `ClusterWatch` with its own metrics updater;
    one exporter serves them all (`kafka_cluster` is the first label of every series). One cluster is watched in
    the calling thread, as before; several each in a thread of their own, on one SparkSession, so that one
    cluster's outage holds up only its own watch; their queries start one at a time (cluster_watch.StartGate: each
    until its first batch's progress, at most a minute).

    `on_records(batch_id, records, dead_letters)` sees every batch's output (StreamingQueryJob); `on_tick()` is called
    every half second while a query runs; `stop` ends `serve` when set (SIGTERM/SIGINT set it, with
    `handle_signals`). Building it does no I/O."""

    def __init__(self, cfg: MonitorConfig, on_records=None, on_tick=None, stop: threading.Event | None = None):
        self.cfg = cfg
        self.on_records = on_records
        self.on_tick = on_tick
        self.stop = stop if stop is not None else threading.Event()
        self.exporter = None
        self.watches: list[ClusterWatch] = []
        self._signals = False  # handle_signals was called: again once Spark is up
        self._exporting = False  # the exporter's HTTP server is up
        self._spark_lock = threading.Lock()
        self.start_gate: StartGate | None = None

    # ---- the single cluster's parts, as before (the first cluster's when there are several) ------------------
    @property
    def job(self):
        return self.watches[0].job if self.watches else None

    @property
    def updater(self):
        return self.watches[0].updater if self.watches else None

    @property
    def lag(self):
        return self.watches[0].lag if self.watches else None

    @property
    def facts(self):
        return self.watches[0].facts if self.watches else None

    def start_exporter(self) -> None:
        """1. The exporter, so /healthz and /ready answer from the start, once the job has restored the persisted
        metrics (before /metrics first answers). A local checkpoint's snapshot is read now; one on S3 or HDFS
        is read through Hadoop's FileSystem API, so the exporter then starts with Spark (`ensure_exporting`)."""
        cfg = self.cfg
        clusters = cfg.cluster_configs()
        several = len(clusters) > 1
        updaters = [None] * len(clusters)
        if cfg.exporter.enabled:
            from ..metrics.exporter import ExporterSettings, MetricsExporter

            settings = ExporterSettings.from_config(cfg)
            updaters = [ExporterSettings.from_config(c).make_updater() for c in clusters] if several else [None]
            self.exporter = MetricsExporter(settings, updater=fleet_metrics(clusters, updaters)) if several \
                else MetricsExporter(settings)
            if not several:
                updaters = [self.exporter.updater]
        self.watches = [ClusterWatch(c, self, u, self.stop, several) for c, u in zip(clusters, updaters)]
        self.start_gate = StartGate() if several else None  # the clusters' queries start one at a time
        if self.exporter is None:
            return
        if all(w.job.checkpoint_is_local() for w in self.watches):
            from ..files import LocalFiles

            for w in self.watches:
                w.job.restore_metrics(files=LocalFiles())
            self._serve_metrics()
        else:
            log.info("the metrics snapshot is at %s: /metrics answers once Spark has read it",
                     cfg.state.checkpoint_location)

    def _serve_metrics(self) -> None:
        if self.exporter is not None and not self._exporting:
            self.exporter.start()
            self._exporting = True
            log.info("metrics at %s/metrics", self.exporter.url)

    def ensure_spark(self, job) -> None:
        """The one SparkSession, started on first use (PySpark replaces the SIGINT handler when its context
        starts: ours goes back); every cluster's query runs on it."""
        with self._spark_lock:
            if job.spark is not None:
                return
            first = next((w.job.spark for w in self.watches if w.job.spark is not None), None)
            if first is not None:
                job.plan.spark = first
                return
            job.session()
            if self._signals and threading.current_thread() is threading.main_thread():
                self.handle_signals()

    def ensure_exporting(self, job) -> None:
        """The exporter's HTTP server, once every cluster's snapshot was read (through Spark for S3 or HDFS)."""
        if self._exporting or self.exporter is None:
            return
        with self._spark_lock:
            for w in self.watches:
                if w.job.spark is None:
                    w.job.plan.spark = job.spark
                w.job.restore_metrics()
            self._serve_metrics()

    def handle_signals(self) -> None:
        """SIGTERM and SIGINT set `stop` (again once Spark is up: PySpark replaces the SIGINT handler)."""
        def _on_signal(signum, _frame):
            log.info("signal %s: stopping", signal.Signals(signum).name)
            self.stop.set()

        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)
        self._signals = True

    def serve(self, once: bool = False) -> int:
        """2.-5. Each cluster's watch (cluster_watch.py) until `stop`: probe its Kafka, start its pollers and its
        query, restart the query from its checkpoint after a failure. `once`: run --once, cluster after cluster.
        The exit code: 0, 1 (failed), 2 (no connector); with several clusters, the worst."""
        if not self.watches:
            self.start_exporter()
        if len(self.watches) == 1:
            return self.watches[0].serve(once)
        if once:
            return max(w.serve(once=True) for w in self.watches)
        # several clusters: Spark first, in this thread (the signals' thread), then one thread per cluster
        self.ensure_spark(self.watches[0].job)
        self.ensure_exporting(self.watches[0].job)
        codes: dict[str, int] = {}
        threads = [threading.Thread(target=self._serve_cluster, args=(w, codes), name=f"cluster-{w.name}",
                                    daemon=True) for w in self.watches]
        for t in threads:
            t.start()
        while not self.stop.is_set() and any(t.is_alive() for t in threads):
            self.stop.wait(0.5)
        for t in threads:
            t.join(timeout=1.0)
        return max(codes.values(), default=0)

    def _serve_cluster(self, watch: ClusterWatch, codes: dict) -> None:
        try:
            codes[watch.name] = watch.serve()
        except Exception as exc:  # noqa: BLE001 - one cluster's fault must not end the others' watches
            watch.log.error("the watch of this cluster stopped: %s", one_line(exc))
            watch.log.debug("the watch's failure in full", exc_info=exc)
            codes[watch.name] = 1

    def close(self, stop_spark: bool = False) -> None:
        """Stop in reverse order, one log line per step: each cluster's query (a running batch finishes first, for
        up to job.STOP_WAIT_S; past that it is cancelled, stays uncommitted and runs again at the next start) and
        its sinks, its lag poller and its broker poller; the exporter; and with `stop_spark` Spark (`run`, whose
        process ends; the demo). A step that fails is said in one line and the next still runs."""
        self.stop.set()
        steps = [step for w in self.watches for step in w.close_steps()]
        spark = next((w.job.spark for w in self.watches if w.job.spark is not None), None)
        steps += [("the metrics exporter", self.exporter.stop if self.exporter is not None and self._exporting
                   else None),
                  ("Spark", (lambda: end_session(spark)) if stop_spark and spark is not None else None)]
        for what, step in steps:
            if step is None:
                continue
            log.info("stopping %s", what)
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - say it, go on with the next step
                log.warning("stopping %s: %s", what, one_line(exc))
        for w in self.watches:
            st = getattr(w.job, "stats", None)
            if st is None:
                continue
            log.info("%sstopped after %s batches: %s records read, output records %s, dead letters %s",
                     f"[{w.name}] " if len(self.watches) > 1 else "", st.batches, st.records_read, st.records,
                     st.dead_letters)
        if not self.watches:
            log.info("stopped")


def fleet_metrics(clusters, updaters):
    """One exposition of several clusters' updaters (metrics/fleet_exposition.py)."""
    from ..metrics.fleet_exposition import exposition_of

    return exposition_of({c.kafka.cluster_name: u for c, u in zip(clusters, updaters)})


