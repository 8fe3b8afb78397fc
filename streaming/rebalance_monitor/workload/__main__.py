"""`python -m rebalance_monitor.workload SCENARIO --bootstrap HOST:PORT --events-topic T`

Runs one scenario (or `all`, or `list` to print them) and prints its result as one JSON object per
scenario: group, topic, time span, the declared expectations and the actions taken.
With `--broker`, starts a local Apache Kafka node (testing.broker) for the run instead of using `--bootstrap`.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys


def build_parser() -> argparse.ArgumentParser:
    from .scenarios import SCENARIOS

    p = argparse.ArgumentParser(prog="python -m rebalance_monitor.workload",
                                description="Run real instrumented consumer groups that cause rebalances.")
    p.add_argument("scenario", help="one of: " + ", ".join(SCENARIOS) + ", all, list")
    p.add_argument("--bootstrap", help="HOST:PORT of the Kafka broker")
    p.add_argument("--broker", action="store_true", help="start a local Apache Kafka node for this run")
    p.add_argument("--events-topic", default="rebalance-events", help="where the events go (default: %(default)s)")
    p.add_argument("--group", help="consumer group name (default: a fresh one per scenario)")
    p.add_argument("--topic", help="topic the group consumes (default: a fresh one per scenario)")
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--rate", type=float, default=20.0, help="records per second of background traffic")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv=None) -> int:
    from .scenarios import SCENARIOS, run_scenario

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(message)s")
    if args.scenario == "list":
        for sc in SCENARIOS.values():
            print(json.dumps({"name": sc.name, "description": sc.description, "expect": sc.expect,
                              "estimated_s": sc.estimated_s}))
        return 0
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    for n in names:
        if n not in SCENARIOS:
            print(f"unknown scenario {n!r}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
            return 2
    broker = None
    bootstrap = args.bootstrap
    if args.broker:
        from rebalance_monitor.testing.broker import Broker

        broker = Broker().start()
        bootstrap = broker.bootstrap
    if not bootstrap:
        print("give --bootstrap HOST:PORT (or --broker)", file=sys.stderr)
        return 2
    try:
        rc = 0
        for n in names:
            try:
                result = run_scenario(n, bootstrap, args.events_topic, group=args.group, topic=args.topic,
                                      session_timeout_ms=args.session_timeout_ms, rate=args.rate)
                print(json.dumps(result.to_dict()), flush=True)
            except Exception as exc:
                print(json.dumps({"name": n, "error": repr(exc)}), flush=True)
                rc = 1
        return rc
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    sys.exit(main())
