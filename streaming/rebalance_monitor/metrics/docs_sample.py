"""The sample history docs/metrics.md shows: two groups' records as the core would emit them, and the exposition
the real updater makes of them (``docs.py`` renders the page; the golden run, the demo and tests replay the records).
"""
from __future__ import annotations

from .updater import MetricsUpdater

T0 = 1_700_000_000_000      # fixed sample time (ms) so the page is reproducible


def sample_records() -> list[dict]:
    """A small, realistic history of two groups, as the core would emit it."""
    g = "orders-service"
    return [
        {"kind": "end_offsets", "group": "", "ts": T0 - 60_000, "offsets": [["orders", 0, 1000], ["orders", 1, 900]]},
        {"kind": "coordinator", "group": g, "ts": T0 - 59_000, "partition": 17, "broker": 2, "action": "elected"},
        {"kind": "offsets_committed", "group": g, "ts": T0 - 55_000, "member_id": "c-1",
         "offsets": [["orders", 0, 990], ["orders", 1, 900]]},
        {"kind": "rebalance_started", "group": g, "generation": 11, "started_ms": T0 - 40_000,
         "causes": [{"cause": "member_left", "member_id": "c-3", "client_id": "orders-3", "host": "/10.0.0.13",
                     "reason": "the consumer is being closed"}]},
        {"kind": "generation", "group": g, "generation": 12, "protocol": "cooperative-sticky", "leader": "c-1",
         "started_ms": T0 - 40_000, "completed_ms": T0 - 37_600, "ts": T0 - 37_600, "duration_ms": 2_400,
         "causes": [{"cause": "member_left", "member_id": "c-3"}], "members": ["c-1", "c-2"],
         "assignment": {"c-1": [["orders", 0]], "c-2": [["orders", 1]]},
         "expected_assignment": {"c-1": [["orders", 0]], "c-2": [["orders", 1]]}, "mismatched_partitions": 0,
         "unassigned_partitions": 0, "partitions_moved": 1, "imbalance": 0, "min_moves": 1},
        {"kind": "member_timeout", "group": g, "member_id": "c-2", "timeout": "poll", "last_seen_ms": T0 - 330_000,
         "deadline_ms": T0 - 30_000, "detected_ms": T0 - 29_000, "client_id": "orders-2", "host": "/10.0.0.12"},
        {"kind": "broker_view", "group": g, "ts": T0 - 25_000, "broker_epoch": 12, "monitor_epoch": 12,
         "agrees": False, "differences": ["member c-4: the broker has it, the monitor does not"]},
        {"kind": "storm", "group": g, "started_ms": T0 - 20_000, "ended_ms": None, "rebalances": 4,
         "window_ms": 600_000, "pattern": "rolling_restart", "pattern_detail": "2 members restarted in turn"},
        {"kind": "end_offsets", "group": "", "ts": T0 - 30_000, "offsets": [["orders", 0, 1300], ["orders", 1, 960]]},
        {"kind": "end_offsets", "group": "", "ts": T0, "offsets": [["orders", 0, 1600], ["orders", 1, 960]]},
        {"kind": "offsets_committed", "group": g, "ts": T0, "member_id": "c-1",
         "offsets": [["orders", 0, 1150], ["orders", 1, 960]]},
        {"kind": "group_status", "group": g, "ts": T0, "state": "Stable", "generation": 12,
         "protocol": "cooperative-sticky", "leader": "c-1", "members": 2, "max_heartbeat_gap_ratio": 0.31,
         "heartbeat_gap_ratios": {"c-1": 0.31, "c-2": 0.05}, "in_storm": True, "rebalancing_since_ms": None,
         "coordinator_partition": 17, "max_poll_gap_ratio": 0.12, "poll_gap_ratios": {"c-1": 0.12, "c-2": 0.02},
         "client_standard_metrics": [
             {"client_id": "py-worker", "client_instance_id": "Zm9vYmFyYmF6cXV4MTIzNA", "source": "kip714",
              "ts": T0, "poll_idle_ratio": 0.82, "rebalance_latency_avg_ms": 140, "rebalance_latency_max_ms": 310,
              "rebalances_total": None, "rebalance_latency_total_ms": 450},
             {"client_id": "java-1", "client_instance_id": "cXV4YmF6YmFyZm9vMTIzNA", "source": "kip714",
              "ts": T0, "poll_idle_ratio": 0.4, "rebalance_latency_avg_ms": 35, "rebalance_latency_max_ms": 60,
              "rebalances_total": 3, "rebalance_latency_total_ms": 105}]},
        # a streams group (KIP-1071): its members' tasks, the tasks moved, the sticky task assignor's check
        {"kind": "generation", "group": "word-count", "generation": 3, "protocol": "sticky", "group_type": "streams",
         "started_ms": T0 - 27_500, "completed_ms": T0 - 26_000, "ts": T0 - 26_000, "duration_ms": 1_500,
         "causes": [{"cause": "member_joined", "member_id": "s2"}], "members": ["s1", "s2"],
         "expected_assignment": None, "mismatched_partitions": None, "partitions_moved": None,
         "mismatched_tasks": 0, "tasks_moved": 1, "tasks_moved_between_processes": 1,
         "tasks_moved_within_process": 0, "tasks": {
             "s1": {"process_id": "p1", "client_id": "wc-1-StreamThread-1-consumer", "epoch": 3,
                    "active": [["0", 0], ["1", 0]], "standby": [["0", 1]], "warmup": []},
             "s2": {"process_id": "p2", "client_id": "wc-2-StreamThread-1-consumer", "epoch": 3,
                    "active": [["0", 1], ["1", 1]], "standby": [["0", 0]], "warmup": []}}},
        {"kind": "member_at_risk", "group": "word-count", "ts": T0 - 2_000, "member_id": "s2", "risk": "session",
         "last_seen_ms": T0 - 25_000, "warn_ms": T0 - 2_500, "deadline_ms": T0 + 20_000, "limit_ms": 45_000,
         "detected_ms": T0 - 2_000, "client_id": "wc-2-StreamThread-1-consumer", "host": "/10.0.0.22"},
    ]


class _FixedClock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def sample_exposition(lag_granularity: str = "partition") -> str:
    clock = _FixedClock(T0 / 1000)
    u = MetricsUpdater(clock=clock, max_groups=2, group_deny=r"tmp-.*", lag_granularity=lag_granularity)
    u.apply(sample_records(), now_ms=T0)
    u.apply([{"kind": "generation", "group": "tmp-console-consumer-1", "generation": 1, "completed_ms": T0},
             {"kind": "generation", "group": "billing", "generation": 1, "completed_ms": T0}], now_ms=T0)
    u.set_ready(True)
    u.set_kafka_up(True)
    u.note_kafka_read(T0 / 1000 - 3)
    u.record_batch(41, {"events": 5200, "offsets-topic": 310}, {"invalid_json": 2}, 0.42, 1830, T0 - 12_000,
                   {"generation": 1, "group_status": 1, "offsets_committed": 2}, notes={"unresolved_topic_id": 3})
    u.note_sink_error("kafka")
    u.note_broker_facts_error("describe_configs_denied")
    return u.render()
