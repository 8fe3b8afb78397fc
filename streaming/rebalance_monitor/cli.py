"""The `rebalance-monitor` command line (contract section 3)."""
from __future__ import annotations

import argparse
import json
import sys

from .config import ConfigError, load_config


def _cmd_assign(args) -> int:
    from .core.assignors import AssignmentInputError, UnknownAssignor, run_assign_case

    text = sys.stdin.read()
    try:
        case = json.loads(text)
    except ValueError as exc:
        print(f"rebalance-monitor assign: the case is not valid JSON: {exc}", file=sys.stderr)
        return 2
    try:
        result = run_assign_case(case)
    except (AssignmentInputError, UnknownAssignor) as exc:
        print(f"rebalance-monitor assign: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, sort_keys=True))
    return 0


def _config_or_none(command: str, path):
    """The configuration, or None after saying on stderr what is wrong with it (naming the key)."""
    try:
        return load_config(path)
    except ConfigError as exc:
        print(f"rebalance-monitor {command}: bad configuration: {exc}", file=sys.stderr)
        return None


def _cmd_replay(args) -> int:
    from .replay import open_input, run_replay

    cfg = _config_or_none("replay", args.config)
    if cfg is None:
        return 2
    try:
        stream = open_input(args.path)
    except OSError as exc:
        print(f"rebalance-monitor replay: cannot read {args.path!r}: {exc.strerror}", file=sys.stderr)
        return 1
    with stream:
        return run_replay(cfg, args.source, stream, sys.stdout, sys.stderr, fmt=args.format,
                          with_status=args.with_status, cluster=args.cluster)


def _cmd_run(args) -> int:
    cfg = _config_or_none("run", args.config)
    if cfg is None:
        return 2
    from .spark.run import run_job

    return run_job(cfg, once=args.once)


def _cmd_history(args) -> int:
    cfg = _config_or_none("history", args.config)
    if cfg is None:
        return 2
    from .history import run_history

    return run_history(cfg, args)


def _cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(duration_s=args.duration, prometheus=args.prometheus, port=args.port,
                    live=not args.no_live)


def _cmd_workload(args) -> int:
    from .workload.__main__ import main as workload_main

    return workload_main(args.args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rebalance-monitor",
                                description="Watch Kafka consumer-group rebalances.")
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("assign", help="compute an assignment exactly as a Kafka assignor does (CASE on stdin)")
    a.set_defaults(func=_cmd_assign)

    r = sub.add_parser("replay", help="run the reconstruction over a file, without Spark")
    r.add_argument("--source", choices=("events", "coordinator-log", "offsets-topic"), default="events")
    r.add_argument("--config", help="config file (defaults apply without one)")
    r.add_argument("--format", choices=("json", "table"), default="json")
    r.add_argument("--with-status", action="store_true", help="also print group_status records at the end")
    r.add_argument("--cluster", help="the kafka_cluster the JSON records carry (default: the config's "
                                     "kafka.cluster_name)")
    r.add_argument("path", help="input file, or - for stdin")
    r.set_defaults(func=_cmd_replay)

    run = sub.add_parser("run", help="the Spark Structured Streaming job (long-running)")
    run.add_argument("--config", required=True)
    run.add_argument("--once", action="store_true", help="process what is available now, then stop")
    run.set_defaults(func=_cmd_run)

    h = sub.add_parser("history", help="why did a group rebalance? a group's timeline, or the fleet's top groups, "
                                        "from the history the job wrote")
    h.add_argument("--config", help="the job's config file (its sinks.history settings); defaults apply without one")
    h.add_argument("--group", help="the group's timeline; without it, the top groups by rebalances")
    h.add_argument("--since", help="from this time: 12h, 7d, 30m ago, ISO 8601, or epoch ms")
    h.add_argument("--until", help="up to this time (same forms)")
    h.add_argument("--cluster", help="one Kafka cluster's history (its name exactly as configured); without it, "
                                     "every cluster's")
    h.add_argument("--source", choices=("auto", "parquet", "kafka"), default="auto",
                   help="the Parquet directory or the Kafka topic of sinks.history (auto: Parquet when set)")
    h.add_argument("--format", choices=("table", "json", "csv"), default="table")
    h.add_argument("--top", type=int, default=20, help="groups in the fleet view")
    h.set_defaults(func=_cmd_history)

    d = sub.add_parser("demo", help="the whole system on this machine with nothing configured")
    d.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    d.add_argument("--prometheus", action="store_true", help="also start a local Prometheus if installed")
    d.add_argument("--port", type=int, default=9308, help="exporter port (0: any free port)")
    d.add_argument("--no-live", action="store_true", help="plain log lines instead of the live view")
    d.set_defaults(func=_cmd_demo)

    from .client_metrics_subscription import add_parser as add_client_metrics

    add_client_metrics(sub)

    w = sub.add_parser("workload", add_help=False,
                       help="run a scenario of real consumer groups against a broker (workload --help)")
    w.add_argument("args", nargs=argparse.REMAINDER)
    w.set_defaults(func=_cmd_workload)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "workload":  # its own parser (and --help)
        from .workload.__main__ import main as workload_main

        return workload_main(argv[1:])
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
