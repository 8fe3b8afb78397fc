"""A run of the exporter over records of every kind, whose exposition texts are kept as test data.

``scenario(granularity)`` drives one ``MetricsUpdater`` (fixed clock) through micro-batches holding every record kind
the exporter reads (generation, rebalance_started, member_timeout, member_at_risk, storm, group_status, coordinator,
offsets_committed from the stream and from the brokers, end_offsets, group_deleted) with the corner cases of each
(late generations, replayed records, malformed offsets, label values to escape, groups denied, over max_groups,
left out upstream, expired by the TTL), the self metrics (the Kafka cluster's up and last read too), the exposition held while a snapshot is persisted, and a
restart from the snapshot. It returns the texts seen on the way: ``tests/metrics/data/golden-<granularity>.txt``
holds them as the code produced them when the file was written; ``tests/metrics/test_golden_exposition.py`` compares.

    PYTHONPATH=streaming python tests/helpers/golden_exposition.py --write    # rewrite the data (on purpose only)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from rebalance_monitor.metrics.docs import sample_records
from rebalance_monitor.metrics.updater import MetricsUpdater

T0 = 1_700_000_000_000
DATA = Path(__file__).resolve().parents[1] / "metrics" / "data"
WEIRD = 'we"ird\\grp\nname'


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _gen(group, generation, completed_ms, causes=("member_joined",), members=("m1", "m2"), duration_ms=1500, **kw):
    r = {"kind": "generation", "group": group, "generation": generation, "protocol": "range",
         "leader": members[0] if members else None,
         "started_ms": None if duration_ms is None else completed_ms - duration_ms, "completed_ms": completed_ms,
         "ts": completed_ms, "duration_ms": duration_ms, "causes": [{"cause": c} for c in causes],
         "members": list(members), "mismatched_partitions": 0, "unassigned_partitions": 0,
         "partitions_moved": 2, "imbalance": 1, "min_moves": 1}
    r.update(kw)
    return r


def _status(group, ts, state, generation=1, members=2, ratio=0.5, in_storm=False, part=3, poll_ratio=0.25, **kw):
    r = {"kind": "group_status", "group": group, "ts": ts, "state": state, "generation": generation,
         "protocol": "range", "leader": "m1", "members": members, "max_heartbeat_gap_ratio": ratio,
         "heartbeat_gap_ratios": {}, "in_storm": in_storm, "rebalancing_since_ms": None,
         "coordinator_partition": part, "max_poll_gap_ratio": poll_ratio, "poll_gap_ratios": {}}
    r.update(kw)
    return r


def _risk(group, member, risk, ts, deadline_ms, **identity):
    return {"kind": "member_at_risk", "group": group, "ts": ts, "member_id": member, "risk": risk,
            "last_seen_ms": None, "warn_ms": ts, "deadline_ms": deadline_ms, "limit_ms": 30_000, "detected_ms": ts,
            **identity}


def batches() -> list[tuple[list[dict], dict, list[str]]]:
    """(records, record_batch figures, groups left out upstream) of each micro-batch."""
    t = T0
    b0 = sample_records() + [
        # a group whose state is only inferred (no group_status): Empty generation, then a rebalance start
        _gen("billing", 1, t - 50_000, causes=(), members=(), duration_ms=None, min_moves=None,
             mismatched_partitions=None, group_type="consumer"),
        {"kind": "rebalance_started", "group": "billing", "generation": 1, "started_ms": t - 45_000,
         "causes": [{"cause": "member_joined"}]},
        {"kind": "offsets_committed", "group": "billing", "ts": t - 44_000, "source": "broker",
         "offsets": [["invoices", 0, 5], ["invoices", 1, 9], ["bad"], ["invoices", 2, -1], ["invoices", 3, "x"]]},
        {"kind": "end_offsets", "group": "", "offsets": [["invoices", 0, 8], ["invoices", 1, 9], None]},
        # label values that need escaping; a timeout without client id or host
        _gen(WEIRD, 4, t - 30_000, causes=("member_left", "member_left", "heartbeat_expired"),
             protocol='we"ird', group_type="share"),
        {"kind": "member_timeout", "group": WEIRD, "member_id": "w1", "timeout": "session", "detected_ms": t - 29_000},
        # members at risk (a series each, valued its deadline): labels to escape, one without client id or host,
        # one whose record lacks its deadline (ignored)
        _risk(WEIRD, "w2", "poll", t - 28_500, t + 60_000, client_id='c"2', host="/10.0.0.9"),
        _risk("billing", "b-2", "poll", t - 40_000, t - 10_000, client_id="billing-2", host="/10.0.0.2"),
        _risk("billing", "b-3", "session", t - 40_000, t + 2, client_id="billing-3", host="/10.0.0.3"),
        _risk("billing", "b-4", "session", t - 40_000, None),
        _risk("billing", "b-5", "session", t - 40_000, t + 3),
        {"kind": "storm", "group": WEIRD, "started_ms": t - 28_000, "ended_ms": None, "pattern": 'fl"ap\n'},
        {"kind": "coordinator", "group": WEIRD, "ts": t - 27_000, "partition": 4, "broker": 'b"1', "action": "elected"},
        # ignored: an unknown kind, a group that is not a string, a denied group
        {"kind": "no_such_kind", "group": "billing"},
        {"kind": "generation", "group": None, "generation": 1},
        _gen("tmp-scratch", 1, t - 20_000),
    ]
    figures0 = {"events_read": {"events": 120, "offsets-topic": 7}, "rejects": {"invalid_json": 2},
                "duration_s": 0.42, "state_rows": 80, "watermark_ms": t - 12_000,
                "output_counts": {"generation": 4, "group_status": 1}, "notes": {"unresolved_topic_id": 1}}
    b1 = [
        # the same generation again (replayed), a late older generation, then newer ones
        sample_records()[4],
        _gen("orders-service", 11, t - 38_000, causes=("member_joined",), members=("c-1", "c-2", "c-3")),
        _gen("billing", 2, t + 2_000, causes=("member_joined",), members=("b-1",), duration_ms=47_000,
             partitions_moved=3, min_moves=1, imbalance=0),
        {"kind": "member_timeout", "group": "billing", "member_id": "b-2", "timeout": "poll", "detected_ms": t + 1,
         "client_id": "billing-2", "host": "/10.0.0.2"},
        {"kind": "member_timeout", "group": "billing", "member_id": "b-2", "timeout": "poll", "detected_ms": t + 1,
         "client_id": "billing-2", "host": "/10.0.0.2"},
        {"kind": "member_timeout", "group": "billing", "member_id": "b-3", "timeout": "session",
         "detected_ms": t + 2, "client_id": "billing-3", "host": "/10.0.0.3"},
        # the streams group of sample_records: s2's thread gone, s3 a second thread of p1 (moves within the process), one misplaced
        _gen("word-count", 4, t + 2_500, members=("s1", "s3"), protocol="sticky", group_type="streams",
             mismatched_partitions=None, partitions_moved=None, min_moves=None, imbalance=None, mismatched_tasks=1,
             tasks_moved_between_processes=2, tasks_moved_within_process=2, tasks={
                 "s1": {"process_id": "p1", "client_id": "wc-1-StreamThread-1-consumer", "epoch": 4,
                        "active": [["0", 0], ["1", 0]], "standby": [], "warmup": []},
                 "s3": {"process_id": "p1", "client_id": "wc-1-StreamThread-2-consumer", "epoch": 4,
                        "active": [["0", 1], ["1", 1]], "standby": [], "warmup": [["0", 1]]}}),
        # the storm ends (its end repeats its start key), a second one starts
        {"kind": "storm", "group": WEIRD, "started_ms": t - 28_000, "ended_ms": t, "pattern": "scaling"},
        {"kind": "storm", "group": "orders-service", "started_ms": t - 20_000, "ended_ms": t + 3_000,
         "pattern": "rolling_restart"},
        # the coordinator's description disagrees with the reconstruction (twice the same record: counted once),
        # then agrees (not counted)
        {"kind": "broker_view", "group": "billing", "ts": t + 10, "broker_epoch": 7, "monitor_epoch": 7,
         "agrees": False, "differences": ["member b-9: the broker has it, the monitor does not"]},
        {"kind": "broker_view", "group": "billing", "ts": t + 10, "broker_epoch": 7, "monitor_epoch": 7,
         "agrees": False, "differences": ["member b-9: the broker has it, the monitor does not"]},
        {"kind": "broker_view", "group": "billing", "ts": t + 20, "broker_epoch": 7, "monitor_epoch": 7,
         "agrees": True, "differences": []},
        # a member at risk that its group's status still lists (kept), then one it does not (dropped)
        _risk("orders-service", "c-1", "poll", t + 3_000, t + 33_000, client_id="orders-1", host="/10.0.0.11"),
        _risk("orders-service", "c-3", "session", t + 3_000, t + 8_000, client_id="orders-3", host="/10.0.0.13"),
        # a group status entering a rebalance (snapshots the lag), a coordinator moving and resigning
        _status("orders-service", t + 4_000, "PreparingRebalance", members_at_risk=[["c-1", "poll"], ["c-9", "poll"]], generation=12, members=2, ratio=1.25,
                in_storm=False, part=17, rebalancing_since_ms=t + 3_500, client_standard_metrics=[
                    # a librdkafka client's standard metrics (no rebalance count), a Java client's, a bad entry
                    {"client_id": "rdkafka", "client_instance_id": "Zm9vYmFyYmF6cXV4MTIzNA", "source": "kip714",
                     "ts": t + 3_000, "poll_idle_ratio": 0.75, "rebalance_latency_avg_ms": 120,
                     "rebalance_latency_max_ms": 250, "rebalances_total": None, "rebalance_latency_total_ms": 370},
                    {"client_id": "java-1", "client_instance_id": "cXV4YmF6YmFyZm9vMTIzNA", "source": "kip714",
                     "ts": t + 3_000, "poll_idle_ratio": 0.5, "rebalance_latency_avg_ms": 30,
                     "rebalance_latency_max_ms": 30, "rebalances_total": 2, "rebalance_latency_total_ms": 60},
                    "not an entry"]),
        {"kind": "coordinator", "group": "orders-service", "ts": t + 4_000, "partition": 17, "broker": None,
         "action": "elected"},
        {"kind": "coordinator", "group": WEIRD, "ts": t + 4_000, "partition": 4, "action": "resigned"},
        {"kind": "end_offsets", "group": "", "ts": t + 5_000,
         "offsets": [["orders", 0, 1700], ["orders", 1, 990], ["invoices", 0, 20], ["invoices", 1, 9]]},
        {"kind": "offsets_committed", "group": "orders-service", "ts": t - 1, "offsets": [["orders", 0, 3]]},
        {"kind": "offsets_committed", "group": "orders-service", "ts": t + 5_000,
         "offsets": [["orders", 0, 1200], ["orders", 2, 0]]},
        # over max_groups (5): dropped, counted once
        _gen("late-1", 1, t + 5_000), _gen("late-2", 1, t + 5_000), _gen("late-1", 2, t + 6_000),
    ]
    figures1 = {"events_read": {"events": 40}, "rejects": {"invalid_json": 1, "late_event": 3}, "duration_s": 7.5,
                "state_rows": 95, "watermark_ms": t - 2_000, "output_counts": {"generation": 3, "storm": 2}}
    b2 = [
        _status("orders-service", t + 8_000, "CompletingRebalance", generation=13, members=3, ratio=None,
                in_storm=True, part=18, members_at_risk=[]),
        _risk("orders-service", "c-2", "session", t + 8_500, t + 14_000, client_id="orders-2", host="/10.0.0.12"),
        _status("billing", t + 8_000, "Dead", generation=2, members=0, ratio=0, part="nope"),
        {"kind": "group_deleted", "group": WEIRD, "ts": t + 8_000},
        {"kind": "group_deleted", "group": "never-seen", "ts": t + 8_000},
        # room again under max_groups: a new group is admitted
        {"kind": "group_status", "group": "fresh", "ts": t + 9_000, "state": "NotAState", "members": "many"},
        {"kind": "end_offsets", "group": "", "ts": t + 10_000,
         "offsets": [["orders", 0, 1800], ["orders", 1, 1000], ["orders", 2, 4], ["invoices", 0, 25]]},
    ]
    figures2 = {"events_read": {"events": 10, "coordinator-log": 2}, "duration_s": 0.0, "watermark_ms": 0}
    return [(b0, figures0, []), (b1, figures1, ["scratch", "tmp-x"]), (b2, figures2, ["scratch", "other"])]


def scenario(granularity: str, prerender: bool = True) -> list[tuple[str, str]]:
    """(what, text) of every exposition (and snapshot) the run produced, in order."""
    out: list[tuple[str, str]] = []
    clock = Clock(T0 / 1000)
    u = MetricsUpdater(clock=clock, max_groups=5, group_deny=r"tmp-.*", idle_group_ttl_s=3600, ready_max_age_s=60,
                       time_lag_samples=4, prerender=prerender, lag_granularity=granularity)
    out.append(("empty", u.render()))
    u.set_ready(False, "starting")
    for n, (recs, figures, left_out) in enumerate(batches()):
        clock.t += 5
        held: list[str] = []

        def persist(upd, batch_id, held=held):
            held.append(upd.render())         # what a scrape sees while the snapshot is being written

        u.apply_batch(n, recs, persist=persist, left_out=left_out, **figures)
        out.append((f"batch {n}: held while persisting", held[0]))
        if n == 0:
            u.set_ready(True)
            u.set_kafka_up(True)
            u.note_kafka_read()
            u.note_sink_error("kafka")
            u.note_broker_facts_error("describe_configs_denied")
        out.append((f"batch {n}", u.render()))
        u.apply_batch(n, recs, **figures)     # Spark runs the batch again: skipped
        out.append((f"batch {n} again", u.render()))
    u.note_sink_error("history")
    u.note_sink_error("kafka")
    u.mark_alive()
    u.note_kafka_read()                       # an idle check that found nothing new to read
    out.append(("state", u.state_text(2, query_id="q-1")))
    restarted = MetricsUpdater(clock=clock, max_groups=5, group_deny=r"tmp-.*", idle_group_ttl_s=3600,
                               ready_max_age_s=60, time_lag_samples=4, prerender=prerender,
                               lag_granularity=granularity)
    restarted.load_state(json.loads(out[-1][1]))
    out.append(("restarted from the state", restarted.render()))
    clock.t += 120                            # the last batch is too old: not ready
    u.set_up(False)
    u.set_kafka_up(False)
    out.append(("stale", u.render()))
    clock.t += 3600 - 100                     # the groups of batch 0 only, and their end offsets, expire
    u.apply([{"kind": "group_status", "group": "fresh", "ts": T0 + 3_600_000, "state": "Empty", "members": 0}],
            now_ms=int(clock.t * 1000))
    out.append(("expired", u.render()))
    return out


def golden_path(granularity: str) -> Path:
    return DATA / f"golden-{granularity}.txt"


def as_text(snapshots: list[tuple[str, str]]) -> str:
    return "".join(f"===== {what}\n{text}" + ("" if text.endswith("\n") else "\n") for what, text in snapshots)


def main(argv: list[str]) -> int:
    from rebalance_monitor.metrics.catalogue import LAG_GRANULARITIES

    if argv[:1] != ["--write"]:
        print(__doc__, file=sys.stderr)
        return 2
    DATA.mkdir(exist_ok=True)
    for g in LAG_GRANULARITIES:
        golden_path(g).write_text(as_text(scenario(g)), encoding="utf-8")
        print(golden_path(g))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
