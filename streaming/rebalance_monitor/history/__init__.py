"""`rebalance-monitor history`: why did my group rebalance, and who started it? Reads the history sink the job writes
(Parquet directory or Kafka topic, from the same config file as `run`) and prints a group's timeline or the
fleet's groups ranked by rebalances."""
from __future__ import annotations

import sys

from .reader import Query, hadoop_settings, read_kafka, read_parquet
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
    source = args.source
    if source == "auto":
        source = "parquet" if cfg.sinks.history.parquet_path else "kafka"
    try:
        if source == "parquet":
            if not cfg.sinks.history.parquet_path:
                raise FileNotFoundError("sinks.history.parquet_path is not set in the configuration")
            records = read_parquet(cfg.sinks.history.parquet_path, q, hadoop_settings(cfg.spark.conf))
        else:
            if not cfg.sinks.history.kafka_topic:
                raise FileNotFoundError("sinks.history.kafka_topic is not set in the configuration")
            records = read_kafka(cfg.kafka.connection(), cfg.sinks.history.kafka_topic, q)
        if q.group is not None:
            rows = timeline_rows(records)
            render(rows, TIMELINE_COLUMNS, args.format, out, title=f"group {q.group}: {len(rows)} events")
        else:
            rows = fleet_rows(records, args.top)
            render(rows, FLEET_COLUMNS, args.format, out, title=f"top {len(rows)} groups by rebalances")
    except FileNotFoundError as exc:
        print(f"rebalance-monitor history: {exc}", file=err)
        return 1
    return 0
