"""End to end: every workload scenario runs real consumer groups on the real broker while the real Spark job
watches; the records it outputs must show what each scenario promises (generations, causes, timeouts,
storms, final membership, assignors and expected assignments)."""
from __future__ import annotations

import json
import threading
import time
from typing import NamedTuple

import pytest

from helpers.log_shipper import LogShipper

from rebalance_monitor.config import load_config
from rebalance_monitor.testing.broker import TEST_BROKER_SETTINGS
from rebalance_monitor.testing.kafka_install import KAFKA_VERSION
from rebalance_monitor.testing.witness_compare import View, blind_spot, compare, witnesses_of
from rebalance_monitor.spark.job import StreamingQueryJob
from rebalance_monitor.workload import SCENARIOS, ScenarioError, run_scenario, storm_threshold

pytestmark = [pytest.mark.integration, pytest.mark.spark]

EVENTS_TOPIC = "scenario-events"
LOG_TOPIC, LOG_TOPIC_JSON = "scenario-coordinator-log", "scenario-coordinator-log-json"
OFFSETS_PARTITIONS = int(TEST_BROKER_SETTINGS["offsets.topic.num.partitions"])

# two lanes of about the same length (estimated_s), run side by side on the shared Apache Kafka broker
LANES = [["storm", "crash", "steady", "static_restart", "partition_change", "kip848_crash", "kip848_slow"],
         ["rolling_restart", "slow_consumer", "scale_out", "scale_in", "mixed_assignors", "kip848_scale",
          "java_classic"]]
CLASSIC = [n for n in SCENARIOS if n in {x for lane in LANES for x in lane}]
assert sorted(n for lane in LANES for n in lane) == sorted(CLASSIC)
# one more generation than any scenario without a storm can produce, at most the fewest a storm scenario produces
# (each scenario's worst case, `generations_max`, is derived next to it in workload/scenarios.py and kip848.py)
STORM_MIN_REBALANCES = storm_threshold(CLASSIC)


class Watched(NamedTuple):
    results: dict  # scenario name -> its result
    errors: dict  # scenario name -> why it failed
    records: list  # the live job's (the events witness)
    witnesses: dict  # witness -> its job's records
    dead_letters: list  # the live job's
    bootstrap: str


@pytest.fixture(scope="module")
def watched(spark, broker, tmp_path_factory):
    """Run every scenario (in two lanes) under one running job; collect its records."""
    tmp = tmp_path_factory.mktemp("scenarios")
    events_topic = EVENTS_TOPIC
    broker.create_topics({events_topic: 1})
    cfg = load_config(env={}, overrides={
        "kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": events_topic,
        "kafka.starting_offsets": "earliest", "kafka.connector": "python",
        "state.checkpoint_location": str(tmp / "ck"), "state.watermark_delay": "1s",
        "sinks.history.parquet_path": str(tmp / "history"), "sinks.dead_letter.path": str(tmp / "dlq"),
        "exporter.enabled": False, "spark.trigger_interval": "1s",
        "core.settle": "10s", "storm.min_rebalances": STORM_MIN_REBALANCES})
    records: list[dict] = []
    dead: list[dict] = []
    lock = threading.Lock()

    def keep(_batch, recs, dead_letters):
        with lock:
            records.extend(recs)
            dead.extend(json.loads(p) for p in dead_letters)

    job = StreamingQueryJob(cfg, spark=spark, on_records=keep)
    job.start()
    results: dict[str, object] = {}
    errors: dict[str, Exception] = {}

    def lane(names):
        # each scenario runs once: one that cannot drive the broker to the state it needs is a bug to find (see
        # tests/README.md, "The end-to-end scenarios")
        for name in names:
            try:
                results[name] = run_scenario(name, broker.bootstrap, events_topic, group=f"e2e-{name}")
            except ScenarioError as exc:
                errors[name] = exc

    # the broker's coordinator log, shipped into topics as a log shipper would (bare lines, Filebeat JSON)
    shippers = [LogShipper(broker.bootstrap, topic, [broker.coordinator_log], form=form).start()
                for topic, form in ((LOG_TOPIC, "bare"), (LOG_TOPIC_JSON, "json"))]
    threads = [threading.Thread(target=lane, args=(names,)) for names in LANES]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    # the idle clock moves event time on; give the job a few triggers to fire the last timers
    time.sleep(12)
    job.stop()
    for shipper in shippers:
        shipper.stop()
    with lock:
        snapshot = list(records)
        dead_letters = list(dead)
    # the two broker-side witnesses, each read by the Spark job on its own from the start of its input
    witnesses = {"events": snapshot}
    for witness, overrides in (("coordinator-log", {"kafka.coordinator_log_topic": LOG_TOPIC}),
                               ("offsets-topic", {"kafka.offsets_topic": "__consumer_offsets",
                                                  "kafka.offsets_topic_partitions": OFFSETS_PARTITIONS})):
        got: list[dict] = []
        wcfg = load_config(env={}, overrides={
            "kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": "", **overrides,
            "kafka.starting_offsets": "earliest", "kafka.connector": "python",
            "state.checkpoint_location": str(tmp / f"ck-{witness}"), "state.watermark_delay": "1s",
            "sinks.history.parquet_path": str(tmp / f"history-{witness}"),
            "sinks.dead_letter.path": str(tmp / f"dlq-{witness}"), "exporter.enabled": False,
            "core.settle": "10s", "storm.min_rebalances": STORM_MIN_REBALANCES})
        StreamingQueryJob(wcfg, spark=spark, on_records=lambda _b, recs, _d, got=got: got.extend(recs)).run_once()
        witnesses[witness] = got
    return Watched(results, errors, snapshot, witnesses, dead_letters, broker.bootstrap)


def _before(rec: dict, cutoff: int) -> bool:
    t = rec.get("completed_ms") or rec.get("deadline_ms") or rec.get("started_ms") or rec.get("ts")
    return t is not None and t <= cutoff


@pytest.mark.parametrize("name", CLASSIC)
def test_scenario_is_reported_as_promised(watched, name):
    results, errors, records, witnesses = watched[:4]
    assert name not in errors, f"the scenario itself failed: {errors.get(name)!r}"
    res = results[name]
    exp = res.expect
    # the job over the instrumented clients' events, or over the coordinator log for a group that has none (Java)
    records = witnesses[witnesses_of(exp)[0]]
    cutoff = res.cleanup_ms or res.ended_ms
    mine = [r for r in records if r["group"] == res.group and _before(r, cutoff)]
    gens = sorted((r for r in mine if r["kind"] == "generation"), key=lambda r: r["generation"])
    assert len(gens) >= exp.get("generations_min", 1), [g["generation"] for g in gens]
    if "generations_max" in exp:  # the scenario's worst case, which the storm threshold is set from
        assert len(gens) <= exp["generations_max"], [g["generation"] for g in gens]
    causes = {c["cause"] for g in gens for c in g["causes"]}
    for cause in exp.get("causes", []):
        assert cause in causes, (cause, causes)
    if exp.get("causes_any"):
        assert causes & set(exp["causes_any"])
    if "timeouts" in exp:
        timeouts = [r for r in mine if r["kind"] == "member_timeout"]
        want = {t["timeout"]: t["count"] for t in exp["timeouts"]}
        got = {}
        for t in timeouts:
            got[t["timeout"]] = got.get(t["timeout"], 0) + 1
        assert got == want, (got, want)
    if "storm" in exp:
        storms = [r for r in mine if r["kind"] == "storm"]  # started before the teardown
        assert bool(storms) == exp["storm"], storms
        if "storm_pattern" in exp:  # what the first storm looks like, as the job last said (it may start as mixed)
            first = [s for s in storms if s["started_ms"] == storms[0]["started_ms"]]
            assert first[-1]["pattern"] == exp["storm_pattern"], first
    if "members_final" in exp:
        assert len(gens[-1]["members"]) == exp["members_final"], gens[-1]["members"]
    if exp.get("members_final_as_clients"):
        # the clients' own view at the scenario's last stable point (their generation and member ids)
        last = [a for a in res.actions if a["action"] == "stable"][-1]
        assert (gens[-1]["generation"], sorted(gens[-1]["members"])) == (last["generation"], sorted(last["member_ids"]))
    if exp.get("group_protocol") == "consumer":
        # a KIP-848 group is never Dead or Unknown (what tools that describe it with the classic API say)
        states = {r["state"] for r in records if r["group"] == res.group and r["kind"] == "group_status"}
        assert states and not states & {"Dead", "Unknown"}, states
    if exp.get("generation_kept_on_restart"):
        done = [a for a in res.actions if a["action"] == "restart_done"][-1]
        assert done["generation_before"] == done["generation_after"], done
        assert gens[-1]["generation"] == done["generation_before"], [g["generation"] for g in gens]
    if "protocol_first" in exp:
        assert gens[0]["protocol"] == exp["protocol_first"]
    if "protocols" in exp:
        assert {g["protocol"] for g in gens} == set(exp["protocols"]), [g["protocol"] for g in gens]
    if exp.get("expected_assignment_matches"):
        # recomputed with the group's assignor from what the members declared, and equal to what they got
        assert gens[-1]["expected_assignment"] is not None, gens[-1]["expected_reason"]
        judged = [g for g in gens if g["mismatched_partitions"] is not None]
        assert gens[-1] in judged
        assert all(g["mismatched_partitions"] == 0 for g in judged), \
            [(g["generation"], g["assignment"], g["expected_assignment"]) for g in judged]
    # every generation the monitor reconstructed carries who caused it
    assert all(g["causes"] for g in gens)


@pytest.mark.parametrize("name", CLASSIC)
def test_three_witnesses_agree_in_the_spark_job(watched, name):
    """The Spark job's records from each input alone (instrumented clients; the broker's coordinator log shipped
    into a topic; `__consumer_offsets`), held against what the clients saw and against each other."""
    results, errors, _records, witnesses = watched[:4]
    assert name not in errors, f"the scenario itself failed: {errors.get(name)!r}"
    res = results[name]
    truth = {"stable": [{"generation": a["generation"], "member_ids": a["member_ids"]}
                        for a in res.actions if a["action"] == "stable"]}
    views = {w: View.of(recs, res.group, res.cleanup_ms or res.ended_ms) for w, recs in witnesses.items()
             if w in witnesses_of(res.expect)}
    kip848 = res.expect.get("group_protocol") == "consumer"
    errors = [f for f in compare(name, truth, views) if blind_spot(KAFKA_VERSION, f, kip848) is None]
    assert not errors, "\n".join(map(str, errors)) + _what_each_saw(watched, res.group)


def _what_each_saw(watched, group) -> str:
    """For a failure's message: the clients' membership events of `group` and each witness's generations."""
    from rebalance_monitor.testing.witnesses import read_topic

    lines = ["", "client events:"]
    for _k, value, _ts in read_topic(watched.bootstrap, EVENTS_TOPIC):
        e = json.loads(value)
        if e.get("group") == group and e["type"] not in ("heartbeat", "poll", "commit"):
            lines.append(f"  {e['ts']} {e['type']} {e.get('member_id') or e.get('client_id')} "
                         f"gen={e.get('generation')} {e.get('assignment') or ''}")
    for w, recs in watched.witnesses.items():
        lines.append(f"{w}:")
        lines += [f"  {r.get('completed_ms')} gen={r['generation']} members={r['members']} "
                  f"assignment={r.get('assignment')} causes={[c['cause'] for c in r['causes']]}"
                  for r in recs if r.get("group") == group and r["kind"] == "generation"]
    return "\n".join(lines)


def test_no_event_of_the_scenarios_was_dead_lettered(watched):
    """The instrumented clients' events all reach the job in time (the watermark covers their delivery on this
    machine) and all decode: a late or bad event would leave a generation short of a member."""
    assert not [(d.get("reason"), d.get("detail"), d.get("group")) for d in watched.dead_letters], \
        watched.dead_letters[:20]


def test_the_shipped_log_forms_decode_alike(watched, broker):
    """Bare lines and Filebeat's JSON form of the same coordinator log give the same events."""
    from rebalance_monitor.decoding.reference import decode_record
    from rebalance_monitor.testing.witnesses import read_topic

    forms = {}
    for topic in (LOG_TOPIC, LOG_TOPIC_JSON):
        events = []
        for _k, value, ts in read_topic(broker.bootstrap, topic):
            evs, rejects = decode_record("coordinator-log", value, ts_ms=ts)
            assert not rejects, rejects
            # (the JSON form's time is the shipper's @timestamp, a few hundred ms after the line's own)
            events.extend((e.type, e.group, getattr(e, "member_id", None), getattr(e, "generation", None))
                          for e in evs)
        forms[topic] = events
    assert forms[LOG_TOPIC] and forms[LOG_TOPIC] == forms[LOG_TOPIC_JSON]
