"""`rebalance-monitor run`: the Spark Structured Streaming job.

    Kafka (Spark's connector, or the Python source) ─► decode (mapInArrow) ──┐
    clock ticks (rmclock, driver-written when idle) ─────────────────────────┴► union, watermark (max policy)
      ─► groupBy(group).transformWithState(GroupProcessor, EventTime)
      ─► foreachBatch on the driver: metrics updater / exporter, history sink, dead-letter sink
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass, field

from ..config import MonitorConfig, jar_files, redacted
from ..core.events import loads_json
from .clock_source import ClockSource, read_tick, read_tick_file, write_clock, write_tick
from .decode_stage import DECODED_SCHEMA, make_decoder
from .kafka_source import ConnectorMissing
from .processor import CLOCK_KIND, OUTPUT_SCHEMA, GroupProcessor

log = logging.getLogger("rebalance_monitor.job")

TICK_CHECK_S = 0.25  # how often the idle clock looks at the query (cheap: no Spark job, one small file)


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
        self.idle_clock = idle_clock
        self.spark = spark
        self.updater = updater
        self.on_records = on_records
        self.query = None
        self.stats = JobStats()
        self.sinks = None
        os.makedirs(cfg.state.checkpoint_location, exist_ok=True)
        self.tick_path = os.path.join(cfg.state.checkpoint_location, "clock-tick.json")
        # the Python Kafka source's word on each trigger: did it find new records (see clock_source)
        self.marker_path = os.path.join(cfg.state.checkpoint_location, "kafka-caught-up.json")
        self._live_clock = False  # the idle clock runs (processing-time trigger)
        self._clock_lock = threading.Lock()
        self._file_lock = threading.Lock()  # the clock file's two writers: the ticker and the batches
        self._max_event_ms: int | None = None
        self._max_event_wall: float = 0.0
        # after a restart, event time goes on from where the idle clock left it
        saved = read_tick_file(self.tick_path)
        if isinstance(saved.get("event_ms"), int) and isinstance(saved.get("wall_ms"), int):
            self._max_event_ms, self._max_event_wall = saved["event_ms"], saved["wall_ms"] / 1000.0
        self._ticker: threading.Thread | None = None
        self._stopping = threading.Event()
        # the exported counters outlive the process: a snapshot beside the query's checkpoint (metrics/state_file.py)
        self.metrics_state = None
        if updater is not None and cfg.exporter.persist_state:
            from ..metrics.state_file import METRICS_STATE_FILE, MetricsStateFile

            self.metrics_state = MetricsStateFile(os.path.join(cfg.state.checkpoint_location, METRICS_STATE_FILE),
                                                  os.path.join(cfg.state.checkpoint_location, "query"))
            self.metrics_state.load(updater)

    # --- building -----------------------------------------------------------------------------
    def _session(self):
        if self.spark is None:
            from .session import build_session

            c = self.cfg.spark
            self.spark = build_session(master=c.master, app_name=c.app_name, local_dir=c.local_dir,
                                       shuffle_partitions=c.shuffle_partitions, extra_conf=c.conf,
                                       jars=jar_files(c.jars_dir) if c.jars_dir else ())
        self.spark.dataSource.register(ClockSource)
        self.spark.conf.set("spark.sql.streaming.multipleWatermarkPolicy", "max")
        self.spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        return self.spark

    def build(self, live_clock: bool = False):
        """The query's plan; `live_clock`: with the idle clock's per-trigger marker (not for AvailableNow)."""
        from pyspark.sql import functions as F

        from .kafka_source import is_decoded, kafka_stream

        spark = self._session()
        cfg = self.cfg
        options = source_options(cfg)
        decode = {"topics": topic_sources(cfg), "max_bytes": cfg.kafka.max_record_bytes,
                  "max_future_ms": int(cfg.kafka.max_future_skew)}
        if cfg.kafka.decode_in_source:
            options["decode"] = json.dumps(decode)
        if live_clock:
            options["idleMarker"] = self.marker_path
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.marker_path)  # a previous run's word says nothing about this one
        raw = kafka_stream(spark, options, prefer=cfg.kafka.connector)
        delay = f"{int(cfg.state.watermark_delay)} milliseconds"
        if is_decoded(raw):
            decoded = raw
        else:
            decoder = make_decoder(decode["topics"], decode["max_bytes"], decode["max_future_ms"])
            decoded = (raw.select("topic", "partition", "offset", "timestamp", "key", "value")
                       .mapInArrow(decoder, DECODED_SCHEMA))
        log.info("decoding %s", "in the Python Kafka source" if is_decoded(raw) else "in a mapInArrow stage")
        events = decoded.withWatermark("et", delay)
        clock = read_tick_file(self.tick_path)
        if not clock:
            write_tick(self.tick_path, 0)
        elif clock.get("idle"):
            # not idle until a batch shows it: a backlog produced while the job was down comes first
            write_clock(self.tick_path, clock, int(time.time() * 1000), int(self.cfg.spark.trigger_interval),
                        **{**{k: v for k, v in clock.items() if k != "tick"}, "idle": False})
        ticks = spark.readStream.format("rmclock").option("path", self.tick_path)
        if live_clock:
            ticks = ticks.option("marker", self.marker_path)
        ticks = (ticks.load()
                 .select(F.lit("").alias("group"), F.col("tick").alias("ts"),
                         F.timestamp_millis("tick").alias("et"), F.lit(0).cast("long").alias("ord"),
                         F.lit("tick").alias("kind"), F.lit(None).cast("long").alias("num"),
                         F.lit("").alias("payload"), F.lit(None).cast("binary").alias("packed"))
                 .withWatermark("et", delay))
        unioned = events.unionByName(ticks)
        return (unioned.groupBy("group")
                .transformWithState(
                    GroupProcessor(cfg.core_settings(), release_delay_ms=int(cfg.state.watermark_delay)),
                    OUTPUT_SCHEMA, "Append", "EventTime"))

    def start(self, available_now: bool = False):
        from .sinks import Sinks

        cfg = self.cfg
        log.info("starting with configuration %s", json.dumps(redacted(cfg), default=str))
        self._live_clock = not available_now and self.idle_clock and cfg.state.idle_clock
        out = self.build(self._live_clock)
        self.sinks = Sinks(cfg.sinks.history.parquet_path, cfg.sinks.history.kafka_topic,
                           cfg.sinks.dead_letter.path, cfg.sinks.dead_letter.kafka_topic, kafka_settings(cfg))
        writer = (out.writeStream.foreachBatch(self._process_batch)
                  .option("checkpointLocation", os.path.join(cfg.state.checkpoint_location, "query"))
                  .queryName("rebalance_monitor"))
        if available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{int(cfg.spark.trigger_interval)} milliseconds")
        self.query = writer.start()
        if self._live_clock and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick_loop, name="clock-ticker", daemon=True)
            self._ticker.start()
        if self.updater is not None:
            self.updater.set_up(True)
        return self.query

    def run_once(self, timeout_s: float | None = None) -> None:
        """`run --once`: process everything available now, then stop, leaving event time at the last event
        (as replay's end of input does). Trigger.AvailableNow runs no trailing no-data batch, so this takes
        three short runs: read everything; then a clock tick at the last event time plus the watermark delay;
        then one more tick so that a batch runs with that watermark and releases what was pending."""
        delay = int(self.cfg.state.watermark_delay)
        max_seen = None
        for step in range(3):
            q = self.start(available_now=True)
            q.awaitTermination(timeout_s)
            if q.exception() is not None:
                raise q.exception()
            for p in q.recentProgress:
                ev_max = (p.get("eventTime") or {}).get("max")
                if ev_max and _kafka_rows(p) > 0:
                    ms = _iso_ms(ev_max)
                    max_seen = ms if max_seen is None else max(max_seen, ms)
            if max_seen is None:
                return
            if step < 2:
                write_tick(self.tick_path, max(read_tick(self.tick_path) + 1, max_seen + delay + step))

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
        for kind, group, ts, payload in rows:
            if kind == "dead_letter":
                dead.append(payload)
                continue
            rec = loads_json(payload)
            if kind == CLOCK_KIND:
                read += int(rec.get("records") or 0)
                if ts and ts > 0:
                    self._saw_event_time(int(ts), rec.get("append_ms"))
                continue
            records.append(rec)
            if kind in HISTORY_KINDS:
                history.append((kind, group, ts, payload))
        reasons: dict[str, int] = {}
        for p in dead:
            reason = json.loads(p).get("reason", "unknown")
            reasons[reason] = reasons.get(reason, 0) + 1
        for name, action in (("history", lambda: self.sinks.write_history(self.spark, batch_id, history)),
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
                                     rejects=reasons, duration_s=time.monotonic() - t0, output_counts=counts,
                                     events_read={"kafka": read}, **self._progress_figures())
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
        if self._live_clock:
            self._tick()  # the next trigger's idle tick starts from this batch's event time
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

    def _saw_event_time(self, ts: int, append_ms: int | None = None) -> None:
        """The highest event time so far, and the wall-clock time it belongs to: the Kafka timestamp of
        its record when known (live input: about the event's own time), else now (when it was seen)."""
        with self._clock_lock:
            if self._max_event_ms is None or ts > self._max_event_ms:
                self._max_event_ms = ts
                now = time.time()
                self._max_event_wall = now if append_ms is None else min(now, append_ms / 1000.0)

    # --- the idle clock -----------------------------------------------------------------------
    def _tick_loop(self) -> None:
        while not self._stopping.wait(TICK_CHECK_S):
            self._tick()

    def _tick(self) -> None:
        try:
            self.maybe_tick()
        except Exception as exc:  # noqa: BLE001 - the next one tries again
            log.warning("clock tick failed: %s", exc)

    def maybe_tick(self, now: float | None = None) -> None:
        """Keep the clock file (see clock_source) in step: the highest event time, the wall-clock time it
        belongs to, and whether the Kafka input is idle. While idle, the clock source follows the wall clock.

        The highest event time comes from the decoded batches (`clock` rows); "idle" means the last batch
        read no Kafka row or the last trigger found nothing new, so a backlog being read is never overtaken.
        The Python Kafka source's marker, fresher, decides over this flag within a trigger (clock_source)."""
        q = self.query
        if q is None:
            return
        last = q.lastProgress
        idle = not (last and _kafka_rows(last) > 0 and q.status.get("isDataAvailable"))
        with self._clock_lock:
            if self._max_event_ms is None:
                return
            event_ms, wall_ms = self._max_event_ms, int(self._max_event_wall * 1000)
        wanted = {"event_ms": event_ms, "wall_ms": wall_ms, "idle": idle,
                  "delay_ms": int(self.cfg.state.watermark_delay), "interval_ms": int(self.cfg.spark.trigger_interval)}
        with self._file_lock:
            clock = read_tick_file(self.tick_path)
            if all(clock.get(k) == v for k, v in wanted.items()):
                return
            write_clock(self.tick_path, clock, int((time.time() if now is None else now) * 1000),
                        int(self.cfg.spark.trigger_interval), **wanted)

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


def _kafka_rows(progress: dict) -> int:
    """Input rows of a progress report that came from Kafka (not from the clock ticks)."""
    def is_clock(source: dict) -> bool:
        end = source.get("endOffset")
        if isinstance(end, str):
            try:
                end = json.loads(end)
            except ValueError:
                return False
        return isinstance(end, dict) and set(end) == {"tick"}

    return sum(int(s.get("numInputRows", 0)) for s in progress.get("sources", []) if not is_clock(s))


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
    job = MonitorJob(cfg, updater=updater)  # restores the persisted metrics: before /metrics first answers
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

    job._session()  # start Spark first: PySpark replaces the SIGINT handler when its context starts
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
