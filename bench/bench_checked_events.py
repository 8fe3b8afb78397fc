"""The processor's cost per event that travels as canonical JSON text (the events off the decode stage's fast path:
joins, syncs, client metrics, ...), side by side in one run, in one process (no Kafka, no Spark): the parser
(`parse_event`: parsed and checked, what the decode stage does once) against the rebuild of an event the decode
stage has already checked (`core/checked_events.event_from_checked_text`, what the processor does). CPU
microseconds per event, the best of `--rounds`.

    .venv/bin/python bench/bench_checked_events.py [--events 20000] [--rounds 40]
"""
from __future__ import annotations

import argparse
import json
import time
import timeit

from rebalance_monitor.core.events import event_from_checked_text, parse_event
from rebalance_monitor.decoding.json_parser import use_fastest_available

T0 = 1_700_000_000_000
MEMBER = "consumer-orders-app-1-5f1c2a9e-8b7d-4c1e-9a3f-2d6b7e8f9a01"
IDENTITY = {"group_instance_id": None, "client_id": "consumer-orders-app-1", "host": "/10.1.2.3"}
# the slow-path events as the instrumentation and the Java plugins send them
EVENTS = {
    "join": {"v": 1, "type": "join", "ts": T0, "group": "orders-app", "member_id": MEMBER, **IDENTITY,
             "protocols": ["range", "cooperative-sticky"], "topics": ["orders"], "owned": [["orders", 0], ["orders", 1]],
             "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000, "heartbeat_interval_ms": 3000,
             "reason": "rebalance failed due to MemberIdRequiredException"},
    "sync": {"v": 1, "type": "sync", "ts": T0, "group": "orders-app", "member_id": MEMBER, **IDENTITY,
             "generation": 7, "protocol": "range", "leader": MEMBER,
             "assignment": [["orders", 0], ["orders", 1], ["orders", 2]]},
    "client_metrics": {"v": 1, "type": "client_metrics", "ts": T0, "group": "orders-app", "member_id": MEMBER,
                       "client_id": "consumer-orders-app-1", "host": "10.1.2.3", "source": "kip714",
                       "interval_ms": 5000, "last_heartbeat_ms_ago": 2000, "last_poll_ms_ago": 0,
                       "poll_interval_max_ms": 512, "assigned_partitions": 3, "poll_idle_ratio": 0.97},
    "leave": {"v": 1, "type": "leave", "ts": T0, "group": "orders-app", "member_id": MEMBER, **IDENTITY,
              "reason": "the consumer is being closed"},
}


def cpu_us(fn, text: str, events: int, rounds: int) -> float:
    best = min(timeit.repeat(lambda: fn(text), number=events, repeat=rounds, timer=time.process_time))
    return best / events * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20_000, help="calls per round")
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    use_fastest_available()  # orjson, as the job's workers have it
    print(f"{'event':16s}{'parse_event':>14s}{'rebuild':>10s}  (CPU us per event)")
    for name, obj in EVENTS.items():
        text = json.dumps(obj, separators=(",", ":"))
        assert event_from_checked_text(text) == parse_event(text)
        parse = cpu_us(parse_event, text, args.events, args.rounds)
        rebuild = cpu_us(event_from_checked_text, text, args.events, args.rounds)
        print(f"{name:16s}{parse:14.2f}{rebuild:10.2f}")


if __name__ == "__main__":
    main()
