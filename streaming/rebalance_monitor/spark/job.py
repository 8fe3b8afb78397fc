"""The streaming query's control: start, stop (between two batches), `run --once`, the metrics snapshot and the
job's counts. What the query is (its session, pipeline, sinks and writer) is query_plan.py's (`QueryPlan`); what
the driver does with each batch, batch.py's.
"""
from __future__ import annotations

import json
import logging
import threading
import time

from ..config import MonitorConfig
from ..decoding.json_parser import use_fastest_available
from ..decoding.wake_records import WAKE_KEY
from ..files import HadoopFiles, join, scheme_of
from .batch import CancelledBatchIsNoError, JobStats, between_batches, cancelled, handle_batch
from .query_plan import QueryPlan

log = logging.getLogger("rebalance_monitor.job")

STOP_WAIT_S = 15.0  # the stop lets a running batch finish for this long before it cancels it


class StreamingQueryJob:
    """Runs the streaming query that `plan` (a `QueryPlan`) builds. `on_records(batch_id, records)` receives
    every batch's output records (after the sinks), e.g. for the demo's live view or for tests."""

    def __init__(self, cfg: MonitorConfig, spark=None, updater=None, on_records=None, idle_clock: bool = True):
        self.cfg = cfg
        CancelledBatchIsNoError.install()
        self.plan = QueryPlan(cfg, spark, idle_clock)
        self.updater = updater
        self.on_records = on_records
        self.query = None
        self.stats = JobStats()
        self.sinks = None
        self._max_event_ms: int | None = None  # the highest event time the decoded batches reported
        self._stopping = threading.Event()
        self._batch = threading.Condition()  # guards _in_batch: a batch's tasks and sinks are running
        self._in_batch = False
        self._held = self._pausing = False  # a batch held by the stop (process_batch); new ones to be held
        # the exported counters outlive the process: a snapshot beside the query's checkpoint (metrics/state_file.py),
        # loaded by restore_metrics (it needs the session: every file goes through Hadoop's FileSystem API)
        self.metrics_state = None
        self._files = None

    @property
    def spark(self):
        """The session, once built (`session`), or the one given; None before."""
        return self.plan.spark

    def session(self):
        """The query's SparkSession, built now if need be (`QueryPlan.session`)."""
        return self.plan.session()

    @property
    def stopping(self) -> bool:
        """The job is stopping (`stop`): a batch's failure now is the stop's cancellation (batch.py)."""
        return self._stopping.is_set()

    def saw_event_time(self, ts_ms: int) -> None:
        """A decoded batch reported `ts_ms` as its highest event time (batch.py): what `run_once` waits on."""
        if self._max_event_ms is None or ts_ms > self._max_event_ms:
            self._max_event_ms = ts_ms

    @property
    def query_checkpoint(self) -> str:
        """The Spark query's checkpoint directory (`QueryPlan.query_checkpoint`)."""
        return self.plan.query_checkpoint

    def files(self):
        """The job's own durable files (metrics snapshot, history and dead-letter files) go through Hadoop's
        FileSystem API of the session, wherever the checkpoint is: local, file://, s3a://, hdfs://."""
        if self._files is None:
            self._files = HadoopFiles(self.session())
        return self._files

    def checkpoint_is_local(self) -> bool:
        """The checkpoint is on this machine's file system (a path or file://, and no `fs.defaultFS` in
        spark.conf that would make a path mean another file system): its metrics snapshot can be read before
        Spark starts."""
        conf = self.cfg.spark.conf or {}
        default_fs = str(conf.get("spark.hadoop.fs.defaultFS") or "file:///")
        scheme = scheme_of(self.cfg.state.checkpoint_location)
        return scheme == "file" or (scheme == "" and default_fs.startswith("file:"))

    def restore_metrics(self, files=None) -> bool:
        """Load the exported-metrics snapshot into the updater, once (before /metrics first answers: a scrape
        of counters the snapshot would raise again looks like a reset to Prometheus). `files`: how to reach
        it (`LocalFiles` for a local checkpoint, before Spark starts); by default Hadoop's FileSystem API of
        the session (started if need be)."""
        if self.metrics_state is not None or self.updater is None or not self.cfg.exporter.persist_state:
            return False
        from ..metrics.state_file import METRICS_STATE_FILE, MetricsStateFile

        files = files if files is not None else self.files()
        self.metrics_state = MetricsStateFile(join(self.cfg.state.checkpoint_location, METRICS_STATE_FILE),
                                              self.query_checkpoint, files=files)
        log.debug("metrics snapshot at %s", files.describe(self.metrics_state.path))
        return self.metrics_state.load(self.updater)

    def start(self, once: bool = False, flush_to_ms: int | None = None, whole_input: bool = False,
              drain: bool = False):
        """Start the query (see `QueryPlan.build`); `once` runs its batches back to back."""
        use_fastest_available()  # the driver parses the batches' records (batch.py) with orjson
        cfg, self._pausing, self._held = self.cfg, False, False
        log.debug("starting the query (checkpoint %s)", cfg.state.checkpoint_location)
        out = self.plan.build(flush_to_ms=flush_to_ms, once=once, whole_input=whole_input, drain=drain)
        self.restore_metrics()  # (nothing to do when the MonitorService already did it)
        self.sinks = self.plan.sinks(self.files())
        self.query = self.plan.writer(out, self.process_batch, once).start()
        if not once:
            threading.Thread(target=self.wake_input, name="wake-input", daemon=True).start()
        if self.updater is not None:
            self.updater.set_up(True)
        return self.query

    def wake_input(self, timeout_s: float = 30.0) -> bool:
        """Write wake-up records (key `WAKE_KEY`) to the input: Spark runs no batch after a restart until its input
        has a new record, and in processing-time mode it runs one at every trigger from then on, so timers fire on
        a quiet input.

        Unless the job reads `__consumer_offsets` (where it cannot write), one record goes to every partition of
        every events and coordinator-log topic, each carrying the job's start and how many were written: once the
        decoder has read them all, the input as it stood at the start has been read, a backlog included, and the
        groups' clocks count again the idle time from before the start (spark/processor.py, "caught up").
        Otherwise one record goes to the first topic, as the wake-up alone. False if there is no topic to write
        or a write failed (the first real record then wakes the query, and the clocks keep waiting for the input
        after the start)."""
        from .sinks import KafkaTopicWriter

        cfg = self.cfg
        coordinator = [cfg.kafka.coordinator_log_topic] if cfg.kafka.coordinator_log_topic else []
        topics = cfg.events_topics() + coordinator
        if not topics:
            log.info("no events or coordinator-log topic to wake: after a restart, timers wait for the first record")
            return False
        markers = not cfg.kafka.offsets_topic and self.plan.started_ms is not None
        writers: dict = {}
        try:
            for topic in topics if markers else topics[:1]:
                writers[topic] = KafkaTopicWriter(topic, cfg.kafka.connection())
            if markers:
                parts = {topic: w.partitions(timeout_s) for topic, w in writers.items()}
                value = json.dumps({"start": self.plan.started_ms, "n": sum(len(p) for p in parts.values())})
                for topic, w in writers.items():
                    w.send([(WAKE_KEY.decode(), value, p) for p in parts[topic]], timeout_s=timeout_s)
            else:
                writers[topics[0]].send([(WAKE_KEY.decode(), "")], timeout_s=timeout_s)
            return True
        except Exception as exc:  # noqa: BLE001 - the first real record wakes the query instead
            log.warning("could not write the wake-up records to %s (%s): after a restart, timers wait for the "
                        "first input record", ", ".join(writers) or topics[0], exc)
            return False
        finally:
            for w in writers.values():
                w.close()

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
    def process_batch(self, df, batch_id: int) -> None:
        """The query's foreachBatch: batch.handle_batch. Once the job or its query is stopping, a new batch runs no
        task: it waits for the query's stop to begin and ends as the stop's interruption (it stays uncommitted)."""
        with self._batch:
            held = self._held = self._stopping.is_set() or self._pausing
            self._in_batch = not held
        if held:
            self._hold_until_stopped(batch_id)
        try:
            handle_batch(self, df, batch_id)
        finally:
            with self._batch:
                self._in_batch = False
                self._batch.notify_all()

    def _hold_until_stopped(self, batch_id: int) -> None:
        deadline = time.monotonic() + 2 * STOP_WAIT_S
        while time.monotonic() < deadline:
            try:
                if self.query is None or not self.query.isActive:
                    break
            except Exception:  # noqa: BLE001 - the query is going away
                break
            time.sleep(0.1)
        raise cancelled(batch_id) from None

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

    def input_idle(self) -> bool:
        """The query has read all the input there was and found none: it made progress at least once, its last
        progress read no row, and no source has data nor a trigger is running. (A restarted job still reading
        its first batch of a backlog is not idle, however long that batch takes.)"""
        q = self.query
        try:
            if q is None or not q.isActive:
                return False
            lp = q.lastProgress
            st = q.status
        except Exception:  # noqa: BLE001 - the query is going away
            return False
        if not lp or int(lp.get("numInputRows") or 0) != 0:
            return False
        return not st.get("isDataAvailable") and not st.get("isTriggerActive")

    @property
    def max_event_ms(self) -> int | None:
        """The highest event time the job's batches have read (None before the first event)."""
        return self._max_event_ms

    def stop_query(self, wait_s: float = STOP_WAIT_S) -> None:
        """Stop the query between two batches (waiting up to `wait_s` for that, batch.between_batches; a batch that
        would start meanwhile runs no task, process_batch, until the next `start`), then its sinks."""
        if self.query is not None:
            self._pausing = True
            if not between_batches(self.query, lambda: self._held, wait_s) and wait_s:
                log.info("the query did not pause between batches in %.0f s: stopping it mid-batch", wait_s)
            try:
                self.query.stop()
            except Exception as exc:  # noqa: BLE001
                log.warning("stopping the query: %s", exc)
        if self.sinks is not None:
            self.sinks.close()
            self.sinks = None

    def stop(self) -> None:
        """A running batch finishes first (at most STOP_WAIT_S: then it is cancelled, and runs again at the next
        start), so that the stop interrupts no task (RocksDB's commit logs a Java stack trace when it is)."""
        with self._batch:
            self._stopping.set()
            finished = self._batch.wait_for(lambda: not self._in_batch, timeout=STOP_WAIT_S)
            if not finished:
                log.info("the running batch did not finish in %.0f s: cancelling it", STOP_WAIT_S)
        self.stop_query(STOP_WAIT_S if finished else 0)
        if self.updater is not None:
            self.updater.set_ready(False, "the job is stopping")


def _caught_up(progress: dict) -> bool:
    """A completed batch that read everything its sources had when it began (a batch run again after a restart,
    uncommitted before, reports no latest offset: it read what it was planned to, not what the input holds)."""
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
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return value
