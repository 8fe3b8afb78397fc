"""One Kafka cluster's part of the monitor: its Kafka probe, its streaming query (restarted from its own checkpoint
after each back-off step), its lag and broker pollers, all feeding the cluster's own metrics updater.

`MonitorService` (run.py) runs one `ClusterWatch` per configured cluster: in the calling thread when there is one
cluster, in a thread of its own each when there are several, on one SparkSession. A cluster that does not answer,
answers slowly or refuses the credentials only backs off its own watch (one log line per back-off step, prefixed
with the cluster's name when there are several); the others' queries keep running. A watch's
`rebalance_monitor_kafka_cluster_up` is 1 while its query runs and 0 while its Kafka does not answer or its query
is down; `..._last_read_timestamp_seconds` moves with each batch, and while the query is caught up. Several
clusters' queries start one at a time (`StartGate`), their restarts too.
"""
from __future__ import annotations

import logging
import threading
import time

from ..cluster_stamp import FIELD as CLUSTER_FIELD
from ..config import MonitorConfig
from .job import StreamingQueryJob
from .kafka_reach import Backoff, KafkaReach, one_line
from .sources import ConnectorMissing

log = logging.getLogger("rebalance_monitor.job")

HEALTHY_RUN_S = 120  # a query that ran this long restarts the back-off from its first step
STALE_MIN_S = 10.0  # a running query that read nothing for this long (or 3 triggers) has its cluster probed


class StartGate:
    """Several clusters' queries start one at a time (MonitorService has one when it watches several). A query's
    start spawns its Python Kafka source's runner process, which must connect back to the driver JVM within
    Spark's fixed 10 s (PythonWorkerFactory); ten queries starting together on a busy 2-core driver all missed
    it, again at every restart, their back-off steps keeping them together. A watch holds the gate from its
    query's start until its first batch's progress, its failure, `stop`, or `wait_s`."""

    def __init__(self, wait_s: float = 60.0):
        self.wait_s = wait_s
        self._lock = threading.Lock()
        self._holder = None
        self._since = 0.0

    def enter(self, watch, stop: threading.Event) -> bool:
        """Wait for the gate; False when `stop` was set first."""
        while not stop.is_set():
            if self._lock.acquire(timeout=0.5):
                self._holder, self._since = watch, time.monotonic()
                return True
        return False

    def held_by(self, watch) -> bool:
        return self._holder is watch

    def overdue(self) -> bool:
        return time.monotonic() - self._since > self.wait_s

    def leave(self, watch) -> None:
        """Leave it if `watch` holds it (leaving twice is nothing)."""
        if self._holder is watch:
            self._holder = None
            self._lock.release()


class ClusterLog(logging.LoggerAdapter):
    """The job's logger, each line prefixed with the cluster's name (`[prod-eu] ...`) when there are several."""

    def process(self, msg, kwargs):
        return f"[{self.extra['cluster']}] {msg}", kwargs


class ClusterWatch:
    """`service` (the `MonitorService`) provides `ensure_spark(job)` (the shared session, started once, in the
    thread that handles signals) and `ensure_exporting(job)` (the exporter's HTTP server, once every snapshot it
    serves was read); `stop` ends `serve`. Building it does no I/O."""

    def __init__(self, cfg: MonitorConfig, service, updater, stop: threading.Event, several: bool = False):
        self.cfg = cfg
        self.name = cfg.kafka.cluster_name
        self.service = service
        self.updater = updater
        self.stop = stop
        self.log = ClusterLog(log, {"cluster": self.name}) if several else log
        self.lag = self.facts = None
        self.reach = KafkaReach(cfg.kafka.connection(), cfg.kafka.client)
        # no batch read for this long while the query runs: probe the cluster (`_check_while_running`)
        self.stale_s = max(STALE_MIN_S, 3 * int(cfg.spark.trigger_interval) / 1000.0)
        self._last_read = self._last_probe = time.monotonic()
        self._up_while_running = True
        self.job = StreamingQueryJob(cfg, updater=updater, on_records=self._batch_records)

    # ---- the cluster's state, on its metrics ---------------------------------------------------------------
    def _kafka_up(self, up: bool) -> None:
        if self.updater is not None and hasattr(self.updater, "set_kafka_up"):
            self.updater.set_kafka_up(up)

    def _read_now(self) -> None:
        self._last_read = time.monotonic()
        if self.updater is not None and hasattr(self.updater, "note_kafka_read"):
            self.updater.note_kafka_read()

    def _check_while_running(self) -> None:
        """A running query whose batches stopped (a source waiting on a cluster that went away keeps its query
        alive) has its Kafka probed, at most once per `stale_s`: down is said once, with the client's error, and
        so is the return. Once said down, it is probed every `stale_s` until it answers, batches or not: the
        batches that resume when the cluster is back are not the probe's answer, and the cluster would stay down
        on its metrics while its query read."""
        now = time.monotonic()
        if now - self._last_probe < self.stale_s:
            return
        if self._up_while_running and now - self._last_read < self.stale_s:
            return
        self._last_probe = now
        error = self.reach.check()
        if error is not None and self._up_while_running:
            self.log.warning("%s", self.reach.reason(error, self.stale_s).replace("retrying in", "probing again in"))
        elif error is None and not self._up_while_running:
            self.log.info("Kafka at %s answers", self.reach.address)
        self._up_while_running = error is None
        self._kafka_up(error is None)

    def _batch_records(self, batch_id, records, dead_letters) -> None:
        """Each batch's output: the groups it names go to the broker poller (asked about at once when new); the
        service's `on_records` gets them with their `kafka_cluster`."""
        self._read_now()
        if self.facts is not None:
            self.facts.note_batch(records, event_time_ms=self.job.max_event_ms)
        on_records = self.service.on_records
        if on_records is not None:
            for r in records:  # as the sinks wrote them (cluster_stamp.py)
                r[CLUSTER_FIELD] = self.name
            on_records(batch_id, records, dead_letters)

    # ---- the loop ------------------------------------------------------------------------------------------
    def serve(self, once: bool = False) -> int:
        """Probe the cluster's Kafka (one line per back-off step while it does not answer), then start its lag
        and broker pollers and its query, and keep the query running until `stop`: a query that dies is restarted
        from its checkpoint after the next back-off step. `once`: run --once. The exit code: 0, 1 (failed),
        2 (no connector)."""
        cfg, job, updater, reach, stop, out = self.cfg, self.job, self.updater, self.reach, self.stop, self.log
        cadence = max(1.0, int(cfg.logging.progress_interval) / 1000.0)
        backoff = Backoff()
        while not stop.is_set():
            error = reach.check()
            if error is not None:
                delay = 0.0 if once else backoff.step()
                reason = reach.reason(error, delay)
                self._kafka_up(False)
                if updater is not None:
                    updater.set_ready(False, reason)
                if once:
                    out.error("run --once: %s", reason.rsplit("; retrying", 1)[0])
                    return 1
                out.warning("%s", reason)
                stop.wait(delay)
                continue
            if reach.failures:
                out.info("Kafka at %s answers", reach.address)
                reach.failures = 0
            if self.lag is None and cfg.lag.enabled and updater is not None:
                self.lag = _start_lag_poller(cfg, updater)
            if self.facts is None and not once:  # (run --once reads what its input held when it started)
                self.facts = _start_broker_facts(cfg, updater, job.input_idle)
            self.service.ensure_spark(job)
            self.service.ensure_exporting(job)
            started = time.monotonic()
            if once:
                return _run_once(job, out)
            gate = getattr(self.service, "start_gate", None)
            if gate is not None and not gate.enter(self, stop):
                break
            try:
                query = job.start()
            except ConnectorMissing as exc:  # configuration, not a passing failure: say so and stop
                out.error("%s", exc)
                return 2
            except Exception as exc:  # noqa: BLE001 - e.g. a sink that cannot be opened yet: retry
                failure = exc
            else:
                self._kafka_up(True)
                self._up_while_running, self._last_read = True, time.monotonic()
                failure = self._watch(query, cadence, gate)
            finally:
                if gate is not None:
                    gate.leave(self)
            if failure is None:
                break
            # The query died (broker unreachable, a sink's JVM error, ...): report it, wait, restart from the
            # checkpoint. Nothing is lost: offsets and state are only committed with completed batches.
            self._kafka_up(False)
            job.stop_query()
            if time.monotonic() - started > HEALTHY_RUN_S:
                backoff.reset()
            delay = backoff.step()
            reason = f"the query failed ({one_line(failure)}); restarting from the checkpoint in {delay:.0f} s"
            if updater is not None:
                updater.set_ready(False, reason)
            out.error("%s", reason)
            out.debug("the query's failure in full", exc_info=failure)
            stop.wait(delay)
        return 0

    def _watch(self, query, cadence: float, gate=None):
        """Wait while the query runs; log progress at `cadence`; leave the start `gate` at its first batch's
        progress. Returns its exception if it died, else None."""
        last_log = 0.0
        on_tick = self.service.on_tick
        while not self.stop.is_set():
            if not query.isActive:
                return query.exception()
            if gate is not None and gate.held_by(self) and (query.lastProgress or gate.overdue()):
                gate.leave(self)
            if time.monotonic() - last_log >= cadence:
                last_log = time.monotonic()
                _log_progress(query, self.job, self.log)
            self.job.refresh_liveness()
            if self.job.input_idle():
                self._read_now()
            self._check_while_running()
            if on_tick is not None:
                on_tick()
            self.stop.wait(0.5)
        return None

    def close_steps(self) -> list:
        """(what, how to stop it) of the cluster's parts, in the order they stop: the query and its sinks, the lag
        poller, the broker poller."""
        job, prefix = self.job, f"[{self.name}] " if self.log is not log else ""
        return [(f"{prefix}the query and its sinks", job.stop if job is not None else None),
                (f"{prefix}the broker offsets poller", self.lag.stop if self.lag is not None else None),
                (f"{prefix}the broker poller", self.facts.close if self.facts is not None else None)]


def _run_once(job: StreamingQueryJob, out=log) -> int:
    try:
        job.run_once()
    except ConnectorMissing as exc:
        out.error("%s", exc)
        return 2
    except Exception as exc:  # noqa: BLE001
        out.error("the run failed: %s", one_line(exc))
        out.debug("the run's failure in full", exc_info=exc)
        return 1
    return 0


def _log_progress(query, job: StreamingQueryJob, out=log) -> None:
    """The one progress line of an interval (logging.progress_interval)."""
    try:
        lp = query.lastProgress
    except Exception as exc:  # noqa: BLE001 - Spark going away under it: not worth a trace
        out.debug("no progress: %s", one_line(exc))
        return
    if not lp:
        out.info("no batch yet")
        return
    ops = lp.get("stateOperators") or [{}]
    st = job.stats
    dur = st.last_duration_s or 0.0
    unresolved = ""
    if st.unresolved_topic_ids:
        unresolved = (f"; unresolved_topic_id so far: {sum(st.unresolved_topic_ids.values())} references to "
                      f"{len(st.unresolved_topic_ids)} topic ids left as ids")
    out.info("batch %s: %s input records (%s decoded rows) in %.1f s, %.0f records/s; %s records read so far; "
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
