"""`rebalance-monitor run`: the Spark Structured Streaming job.

    Kafka (Spark's connector, or the Python source) ─► decode (mapInArrow, or in the Python source)
      ─► watermark ─► groupBy(group).transformWithState(GroupProcessor, ProcessingTime)
      ─► foreachBatch on the driver: metrics updater / exporter, history sink, dead-letter sink

In processing-time mode Spark runs a batch at every trigger, with or without input, and fires the groups' timers
then; each group keeps its own clock in event time (core/group_clock.py). Nothing else moves time: no side
files, no second source, no thread of the driver's.
"""
from __future__ import annotations

import json
import logging
import signal
import threading
import time
from dataclasses import dataclass, field

from ..config import MonitorConfig, jar_files, redacted
from ..core.events import loads_json
from .decode_stage import DECODED_SCHEMA, WAKE_KEY, make_decoder
from .hadoop_fs import join
from .kafka_source import ConnectorMissing
from .processor import CLOCK_KIND, OUTPUT_SCHEMA, GroupProcessor

log = logging.getLogger("rebalance_monitor.job")

ONCE_TRIGGER_MS = 200  # `run --once`: its batches follow one another this closely


class SinkUnavailable(RuntimeError):
    pass


HISTORY_KINDS = ("generation", "member_timeout", "storm", "rebalance_started", "group_deleted", "coordinator")


def kafka_settings(cfg: MonitorConfig) -> dict:
    """Neutral client settings (see spark.kafka_clients) for every Kafka client the monitor creates."""
    sec = cfg.kafka.security
    out = {"bootstrap": cfg.kafka.bootstrap_servers, "security_protocol": sec.protocol}
    for key, value in (("sasl_mechanism", sec.sasl_mechanism), ("sasl_username", sec.sasl_username),
                       ("sasl_password", sec.sasl_password), ("ssl_cafile", sec.ssl_cafile),
                       ("ssl_certfile", sec.ssl_certfile), ("ssl_keyfile", sec.ssl_keyfile),
                       ("ssl_key_password", sec.ssl_password)):
        if value is not None:
            out[key] = value
    return out


def topic_sources(cfg: MonitorConfig) -> dict[str, str]:
    sources = {t: "events" for t in cfg.events_topics()}
    if cfg.kafka.coordinator_log_topic:
        sources[cfg.kafka.coordinator_log_topic] = "coordinator-log"
    if cfg.kafka.offsets_topic:
        sources[cfg.kafka.offsets_topic] = "offsets-topic"
    return sources


def source_options(cfg: MonitorConfig) -> dict:
    s = kafka_settings(cfg)
    opts = {
        "kafka.bootstrap.servers": s["bootstrap"],
        "subscribe": ",".join(topic_sources(cfg)),
        "startingOffsets": cfg.kafka.starting_offsets,
        "maxOffsetsPerTrigger": str(cfg.kafka.max_offsets_per_trigger),
        "failOnDataLoss": "false",
        "client": cfg.kafka.client,
        "kafka.security.protocol": s["security_protocol"],
    }
    for neutral, option in (("sasl_mechanism", "kafka.sasl.mechanism"), ("sasl_username", "kafka.sasl.username"),
                            ("sasl_password", "kafka.sasl.password"), ("ssl_cafile", "kafka.ssl.cafile"),
                            ("ssl_certfile", "kafka.ssl.certfile"), ("ssl_keyfile", "kafka.ssl.keyfile"),
                            ("ssl_key_password", "kafka.ssl.key.password")):
        if neutral in s:
            opts[option] = s[neutral]
    return opts


@dataclass
class JobStats:
    batches: int = 0
    records: dict = field(default_factory=dict)
    dead_letters: dict = field(default_factory=dict)
    last_batch_id: int = -1
    records_read: int = 0
    last_read: int = 0  # Kafka records of the last batch
    last_duration_s: float = 0.0  # of the last batch's driver step


class MonitorJob:
    """Builds and runs the streaming query. `on_records(batch_id, records)` receives every batch's output
    records (after the sinks), e.g. for the demo's live view or for tests."""

    def __init__(self, cfg: MonitorConfig, spark=None, updater=None, on_records=None, idle_clock: bool = True):
        self.cfg = cfg
        # while the input is idle, a group's clock follows the wall clock (state.idle_clock, and this flag)
        self.idle_clock = idle_clock
        self.spark = spark
        self.updater = updater
        self.on_records = on_records
        self.query = None
        self.stats = JobStats()
        self.sinks = None
        self._max_event_ms: int | None = None  # the highest event time the decoded batches reported
        self._stopping = threading.Event()
        # the exported counters outlive the process: a snapshot beside the query's checkpoint (metrics/state_file.py),
        # loaded by restore_metrics (it needs the session: every file goes through Hadoop's FileSystem API)
        self.metrics_state = None
        self._files = None

    @property
    def query_checkpoint(self) -> str:
        """The Spark query's checkpoint directory: `query` inside `state.checkpoint_location` (a path or a URI)."""
        return join(self.cfg.state.checkpoint_location, "query")

    def files(self):
        """The job's own durable files (metrics snapshot, history and dead-letter files) go through Hadoop's
        FileSystem API of the session, wherever the checkpoint is: local, file://, s3a://, hdfs://."""
        if self._files is None:
            from .hadoop_fs import HadoopFiles

            self._files = HadoopFiles(self._session())
        return self._files

    def restore_metrics(self) -> bool:
        """Load the exported-metrics snapshot into the updater, once (before /metrics first answers: a scrape
        of counters the snapshot would raise again looks like a reset to Prometheus). Starts the session."""
        if self.metrics_state is not None or self.updater is None or not self.cfg.exporter.persist_state:
            return False
        from ..metrics.state_file import METRICS_STATE_FILE, MetricsStateFile

        files = self.files()
        self.metrics_state = MetricsStateFile(join(self.cfg.state.checkpoint_location, METRICS_STATE_FILE),
                                              self.query_checkpoint, files=files)
        log.info("metrics snapshot at %s", files.describe(self.metrics_state.path))
        return self.metrics_state.load(self.updater)

    # --- building -----------------------------------------------------------------------------
    def _session(self):
        if self.spark is None:
            from .session import build_session

            c = self.cfg.spark
            self.spark = build_session(master=c.master, app_name=c.app_name, local_dir=c.local_dir,
                                       shuffle_partitions=c.shuffle_partitions, extra_conf=c.conf,
                                       jars=jar_files(c.jars_dir) if c.jars_dir else ())
        self.spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        return self.spark

    def build(self, flush_to_ms: int | None = None, once: bool = False, whole_input: bool = False,
              drain: bool = False):
        """The query's plan. `once` (`run --once`): every group with anything pending wakes up at every
        trigger; no clock follows the wall clock or Spark's watermark. `whole_input`: what the input holds is
        read in one batch, as replay reads it (maxOffsetsPerTrigger splits a backlog by record count, so one
        topic's batch may run ahead of another's in time, and a group's events from the slower topic are then
        late). `flush_to_ms`: every group's clock is at least there. `drain`: in the batch after the one that
        read the input, every group moves to the input's highest event time (`run_once`)."""
        from .kafka_source import is_decoded, kafka_stream

        spark = self._session()
        cfg = self.cfg
        options = source_options(cfg)
        if whole_input:
            options.pop("maxOffsetsPerTrigger", None)
        decode = {"topics": topic_sources(cfg), "max_bytes": cfg.kafka.max_record_bytes,
                  "max_future_ms": int(cfg.kafka.max_future_skew)}
        keep = cfg.group_filter()
        if keep is not None:  # groups.allow/deny: applied in the decode stage, before any state is kept
            decode["groups"] = keep.to_options()
        if cfg.kafka.decode_in_source:
            options["decode"] = json.dumps(decode)
        raw = kafka_stream(spark, options, prefer=cfg.kafka.connector)
        if is_decoded(raw):
            decoded = raw
        else:
            decoder = make_decoder(decode["topics"], decode["max_bytes"], decode["max_future_ms"],
                                   groups=decode.get("groups"))
            decoded = (raw.select("topic", "partition", "offset", "timestamp", "key", "value")
                       .mapInArrow(decoder, DECODED_SCHEMA))
        log.info("decoding %s", "in the Python Kafka source" if is_decoded(raw) else "in a mapInArrow stage")
        events = decoded.withWatermark("et", f"{int(cfg.state.watermark_delay)} milliseconds")
        processor = GroupProcessor(cfg.core_settings(), release_delay_ms=int(cfg.state.watermark_delay),
                                   follow_wall=self.idle_clock and cfg.state.idle_clock and not once,
                                   flush_to_ms=flush_to_ms, visit_every_batch=once, follow_watermark=not once,
                                   drain=drain)
        return events.groupBy("group").transformWithState(processor, OUTPUT_SCHEMA, "Append", "ProcessingTime")

    def start(self, once: bool = False, flush_to_ms: int | None = None, whole_input: bool = False,
              drain: bool = False):
        """Start the query (see `build`); `once` runs its batches back to back."""
        from .sinks import Sinks

        cfg = self.cfg
        log.info("starting with configuration %s", json.dumps(redacted(cfg), default=str))
        out = self.build(flush_to_ms=flush_to_ms, once=once, whole_input=whole_input, drain=drain)
        self.restore_metrics()  # (nothing to do when run_job already did it)
        self.sinks = Sinks(cfg.sinks.history.parquet_path, cfg.sinks.history.kafka_topic,
                           cfg.sinks.dead_letter.path, cfg.sinks.dead_letter.kafka_topic, kafka_settings(cfg),
                           files=self.files())
        interval = min(ONCE_TRIGGER_MS, int(cfg.spark.trigger_interval)) if once else int(cfg.spark.trigger_interval)
        writer = (out.writeStream.foreachBatch(self._process_batch)
                  .option("checkpointLocation", self.query_checkpoint)
                  .queryName("rebalance_monitor")
                  .trigger(processingTime=f"{interval} milliseconds"))
        self.query = writer.start()
        if not once:
            threading.Thread(target=self.wake_input, name="wake-input", daemon=True).start()
        if self.updater is not None:
            self.updater.set_up(True)
        return self.query

    def wake_input(self, timeout_s: float = 30.0) -> bool:
        """Write one record that the decoder drops (key `WAKE_KEY`) to the first events topic, or else the
        coordinator-log topic: Spark runs no batch after a restart until its input has a new record, and in
        processing-time mode it runs one at every trigger from then on, so timers fire on a quiet input.
        False if there is no such topic or the write failed (the first real record then does it)."""
        from .sinks import KafkaTopicWriter

        cfg = self.cfg
        topics = cfg.events_topics() or ([cfg.kafka.coordinator_log_topic] if cfg.kafka.coordinator_log_topic else [])
        if not topics:
            log.info("no events or coordinator-log topic to wake: after a restart, timers wait for the first record")
            return False
        writer = None
        try:
            writer = KafkaTopicWriter(topics[0], kafka_settings(cfg))
            writer.send([(WAKE_KEY.decode(), "")], timeout_s=timeout_s)
            return True
        except Exception as exc:  # noqa: BLE001 - the first real record wakes the query instead
            log.warning("could not write the wake-up record to %s (%s): after a restart, timers wait for the "
                        "first input record", topics[0], exc)
            return False
        finally:
            if writer is not None:
                writer.close()

    def read_available(self, timeout_s: float | None = None, whole_input: bool = False) -> None:
        """Process what the input holds now, then stop (the first part of `run --once`): until a batch has
        read all its source had when the batch began (`whole_input`: in one batch; see `build`). Every group
        keeps a timer due at the next trigger, so that a `flush` reaches it. (Neither Trigger.AvailableNow
        nor processAllAvailable ends here: in processing-time mode the query always has another batch.)"""
        q = self.start(once=True, whole_input=whole_input)
        self._wait_then_stop(q, lambda: any(_caught_up(p) for p in q.recentProgress), timeout_s,
                             "had read its input")

    def flush(self, to_ms: int, timeout_s: float | None = None) -> None:
        """Move every group's clock to `to_ms` (release its pending events, fire its deadlines up to there) in
        one batch, then stop: what replay's end of input does."""
        before = self.stats.batches
        q = self.start(once=True, flush_to_ms=to_ms)
        self.wake_input()  # no new record, no batch: Spark's rule after a restart

        def committed() -> bool:
            # the batch ran (foreachBatch returned), then Spark committed it (its progress is reported after
            # the commit): a batch stopped before its commit would run again, without the flush, on restart
            return self.stats.batches != before and any(
                p.get("batchId", -1) >= self.stats.last_batch_id for p in q.recentProgress)

        self._wait_then_stop(q, committed, timeout_s, "had run its flush batch")

    def _wait_then_stop(self, q, done, timeout_s: float | None, what: str) -> None:
        """Wait until `done()`, then stop the query; raise if the query fails, stops or runs out of time."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            while not done():
                if q.exception() is not None:
                    raise q.exception()
                if not q.isActive:
                    raise RuntimeError(f"the query stopped before it {what}")
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"the query had not {what.removeprefix('had ')} within {timeout_s} s")
                time.sleep(0.05)
        finally:
            self.stop_query()

    def run_once(self, timeout_s: float | None = None) -> None:
        """`run --once`: process everything available now, then stop, leaving event time at the last event
        (as replay's end of input does). One query: a batch reads the whole input; in the next one (Spark
        runs one at every trigger in processing-time mode) the watermark stands at the highest event time
        read less the delay, and every group moves to that event time. No record is written to the input,
        so this works on inputs the job cannot write to (`__consumer_offsets`)."""
        self._max_event_ms = None
        q = self.start(once=True, whole_input=True, drain=True)
        read: list[int] = []

        def drained() -> bool:
            progress = q.recentProgress
            if not read:
                done = [p["batchId"] for p in progress if _caught_up(p)]
                if not done:
                    return False
                if self._max_event_ms is None:
                    return True  # nothing new to read: the previous run left every group at its end
                read.append(done[0])
            # a later batch, committed (its progress is reported after the commit), ran the groups' timers
            return any(p.get("batchId", -1) > read[0] for p in progress)

        self._wait_then_stop(q, drained, timeout_s, "had read and drained its input")

    # --- per batch (driver) -------------------------------------------------------------------
    def _process_batch(self, df, batch_id: int) -> None:
        t0 = time.monotonic()
        try:
            rows = _collect_output(df)
        except Exception:
            if not self._stopping.is_set():
                raise
            # Stopping: Spark cancelled this batch's job. Spark tells a stop from a failure by matching the
            # Python error text against a regex that recurses once per character, and the cancellation's
            # Java trace overflows its stack (the stream thread then dies with StackOverflowError). A short
            # text that names the interruption is recognised as the stop it is; the batch stays uncommitted.
            raise BatchInterrupted(
                "py4j.protocol.Py4JJavaError: An error occurred while calling collect: "
                f"java.lang.InterruptedException (batch {batch_id} cancelled: the monitor is stopping)") from None
        records, dead, history = [], [], []
        read = 0
        left_out: set[str] = set()  # groups that groups.allow/deny leave out (their events were dropped)
        for kind, group, ts, payload in rows:
            if kind == "dead_letter":
                dead.append(payload)
                continue
            rec = loads_json(payload)
            if kind == CLOCK_KIND:
                read += int(rec.get("records") or 0)
                left_out.update(rec.get("left_out") or ())
                if ts and ts > 0 and (self._max_event_ms is None or ts > self._max_event_ms):
                    self._max_event_ms = int(ts)
                continue
            records.append(rec)
            if kind in HISTORY_KINDS:
                history.append((kind, group, ts, payload))
        reasons: dict[str, int] = {}
        for p in dead:
            reason = json.loads(p).get("reason", "unknown")
            reasons[reason] = reasons.get(reason, 0) + 1
        for name, action in (("history", lambda: self.sinks.write_history(batch_id, history)),
                             ("dead_letter", lambda: self.sinks.write_dead_letters(batch_id, dead))):
            try:
                action()
            except Exception as exc:
                # Count it, then fail the batch: it is not committed, so the restarted query (with backoff,
                # see run_job) writes it again once the sink is back. Nothing is lost; metrics dedupe replays.
                log.error("batch %s: %s sink failed: %s", batch_id, name, exc)
                if self.updater is not None:
                    self.updater.note_sink_error(name)
                    self.updater.set_ready(False, f"the {name} sink failed: {exc}"[:500])
                raise SinkUnavailable(f"{name} sink failed: {exc}") from exc
        counts: dict[str, int] = {}
        for rec in records:
            counts[rec["kind"]] = counts.get(rec["kind"], 0) + 1
        if self.updater is not None:
            # once per batch id, persisted before it is exported (a failed save fails the batch: Spark retries it)
            self.updater.apply_batch(batch_id, records, self.metrics_state and self.metrics_state.save,
                                     left_out=left_out, rejects=reasons, duration_s=time.monotonic() - t0,
                                     output_counts=counts, events_read={"kafka": read}, **self._progress_figures())
            self.updater.set_ready(True)
        st = self.stats
        st.batches += 1
        st.last_batch_id = batch_id
        st.records_read += read
        st.last_read = read
        st.last_duration_s = time.monotonic() - t0
        for k, v in counts.items():
            st.records[k] = st.records.get(k, 0) + v
        for k, v in reasons.items():
            st.dead_letters[k] = st.dead_letters.get(k, 0) + v
        if self.on_records is not None:
            self.on_records(batch_id, records, dead)

    def _progress_figures(self) -> dict:
        q = self.query
        lp = q.lastProgress if q is not None else None
        if not lp:
            return {}
        out = {}
        ops = lp.get("stateOperators") or []
        if ops:
            out["state_rows"] = int(ops[0].get("numRowsTotal", 0))
        wm = (lp.get("eventTime") or {}).get("watermark")
        if wm:
            out["watermark_ms"] = _iso_ms(wm)
        return out

    # --- lifecycle ----------------------------------------------------------------------------
    def refresh_liveness(self) -> None:
        """A query that is caught up (no source has data, no trigger running) is healthy even though no
        batch runs: keep /ready green. A batch stuck on a hung broker keeps its trigger active, so it
        does not count, and /ready turns red after exporter.ready_max_batch_age."""
        q = self.query
        if q is None or self.updater is None or not q.isActive:
            return
        st = q.status
        if not st.get("isDataAvailable") and not st.get("isTriggerActive"):
            self.updater.mark_alive()
            self.updater.set_ready(True)

    def stop_query(self) -> None:
        if self.query is not None:
            try:
                self.query.stop()
            except Exception as exc:  # noqa: BLE001
                log.warning("stopping the query: %s", exc)
        if self.sinks is not None:
            self.sinks.close()
            self.sinks = None

    def stop(self) -> None:
        self._stopping.set()
        self.stop_query()
        if self.updater is not None:
            self.updater.set_ready(False, "the job is stopping")


class BatchInterrupted(RuntimeError):
    """A micro-batch cancelled because the job is stopping (see `MonitorJob._process_batch`)."""


def _collect_output(df) -> list[tuple]:
    """The micro-batch's output rows (kind, group, ts, payload) on the driver, through Arrow where the
    DataFrame offers it (a busy batch has tens of thousands of commit records; pickled Rows cost ~10x)."""
    if hasattr(df, "toArrow"):
        table = df.toArrow()
        return list(zip(*(table.column(name).to_pylist() for name in ("kind", "group", "ts", "payload"))))
    return [(r.kind, r.group, r.ts, r.payload) for r in df.collect()]


def _caught_up(progress: dict) -> bool:
    """A completed batch that read everything its sources had when it began. (A batch run again after a
    restart, because it had not been committed, reports no latest offset: it read what it was planned to,
    not what the input holds now.)"""
    sources = progress.get("sources") or []
    if not sources:
        return False
    for src in sources:
        latest = src.get("latestOffset")
        if latest is None or _offsets(latest) != _offsets(src.get("endOffset")):
            return False
    return True


def _offsets(value):
    """A source's offsets as reported in a progress (JSON text or already parsed)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _iso_ms(text: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def run_job(cfg: MonitorConfig, once: bool = False) -> int:
    """Validate, start the exporter and the query, log progress, stop cleanly on SIGTERM/SIGINT."""
    from ..logs import config_secrets, configure_logging

    configure_logging(cfg.logging.level, config_secrets(cfg), cfg.logging.kafka_clients_level)
    exporter = None
    updater = None
    if cfg.exporter.enabled:
        from ..metrics.exporter import ExporterSettings, MetricsExporter

        settings = ExporterSettings(
            host=cfg.exporter.host, port=cfg.exporter.port, tls_cert_file=cfg.exporter.tls_cert_file,
            tls_key_file=cfg.exporter.tls_key_file, basic_auth_user=cfg.exporter.basic_auth_user,
            basic_auth_password=cfg.exporter.basic_auth_password, max_groups=cfg.groups.max_groups,
            group_allow=cfg.groups.allow, group_deny=cfg.groups.deny,
            idle_group_ttl_s=int(cfg.exporter.idle_group_ttl) / 1000.0,
            ready_max_age_s=int(cfg.exporter.ready_max_batch_age) / 1000.0)
        exporter = MetricsExporter(settings)
        updater = exporter.updater
    job = MonitorJob(cfg, updater=updater)
    # Spark first: the metrics snapshot is read through its Hadoop FileSystem API (wherever the checkpoint is),
    # and restored before /metrics first answers; PySpark also replaces the SIGINT handler when its context starts
    job._session()
    job.restore_metrics()
    if exporter is not None:
        exporter.start()
        log.info("metrics at %s/metrics", exporter.url)
    lag = None
    if cfg.lag.enabled and updater is not None:
        lag = _start_lag_poller(cfg, updater)
    stop = threading.Event()

    def _on_signal(signum, _frame):
        log.info("signal %s: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    cadence = max(1.0, int(cfg.logging.progress_interval) / 1000.0)
    code = 0
    backoff = 1.0
    try:
        while not stop.is_set():
            started = time.monotonic()
            if once:
                try:
                    job.run_once()
                    failure = None
                except ConnectorMissing as exc:
                    log.error("%s", exc)
                    code = 2
                    break
                except Exception as exc:  # noqa: BLE001
                    failure = exc
                code = 1 if failure is not None else 0
                if failure is not None:
                    log.error("the run failed: %s", failure)
                break
            try:
                query = job.start()
            except ConnectorMissing as exc:  # configuration, not a passing failure: say so and stop
                log.error("%s", exc)
                code = 2
                break
            except Exception as exc:  # noqa: BLE001 - e.g. a sink that cannot be opened yet: retry
                failure = exc
            else:
                failure = _watch(query, job, stop, cadence)
            if failure is None:
                break
            # The query died (broker unreachable, a sink's JVM error, ...): report it, wait, restart from the
            # checkpoint. Nothing is lost: offsets and state are only committed with completed batches.
            job.stop_query()
            if time.monotonic() - started > 120:
                backoff = 1.0
            if updater is not None:
                updater.set_ready(False, f"the query failed ({str(failure)[:300]}); restarting from the checkpoint "
                                         f"in {backoff:.0f} s")
            log.error("the query failed (%s); restarting from the checkpoint in %.0f s", failure, backoff)
            if stop.wait(backoff):
                break
            backoff = min(backoff * 2, 60.0)
    finally:
        job.stop()
        if lag is not None:
            lag.stop()
        if exporter is not None:
            exporter.stop()
        if job.query is not None:
            _log_progress(job.query, job)
        log.info("stopped")
    return code


def _watch(query, job: "MonitorJob", stop: threading.Event, cadence: float):
    """Wait while the query runs; log progress at `cadence`. Returns its exception if it died, else None."""
    last_log = 0.0
    while not stop.is_set():
        if not query.isActive:
            return query.exception()
        if time.monotonic() - last_log >= cadence:
            last_log = time.monotonic()
            _log_progress(query, job)
        job.refresh_liveness()
        stop.wait(0.5)
    return None


def _log_progress(query, job: MonitorJob) -> None:
    lp = query.lastProgress
    if not lp:
        log.info("no batch yet")
        return
    ops = lp.get("stateOperators") or [{}]
    st = job.stats
    dur = st.last_duration_s or 0.0
    log.info("batch %s: %s input records (%s decoded rows) in %.1f s, %.0f records/s; %s records read so far; "
             "state rows %s, watermark %s, output records %s, dead letters %s", st.last_batch_id, st.last_read,
             lp.get("numInputRows"), dur, st.last_read / dur if dur > 0 else 0.0, st.records_read,
             ops[0].get("numRowsTotal"), (lp.get("eventTime") or {}).get("watermark"), st.records, st.dead_letters)


def _start_lag_poller(cfg: MonitorConfig, updater):
    from ..metrics.broker_offsets import BrokerOffsets, BrokerOffsetsPoller
    from .kafka_clients import kafka_python_config

    try:
        conf = kafka_python_config(kafka_settings(cfg))
        bootstrap = conf.pop("bootstrap_servers")
        conf.pop("client_id", None)
        poller = BrokerOffsetsPoller(updater, BrokerOffsets(bootstrap, **conf),
                                     interval_s=int(cfg.lag.broker_poll_interval) / 1000.0)
        poller.start()
        return poller
    except Exception as exc:  # noqa: BLE001 - lag from brokers is optional; records still feed it
        log.warning("broker offsets poller not started: %s", exc)
        return None
