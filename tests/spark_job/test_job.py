"""The streaming job on the real broker and a real SparkSession, compared with `replay` on the same events."""
from __future__ import annotations

import json
import os
import time

import pytest

from helpers.events import heartbeats, hb, stable_group
from helpers.eventually import eventually
from helpers.in_process_job import make_cfg, run_until_idle
from helpers.kafka_produce import produce
from helpers.replay import comparable, replay_records
from helpers.scripted_input import BAD, scripted_events

from rebalance_monitor.config import load_config
from rebalance_monitor.spark.job import StreamingQueryJob

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_job_output_equals_replay_and_dead_letters_bad_records(spark, broker, unique, tmp_path):
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    base = int(time.time() * 1000) - 120_000
    events = scripted_events(base)
    # a third group that groups.deny leaves out: neither driver keeps anything of it
    events = [x for e in events for x in ([e, dict(e, group="scratch-g2")] if e.get("group") == "g2" else [e])]
    produce(broker, topic, events[: len(events) // 2] + BAD + events[len(events) // 2:])
    cfg = make_cfg(broker, topic, tmp_path, **{"kafka.max_offsets_per_trigger": 20, "groups.deny": "scratch-.*"})
    # the Python source decodes as it reads: no separate decode stage in the plan
    plan = StreamingQueryJob(cfg, spark=spark).plan.build()
    assert "MapInArrow" not in plan._jdf.queryExecution().logical().toString()
    collected = []
    # at the end, move event time to exactly the last event (what replay's end of input does)
    run_until_idle(spark, cfg, collected, flush_to=max(e["ts"] for e in events))
    assert len({b for b, recs, _ in collected if recs}) >= 3, "maxOffsetsPerTrigger should split the input"
    spark_records = [r for _, recs, _ in collected for r in recs]
    expected = replay_records(events, cfg)
    assert comparable(spark_records) == comparable(expected)
    assert {r["group"] for r in spark_records} == {"g1", "g2"}
    kinds = {r["kind"] for r in expected}
    assert {"generation", "member_timeout", "rebalance_started"} <= kinds
    assert sum(1 for r in expected if r["kind"] == "member_timeout") == 2
    # every bad record is dead-lettered with a reason, in the file sink too
    dead = [json.loads(p) for _, _, d in collected for p in d]
    assert sorted(d["reason"] for d in dead) == sorted(
        ["not_json", "not_json", "unsupported_version", "missing_field:ts", "unknown_type"])
    files = sorted(os.listdir(tmp_path / "dlq"))
    lines = [json.loads(line) for f in files for line in open(tmp_path / "dlq" / f)]
    assert len(lines) == len(BAD)
    assert all(d["topic"] == topic and "offset" in d for d in lines)
    # the history sink holds every generation exactly once
    import pandas as pd

    hist = pd.read_parquet(tmp_path / "history")
    gens = hist[hist["kind"] == "generation"]
    assert len(gens) == sum(1 for r in expected if r["kind"] == "generation")


def test_restart_from_checkpoint_neither_duplicates_nor_loses_generations(spark, broker, unique, tmp_path):
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    base = int(time.time() * 1000) - 120_000
    events = scripted_events(base)
    half = len(events) // 2
    produce(broker, topic, events[:half])
    cfg = make_cfg(broker, topic, tmp_path)
    collected = []
    run_until_idle(spark, cfg, collected)  # first run, then the job stops
    produce(broker, topic, events[half:])
    # restarted from the same checkpoint
    run_until_idle(spark, cfg, collected, flush_to=max(e["ts"] for e in events))
    spark_records = [r for _, recs, _ in collected for r in recs]
    assert comparable(spark_records) == comparable(replay_records(events, cfg))
    gens = [(r["group"], r["generation"]) for r in spark_records if r["kind"] == "generation"]
    assert len(gens) == len(set(gens))


def test_continuous_trigger_reports_a_session_timeout_of_a_silent_group(spark, broker, unique, tmp_path):
    """Only the groups' clocks following the wall clock can move event time here: after the crash nothing at all
    is produced."""
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    now = int(time.time() * 1000)
    events = stable_group(("a", "b"), start=now - 4000, group="silent")
    events += [hb(now - 3000, "a", 1, group="silent"), hb(now - 2990, "b", 1, group="silent")]
    for e in events:
        e["session_timeout_ms"] = 6000 if "session_timeout_ms" in e else None
        if e["session_timeout_ms"] is None:
            del e["session_timeout_ms"]
    produce(broker, topic, events)
    cfg = make_cfg(broker, topic, tmp_path)
    got = []
    job = StreamingQueryJob(cfg, spark=spark, on_records=lambda b, recs, dead: got.extend(recs))
    job.start()
    try:
        eventually(lambda: sum(1 for r in got if r["kind"] == "member_timeout") >= 2, 90, "two member timeouts")
    finally:
        job.stop()
    timeouts = [r for r in got if r["kind"] == "member_timeout"]
    assert sorted(t["member_id"] for t in timeouts) == ["a", "b"]
    assert all(t["deadline_ms"] == t["last_seen_ms"] + 6000 for t in timeouts)


def test_a_query_that_read_all_there_was_says_its_input_is_idle(spark, broker, unique, tmp_path):
    """What the broker poller waits for before it stamps facts with the wall clock (broker_facts/poller.py): an
    empty input is idle once the query has looked; a query not started is not; events read give their time."""
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    cfg = make_cfg(broker, topic, tmp_path)
    job = StreamingQueryJob(cfg, spark=spark)
    assert not job.input_idle() and job.max_event_ms is None
    job.start()
    try:
        eventually(job.input_idle, 90, "the empty input said idle", interval_s=0.2)
        now = int(time.time() * 1000)
        produce(broker, topic, [hb(now, "a", 1, group="idle")])
        eventually(lambda: job.max_event_ms == now, 90, "the event read", interval_s=0.2)
        eventually(job.input_idle, 90, "idle again once read", interval_s=0.2)
    finally:
        job.stop()


def test_after_a_restart_a_backlog_is_read_before_a_silent_member_times_out(spark, broker, unique, tmp_path):
    """A group whose member heartbeats while the job is down: after the restart its backlog (read over several
    batches) is applied before the group's clock follows the wall clock, so no false timeout; once the member
    is silent for its session, one timeout, reported on a quiet input with no record after the restart."""
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    t = int(time.time() * 1000)
    session = 20_000

    def with_session(evs):
        for e in evs:
            if "session_timeout_ms" in e:
                e["session_timeout_ms"] = session
        return evs

    first = with_session(stable_group(("a",), start=t - 50_000, group="bk"))
    first += heartbeats(["a"], 1, t - 49_000, t - 45_000, group="bk")
    produce(broker, topic, first)
    cfg = make_cfg(broker, topic, tmp_path, **{"kafka.max_offsets_per_trigger": 4})
    got = []
    job = StreamingQueryJob(cfg, spark=spark, on_records=lambda b, recs, dead: got.extend(recs))
    job.start()
    try:
        eventually(lambda: any(r["kind"] == "generation" for r in got), 60, "a generation", interval_s=0.2)
    finally:
        job.stop()
    assert any(r["kind"] == "generation" for r in got)
    # while the job is down, the member goes on heartbeating: a backlog reaching up to now
    backlog = heartbeats(["a"], 1, t - 42_000, int(time.time() * 1000), every=2000, group="bk")
    last_beat = max(e["ts"] for e in backlog)
    produce(broker, topic, backlog)
    job = StreamingQueryJob(cfg, spark=spark, on_records=lambda b, recs, dead: got.extend(recs))
    job.start()
    try:
        until_s = (last_beat + session) / 1000 - time.time() + 60  # a minute past the member's session
        eventually(lambda: any(r["kind"] == "member_timeout" for r in got), until_s, "the member's timeout",
                   interval_s=0.2)
        time.sleep(3)  # not a wait: time for a second, false one (it would come in the same or the next batch)
    finally:
        job.stop()
    timeouts = [r for r in got if r["kind"] == "member_timeout"]
    assert [(r["member_id"], r["deadline_ms"]) for r in timeouts] == [("a", last_beat + session)], timeouts
    assert job.stats.batches >= 3, "the backlog should take several batches"


def test_run_once_equals_replay(spark, broker, unique, tmp_path):
    """`run --once`: process what is there, stop, and say what replay says.
    This one decodes in a separate mapInArrow stage (as with Spark's own Kafka connector), the others in
    the Python source."""
    topic = f"events-{unique}"
    broker.create_topics({topic: 1})
    base = int(time.time() * 1000) - 120_000
    events = scripted_events(base)
    produce(broker, topic, events)
    cfg = make_cfg(broker, topic, tmp_path, **{"kafka.max_offsets_per_trigger": 30,
                                               "kafka.decode_in_source": False})
    got = []
    job = StreamingQueryJob(cfg, spark=spark, idle_clock=False, on_records=lambda b, recs, dead: got.extend(recs))
    assert "MapInArrow" in job.plan.build()._jdf.queryExecution().logical().toString()
    job.run_once(timeout_s=300)
    assert job.query is not None and not job.query.isActive
    assert job.stats.records_read == len(events)  # Kafka records, though the state operator sees packed rows
    assert comparable(got) == comparable(replay_records(events, cfg))


class _CancelledFrame:
    """A micro-batch DataFrame whose job Spark cancelled (what `query.stop()` does to a batch under way):
    collecting it raises an error carrying a long Java trace."""

    def toArrow(self):
        raise RuntimeError("py4j.protocol.Py4JJavaError: An error occurred while calling o1.toArrow.\n"
                           + "\tat org.apache.spark.SomeClass.method(SomeClass.scala:1)\n" * 2000)


def test_a_batch_cancelled_by_stop_fails_with_a_short_interruption_text(tmp_path):
    # Spark matches the foreachBatch error text with a regex that recurses per character: a long text
    # overflows the stream thread's stack (seen on every stop during a busy batch). While stopping, the
    # job passes on a short text naming java.lang.InterruptedException, which Spark reads as the stop.
    from rebalance_monitor.spark.batch import handle_batch
    from rebalance_monitor.spark.batch import BatchInterrupted

    cfg = load_config(env={}, overrides={"state.checkpoint_location": str(tmp_path / "ck"),
                                         "exporter.enabled": False})
    job = StreamingQueryJob(cfg, spark=object(), idle_clock=False)
    with pytest.raises(RuntimeError) as err:  # not stopping: the batch fails with Spark's own error
        job.process_batch(_CancelledFrame(), 7)
    assert not isinstance(err.value, BatchInterrupted)
    job.stop()  # (no query yet: only marks the job stopping)
    # a batch under way when the stop gave up waiting for it: its collect is cancelled
    with pytest.raises(BatchInterrupted) as err:
        handle_batch(job, _CancelledFrame(), 7)
    text = str(err.value)
    assert len(text) < 300 and "java.lang.InterruptedException" in text
    assert err.value.__cause__ is None and err.value.__suppress_context__
    # a batch starting once the job is stopping collects nothing (no task to interrupt) and ends the same way
    with pytest.raises(BatchInterrupted) as err:
        job.process_batch(_CancelledFrame(), 8)
    assert str(err.value) == text.replace("batch 7", "batch 8") and err.value.batch_id == 8


class _BusyQuery:
    """A query whose trigger stays active (batches back to back, as `run --once` runs them) until stopped."""

    def __init__(self):
        self.isActive = True
        self.status = {"isTriggerActive": True}

    def stop(self):
        self.isActive = False


def test_a_stop_holds_the_next_batch_and_stops_there(tmp_path):
    """stop_query (run --once, read_available, flush, a restart) stops the query between two batches: with the
    trigger never idle, the next batch to start is held, runs no task, and the stop goes on at once, not after
    STOP_WAIT_S (batch.between_batches)."""
    import threading

    from rebalance_monitor.spark.batch import BatchInterrupted
    from rebalance_monitor.spark.job import STOP_WAIT_S

    cfg = load_config(env={}, overrides={"state.checkpoint_location": str(tmp_path / "ck"),
                                         "exporter.enabled": False})
    job = StreamingQueryJob(cfg, spark=object(), idle_clock=False)
    job.query = q = _BusyQuery()
    stopping = threading.Thread(target=job.stop_query)
    t0 = time.monotonic()
    stopping.start()
    time.sleep(0.2)
    assert q.isActive  # a batch under way is not stopped: the stop waits for the next one to start
    with pytest.raises(BatchInterrupted):  # the next batch: held, collects nothing, ends as the stop's interruption
        job.process_batch(_CancelledFrame(), 9)
    stopping.join(STOP_WAIT_S)
    assert not q.isActive and time.monotonic() - t0 < STOP_WAIT_S / 2
    # a query that is gone is stopped without waiting
    job.query = q = _BusyQuery()
    q.isActive = False
    t0 = time.monotonic()
    job.stop_query()
    assert time.monotonic() - t0 < 1


def test_the_state_servers_warning_on_a_new_groups_first_read_is_quieted(spark):
    # the processor reads a group's state without asking whether it exists (one round trip less per group
    # and batch); the state server warns on each such read of a new group: not an operator's concern
    from rebalance_monitor.spark.session import QUIET_LOGGERS

    jvm = spark.sparkContext._jvm
    for name in QUIET_LOGGERS:
        assert jvm.org.apache.logging.log4j.LogManager.getLogger(name).getLevel().toString() == "ERROR"
