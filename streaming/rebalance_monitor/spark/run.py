"""`rebalance-monitor run` (and the demo's monitor): the exporter, then Kafka, then Spark and the query, kept running.

1. The exporter starts first, so /healthz and /ready answer from the start (/ready says why it is not ready).
2. Kafka is probed with the monitor's settings (kafka_reach.py). While it does not answer, the job logs one line
   per back-off step (1, 2, 4 ... 60 s) with the address and the client's error, /ready is red with that line,
   and nothing else starts: the clients' own connection lines are at DEBUG.
3. Once it answers: the broker offsets poller, the broker poller (broker_facts/: the brokers' group settings,
   published as events the job reads), Spark (once), the query. A query that dies (a broker gone, a sink
   down) is logged in one line and restarted from its checkpoint after the next back-off step, Kafka probed
   first again; a query that ran for two minutes starts the back-off again from 1 s.

4. SIGTERM/SIGINT stop it: the query (and its sinks), the lag poller, the broker poller, the exporter, Spark, in that order, one log
   line per step, exit code 0. Spark's JVM ignores SIGTERM (session.py), so a stop sent to the whole process
   group does not stop Spark under the running query.

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
from .job import StreamingQueryJob
from .driver_jvm import end_session
from .kafka_reach import Backoff, KafkaReach, one_line
from .sources import ConnectorMissing

log = logging.getLogger("rebalance_monitor.job")

HEALTHY_RUN_S = 120  # a query that ran this long restarts the back-off from its first step


def run_job(cfg: MonitorConfig, once: bool = False) -> int:
    """`rebalance-monitor run`: log set-up, then the monitor (`MonitorService`) until SIGTERM/SIGINT (`once`: until it has
    processed what the input holds)."""
    from ..logs import config_secrets, configure_logging

    configure_logging(cfg.logging.level, config_secrets(cfg), cfg.logging.kafka_clients_level)
    from ..run_summary import config_summary, inputs_summary

    log.info("%s", config_summary(cfg))
    log.info("%s", inputs_summary(cfg))
    log.debug("the whole configuration: %s", json.dumps(redacted(cfg), default=str))
    monitor = MonitorService(cfg)
    monitor.start_exporter()
    monitor.handle_signals()
    try:
        return monitor.serve(once)
    finally:
        monitor.close(stop_spark=True)


class MonitorService:
    """The monitor's parts, started in order (exporter, Kafka probe, lag poller, Spark, query) and stopped in
    reverse, with the loop that keeps the query running; what `run` and the demo both run.

    `on_records(batch_id, records, dead_letters)` sees every batch's output (StreamingQueryJob); `on_tick()` is called
    every half second while the query runs; `stop` ends `serve` when set (SIGTERM/SIGINT set it, with
    `handle_signals`). Building it does no I/O."""

    def __init__(self, cfg: MonitorConfig, on_records=None, on_tick=None, stop: threading.Event | None = None):
        self.cfg = cfg
        self.on_records = on_records
        self.on_tick = on_tick
        self.stop = stop if stop is not None else threading.Event()
        self.exporter = self.updater = self.job = self.lag = self.facts = None
        self.reach = KafkaReach(cfg.kafka.connection(), cfg.kafka.client)
        self._signals = False  # handle_signals was called: again once Spark is up
        self._exporting = False  # the exporter's HTTP server is up

    def start_exporter(self) -> None:
        """1. The exporter, so /healthz and /ready answer from the start, once the job has restored the persisted
        metrics (before /metrics first answers). A local checkpoint's snapshot is read now; one on S3 or HDFS
        is read through Hadoop's FileSystem API, so the exporter then starts with Spark (`serve`)."""
        cfg = self.cfg
        if cfg.exporter.enabled:
            from ..metrics.exporter import ExporterSettings, MetricsExporter

            settings = ExporterSettings.from_config(cfg)
            self.exporter = MetricsExporter(settings)
            self.updater = self.exporter.updater
        self.job = StreamingQueryJob(cfg, updater=self.updater, on_records=self._batch_records)
        if self.exporter is None:
            return
        if self.job.checkpoint_is_local():
            from ..files import LocalFiles

            self.job.restore_metrics(files=LocalFiles())
            self._serve_metrics()
        else:
            log.info("the metrics snapshot is at %s: /metrics answers once Spark has read it",
                     cfg.state.checkpoint_location)

    def _batch_records(self, batch_id, records, dead_letters) -> None:
        """Each batch's output: the groups it names go to the broker poller (asked about at once when new)."""
        if self.facts is not None:
            self.facts.note_batch(records, event_time_ms=self.job.max_event_ms if self.job is not None else None)
        if self.on_records is not None:
            self.on_records(batch_id, records, dead_letters)

    def _serve_metrics(self) -> None:
        if self.exporter is not None and not self._exporting:
            self.exporter.start()
            self._exporting = True
            log.info("metrics at %s/metrics", self.exporter.url)

    def handle_signals(self) -> None:
        """SIGTERM and SIGINT set `stop` (again once Spark is up: PySpark replaces the SIGINT handler)."""
        def _on_signal(signum, _frame):
            log.info("signal %s: stopping", signal.Signals(signum).name)
            self.stop.set()

        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)
        self._signals = True

    def serve(self, once: bool = False) -> int:
        """2.-5. Probe Kafka (one line per back-off step while it does not answer), then start the lag poller,
        Spark and the query, and keep the query running until `stop`: a query that dies is restarted from its
        checkpoint after the next back-off step. `once`: run --once. The exit code: 0, 1 (failed), 2 (no
        connector)."""
        cfg, job, updater, reach, stop = self.cfg, self.job, self.updater, self.reach, self.stop
        cadence = max(1.0, int(cfg.logging.progress_interval) / 1000.0)
        backoff = Backoff()
        while not stop.is_set():
            error = reach.check()
            if error is not None:
                delay = 0.0 if once else backoff.step()
                reason = reach.reason(error, delay)
                if updater is not None:
                    updater.set_ready(False, reason)
                if once:
                    log.error("run --once: %s", reason.rsplit("; retrying", 1)[0])
                    return 1
                log.warning("%s", reason)
                stop.wait(delay)
                continue
            if reach.failures:
                log.info("Kafka at %s answers", reach.address)
                reach.failures = 0
            if self.lag is None and cfg.lag.enabled and updater is not None:
                self.lag = _start_lag_poller(cfg, updater)
            if self.facts is None and not once:  # (run --once reads what its input held when it started)
                self.facts = _start_broker_facts(cfg, updater, job.input_idle)
            if job.spark is None:
                job.session()  # PySpark replaces the SIGINT handler when its context starts
                if self._signals:
                    self.handle_signals()
            if not self._exporting and self.exporter is not None:
                job.restore_metrics()  # a checkpoint on S3 or HDFS: through Hadoop's FileSystem API
                self._serve_metrics()
            started = time.monotonic()
            if once:
                return _run_once(job)
            try:
                query = job.start()
            except ConnectorMissing as exc:  # configuration, not a passing failure: say so and stop
                log.error("%s", exc)
                return 2
            except Exception as exc:  # noqa: BLE001 - e.g. a sink that cannot be opened yet: retry
                failure = exc
            else:
                failure = self._watch(query, cadence)
            if failure is None:
                break
            # The query died (broker unreachable, a sink's JVM error, ...): report it, wait, restart from the
            # checkpoint. Nothing is lost: offsets and state are only committed with completed batches.
            job.stop_query()
            if time.monotonic() - started > HEALTHY_RUN_S:
                backoff.reset()
            delay = backoff.step()
            reason = f"the query failed ({one_line(failure)}); restarting from the checkpoint in {delay:.0f} s"
            if updater is not None:
                updater.set_ready(False, reason)
            log.error("%s", reason)
            log.debug("the query's failure in full", exc_info=failure)
            stop.wait(delay)
        return 0

    def _watch(self, query, cadence: float):
        """Wait while the query runs; log progress at `cadence`. Returns its exception if it died, else None."""
        last_log = 0.0
        while not self.stop.is_set():
            if not query.isActive:
                return query.exception()
            if time.monotonic() - last_log >= cadence:
                last_log = time.monotonic()
                _log_progress(query, self.job)
            self.job.refresh_liveness()
            if self.on_tick is not None:
                self.on_tick()
            self.stop.wait(0.5)
        return None

    def close(self, stop_spark: bool = False) -> None:
        """Stop in reverse order, one log line per step: the query (a running batch finishes first, for up to
        job.STOP_WAIT_S; past that it is cancelled, stays uncommitted and runs again at the next start) and its
        sinks, the lag poller, the exporter, and with
        `stop_spark` Spark (`run`, whose process ends; the demo). A step that fails is said in one line and the
        next still runs."""
        job = self.job
        steps = [("the query and its sinks", job.stop if job is not None else None),
                 ("the broker offsets poller", self.lag.stop if self.lag is not None else None),
                 ("the broker poller", self.facts.close if self.facts is not None else None),
                 ("the metrics exporter", self.exporter.stop if self.exporter is not None and self._exporting
                  else None),
                 ("Spark", (lambda: end_session(job.spark)) if stop_spark and job is not None and job.spark is not None
                  else None)]
        for what, step in steps:
            if step is None:
                continue
            log.info("stopping %s", what)
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - say it, go on with the next step
                log.warning("stopping %s: %s", what, one_line(exc))
        st = getattr(job, "stats", None)
        if st is not None:
            log.info("stopped after %s batches: %s records read, output records %s, dead letters %s", st.batches,
                     st.records_read, st.records, st.dead_letters)
        else:
            log.info("stopped")


def _run_once(job: StreamingQueryJob) -> int:
    try:
        job.run_once()
    except ConnectorMissing as exc:
        log.error("%s", exc)
        return 2
    except Exception as exc:  # noqa: BLE001
        log.error("the run failed: %s", one_line(exc))
        log.debug("the run's failure in full", exc_info=exc)
        return 1
    return 0


def _log_progress(query, job: StreamingQueryJob) -> None:
    """The one progress line of an interval (logging.progress_interval)."""
    try:
        lp = query.lastProgress
    except Exception as exc:  # noqa: BLE001 - Spark going away under it: not worth a trace
        log.debug("no progress: %s", one_line(exc))
        return
    if not lp:
        log.info("no batch yet")
        return
    ops = lp.get("stateOperators") or [{}]
    st = job.stats
    dur = st.last_duration_s or 0.0
    unresolved = ""
    if st.unresolved_topic_ids:
        unresolved = (f"; unresolved_topic_id so far: {sum(st.unresolved_topic_ids.values())} references to "
                      f"{len(st.unresolved_topic_ids)} topic ids left as ids")
    log.info("batch %s: %s input records (%s decoded rows) in %.1f s, %.0f records/s; %s records read so far; "
             "state rows %s, watermark %s, output records %s, dead letters %s%s", st.last_batch_id, st.last_read,
             lp.get("numInputRows"), dur, st.last_read / dur if dur > 0 else 0.0, st.records_read,
             ops[0].get("numRowsTotal"), (lp.get("eventTime") or {}).get("watermark"), st.records, st.dead_letters,
             unresolved)


def _start_lag_poller(cfg: MonitorConfig, updater):
    from ..metrics.broker_offsets import BrokerOffsets, BrokerOffsetsPoller

    try:
        conf = cfg.kafka.connection().kafka_python()
        bootstrap = conf.pop("bootstrap_servers")
        conf.pop("client_id", None)
        poller = BrokerOffsetsPoller(updater, BrokerOffsets(bootstrap, **conf),
                                     interval_s=int(cfg.lag.broker_poll_interval) / 1000.0)
        poller.start()
        return poller
    except Exception as exc:  # noqa: BLE001 - lag from brokers is optional; records still feed it
        log.warning("broker offsets poller not started: %s", one_line(exc))
        return None


def _start_broker_facts(cfg: MonitorConfig, updater, input_idle=None):
    """The broker poller (broker_facts/): what the brokers know of groups, published where the job reads it."""
    from ..broker_facts.poller import start_poller

    try:
        return start_poller(cfg, updater, input_idle)
    except Exception as exc:  # noqa: BLE001 - the configuration's fallback then applies, and records say so
        log.warning("broker poller not started (the configuration's fallback applies): %s", one_line(exc))
        return None
