"""What the driver does with each micro-batch's output (the query's foreachBatch, `StreamingQueryJob.process_batch`).

The batch's rows come to the driver through Arrow; the history and dead-letter records go to their sinks first (a
sink that fails fails the batch, which Spark then runs again: nothing is lost), then the records go to the metrics
updater, once per batch id, with the batch's figures (records read, rejects, groups left out, topic ids left as
ids, state rows, watermark), then to `on_records`; the job's own counts are kept in `JobStats`.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

from ..core.events import loads_json
from ..core.vocabulary import HISTORY_KINDS
from ..gc_pause import gc_paused
from .processor import CLOCK_KIND

log = logging.getLogger("rebalance_monitor.job")



class SinkUnavailable(RuntimeError):
    """A sink could not write a batch's output (the batch fails, uncommitted, and runs again)."""


class BatchInterrupted(RuntimeError):
    """A micro-batch cancelled because the job is stopping (see `StreamingQueryJob.process_batch`)."""

    def __init__(self, text: str, batch_id: int | None = None):
        super().__init__(text)
        self.batch_id = batch_id


def cancelled(batch_id: int) -> BatchInterrupted:
    """What a batch cancelled by the stop raises: a short text that Spark recognises as its stop's interruption."""
    return BatchInterrupted("py4j.protocol.Py4JJavaError: An error occurred while calling collect: "
                            f"java.lang.InterruptedException (batch {batch_id} cancelled: the monitor is stopping)",
                            batch_id)


def between_batches(query, held, timeout_s: float, poll_s: float = 0.005) -> bool:
    """Wait until stopping `query` interrupts nothing under way: its stream thread waits for its next trigger (no
    trigger active), holds a batch that runs no task (`held()`, see `StreamingQueryJob.process_batch`), or is gone.
    Stopped anywhere else (planning a batch, committing one), Spark logs the interruption at ERROR (a broadcast
    or RocksDB's commit failing). False when no such moment came within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if not query.isActive or held() or not query.status.get("isTriggerActive"):
                return True
        except Exception:  # noqa: BLE001 - the query is going away
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)


class CancelledBatchIsNoError(logging.Filter):
    """py4j logs what a foreachBatch function raised, traceback and all, at ERROR. A batch the monitor's own
    stop cancelled (BatchInterrupted) is no error: it stays uncommitted and runs again at the next start. That
    is said in one INFO line instead (the filter sits on py4j's `py4j.clientserver` logger: `install`)."""

    LOGGER = "py4j.clientserver"

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, BatchInterrupted):
            log.info("batch %s cancelled by the stop: it runs again at the next start", exc.batch_id)
            return False
        return True

    @classmethod
    def install(cls) -> None:
        logger = logging.getLogger(cls.LOGGER)
        if not any(isinstance(f, cls) for f in logger.filters):
            logger.addFilter(cls())


@dataclass
class JobStats:
    """The job's own counts since it started (batches, records read and written, dead letters by reason)."""

    batches: int = 0
    records: dict = field(default_factory=dict)
    dead_letters: dict = field(default_factory=dict)
    last_batch_id: int = -1
    records_read: int = 0
    last_read: int = 0  # Kafka records of the last batch
    last_duration_s: float = 0.0  # of the last batch's driver step
    # references to topic ids of KIP-848 records that kafka.topic_ids could not name (left as ids), per id
    unresolved_topic_ids: dict = field(default_factory=dict)


def handle_batch(job, df, batch_id: int) -> None:
    """One batch of `job` (a StreamingQueryJob): sinks, metrics, counts, `on_records`."""
    t0 = time.monotonic()
    try:
        rows = _collect_output(df)
    except Exception:
        if not job.stopping:
            raise
        # Stopping: Spark cancelled this batch's job. Spark tells a stop from a failure by matching the
        # Python error text against a regex that recurses once per character, and the cancellation's
        # Java trace overflows its stack (the stream thread then dies with StackOverflowError). A short
        # text that names the interruption is recognised as the stop it is; the batch stays uncommitted.
        raise cancelled(batch_id) from None
    # The collector paused while the batch's records are built (a busy batch: a few objects for each of tens of
    # thousands of records, all kept to the end): with it on, they set off full collections, each a walk of
    # every object the driver holds (the metrics' series among them); gc_pause.py.
    with gc_paused():
        records, dead, history = [], [], []
        read = 0
        left_out: set[str] = set()  # groups that groups.allow/deny leave out (their events were dropped)
        unresolved: dict[str, int] = {}  # topic ids left as ids (inputs/topic_ids.py): references per id
        for kind, group, ts, payload in rows:
            if kind == "dead_letter":
                dead.append(payload)
                continue
            rec = loads_json(payload)
            if kind == CLOCK_KIND:
                read += int(rec.get("records") or 0)
                left_out.update(rec.get("left_out") or ())
                for tid, n in (rec.get("unresolved_topic_ids") or {}).items():
                    unresolved[tid] = unresolved.get(tid, 0) + int(n)
                if ts and ts > 0:
                    job.saw_event_time(int(ts))
                continue
            records.append(rec)
            if kind in HISTORY_KINDS:
                history.append((kind, group, ts, payload))
    reasons: dict[str, int] = {}
    for p in dead:
        reason = json.loads(p).get("reason", "unknown")
        reasons[reason] = reasons.get(reason, 0) + 1
    for name, action in (("history", lambda: job.sinks.write_history(batch_id, history)),
                         ("dead_letter", lambda: job.sinks.write_dead_letters(batch_id, dead))):
        try:
            action()
        except Exception as exc:
            # Count it, then fail the batch: it is not committed, so the restarted query (with backoff,
            # see run.run_job) writes it again once the sink is back. Nothing is lost; metrics dedupe replays.
            log.error("batch %s: %s sink failed: %s", batch_id, name, exc)
            if job.updater is not None:
                job.updater.note_sink_error(name)
                job.updater.set_ready(False, f"the {name} sink failed: {exc}"[:500])
            raise SinkUnavailable(f"{name} sink failed: {exc}") from exc
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec["kind"]] = counts.get(rec["kind"], 0) + 1
    if job.updater is not None:
        # once per batch id, persisted before it is exported (a failed save fails the batch: Spark retries it)
        with gc_paused():  # (its series and their text, for each group the batch touched)
            job.updater.apply_batch(batch_id, records, job.metrics_state and job.metrics_state.save,
                                     left_out=left_out, rejects=reasons, duration_s=time.monotonic() - t0,
                                     output_counts=counts, events_read={"kafka": read},
                                     notes={"unresolved_topic_id": sum(unresolved.values())} if unresolved
                                     else None, **progress_figures(job.query))
        job.updater.set_ready(True)
    st = job.stats
    st.batches += 1
    st.last_batch_id = batch_id
    st.records_read += read
    st.last_read = read
    st.last_duration_s = time.monotonic() - t0
    for k, v in counts.items():
        st.records[k] = st.records.get(k, 0) + v
    for k, v in reasons.items():
        st.dead_letters[k] = st.dead_letters.get(k, 0) + v
    if unresolved:
        new = sorted(set(unresolved) - set(st.unresolved_topic_ids))
        for k, v in unresolved.items():
            st.unresolved_topic_ids[k] = st.unresolved_topic_ids.get(k, 0) + v
        if new:
            log.warning("batch %s: unresolved_topic_id: KIP-848 records name topic ids that kafka.topic_ids=%s "
                        "could not name, left as ids: %s", batch_id, job.cfg.kafka.topic_ids, ", ".join(new))
    if job.on_records is not None:
        job.on_records(batch_id, records, dead)


def progress_figures(query) -> dict:
    """State rows and watermark of the query's last progress report (none before the first)."""
    lp = query.lastProgress if query is not None else None
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


def _collect_output(df) -> list[tuple]:
    """The micro-batch's output rows (kind, group, ts, payload) on the driver, through Arrow where the
    DataFrame offers it (a busy batch has tens of thousands of commit records; pickled Rows cost ~10x)."""
    if hasattr(df, "toArrow"):
        table = df.toArrow()
        with gc_paused():  # (a tuple and its strings for each row: see handle_batch)
            return list(zip(*(table.column(name).to_pylist() for name in ("kind", "group", "ts", "payload"))))
    rows = df.collect()
    with gc_paused():
        return [(r.kind, r.group, r.ts, r.payload) for r in rows]


def _iso_ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
