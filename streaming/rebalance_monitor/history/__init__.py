"""`rebalance-monitor history`: why did my group rebalance, and who started it? Reads the history sink the job wrote
(Parquet directory or Kafka topic, from the same config file as `run`), of one Kafka cluster (`--cluster`) or of
every cluster (cluster_sources.py), and prints a group's timeline or the fleet's groups ranked by rebalances, each
row naming its cluster (the same group name on two clusters is two groups)."""
from __future__ import annotations

import sys

from .cluster_sources import UnknownCluster, read_history
from .reader import Query
from .row_formats import parse_when, render
from .timeline import FLEET_COLUMNS, TIMELINE_COLUMNS, fleet_rows, timeline_rows

__all__ = ["Query", "run_history"]


def run_history(cfg, args, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        q = Query(args.group, parse_when(args.since), parse_when(args.until))
    except ValueError as exc:
        print(f"rebalance-monitor history: {exc}", file=err)
        return 2
    cluster = getattr(args, "cluster", None)
    source = args.source
    if source == "auto":
        source = "parquet" if cfg.sinks.history.parquet_path else "kafka"
    try:
        records = read_history(cfg, source, q, cluster)
        on = f" on cluster {cluster}" if cluster is not None else ""
        if q.group is not None:
            rows = timeline_rows(records)
            render(rows, TIMELINE_COLUMNS, args.format, out, title=f"group {q.group}{on}: {len(rows)} events")
        else:
            rows = fleet_rows(records, args.top)
            render(rows, FLEET_COLUMNS, args.format, out, title=f"top {len(rows)} groups by rebalances{on}")
    except UnknownCluster as exc:
        print(f"rebalance-monitor history: --cluster: {exc}", file=err)
        return 2
    except FileNotFoundError as exc:
        print(f"rebalance-monitor history: {exc}", file=err)
        return 1
    return 0
