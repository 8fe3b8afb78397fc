"""Offsets of the Python Kafka source: their JSON form, how much one micro-batch takes, and its read ranges.

Offsets travel through Spark's offset log as JSON ``{topic: {"partition": offset}}`` (the next offset to read), as in
Spark's own Kafka connector; here they are ``{(topic, partition): offset}``. `rate_limit` splits a backlog over
partitions exactly as Spark's connector does (``maxOffsetsPerTrigger``), `plan_ranges` turns a batch's offsets into
read ranges, one Spark task each. Pure: no pyspark, no Kafka client.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

TP = tuple  # (topic, partition)
EARLIEST, LATEST = -2, -1  # in JSON startingOffsets, as in Spark's connector


class DataLossError(RuntimeError):
    """Records the query still had to read are gone (deleted by retention, a topic recreated, a log truncated), and
    failOnDataLoss is true."""


def to_json_offsets(offsets: Mapping[TP, int]) -> dict:
    """``{topic: {"partition": offset}}``, topics and partitions in order."""
    out: dict = {}
    for (topic, part) in sorted(offsets, key=lambda tp: (tp[0], tp[1])):
        out.setdefault(topic, {})[str(part)] = int(offsets[(topic, part)])
    return out


def from_json_offsets(offsets: Mapping | None) -> dict[TP, int]:
    """``{(topic, partition): offset}`` of the JSON form (None: no offsets)."""
    out: dict[TP, int] = {}
    for topic, parts in (offsets or {}).items():
        for part, off in parts.items():
            out[(topic, int(part))] = int(off)
    return out


def rate_limit(starts: Mapping[TP, int], ends: Mapping[TP, int], max_rows: int) -> dict[TP, int]:
    """End offsets taking about `max_rows` records in all, shared by the partitions in proportion to their
    lag, rounded as Spark's own Kafka connector rounds (so both split a backlog into the same batches): a
    share of one record or more is rounded down, a smaller one up to one record, so no partition starves
    (a batch may then take a few records fewer, or more, than `max_rows`)."""
    lags = {tp: ends[tp] - starts.get(tp, ends[tp]) for tp in ends}
    total = float(sum(lag for lag in lags.values() if lag > 0))
    if total < 1:
        return dict(ends)
    out = {}
    for tp, lag in lags.items():
        if lag <= 0:
            out[tp] = ends[tp]
            continue
        share = max_rows * (lag / total)
        take = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(ends[tp], starts[tp] + take)
    return out


@dataclass(frozen=True)
class OffsetRange:
    """Records [start, end) of one Kafka partition."""

    topic: str
    partition: int
    start: int
    end: int


def plan_ranges(starts: Mapping[TP, int], ends: Mapping[TP, int], min_partitions: int | None) -> list[OffsetRange]:
    """One range per partition with new records; with `min_partitions`, large ranges are split
    (in proportion to their size) until there are at least that many."""
    ranges = [(tp, starts[tp], ends[tp]) for tp in sorted(ends) if ends[tp] > starts[tp]]
    if not min_partitions or len(ranges) >= min_partitions:
        return [OffsetRange(t, p, s, e) for (t, p), s, e in ranges]
    total = sum(e - s for _, s, e in ranges)
    out = []
    for (t, p), s, e in ranges:
        pieces = max(1, min(e - s, math.ceil(min_partitions * (e - s) / total)))
        step, extra = divmod(e - s, pieces)
        cur = s
        for i in range(pieces):
            nxt = cur + step + (1 if i < extra else 0)
            out.append(OffsetRange(t, p, cur, nxt))
            cur = nxt
    return out
