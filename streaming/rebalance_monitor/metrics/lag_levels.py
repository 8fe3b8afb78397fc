"""The per-partition offset families at a coarser ``lag.granularity`` (like KMinion's ``granularity``).

At "partition" (the default) the exporter writes one series per group, topic and partition of
``kafka_consumergroup_lag`` and ``kafka_consumergroup_committed_offset``, and one per partition of
``kafka_topic_partition_end_offset`` (``render.py`` writes those). At "topic" the ``partition`` label is summed
away, at "group" the ``topic`` label too: which labels stay is the catalogue's
(:meth:`~rebalance_monitor.metrics.catalogue.MetricSpec.labels_at`), this module only adds the values up.

* lag: the sum of the partitions' lags (each ``max(0, end - committed)``) over the partitions with a known end
  offset, as the per-partition lines leave the others out; no series when none is known.
* committed offset: the sum of the committed offsets (its rate is the group's consumption rate, per topic or in
  all).
* end offset: at "topic" the sum over the topic's partitions some tracked group committed on (its rate is the
  topic's produce rate); at "group" not exported (a sum over the whole cluster says nothing about a group).

Every family keeps its first label, the cluster (``kafka_cluster``), at every level.

The lag sum and the time lag of a group (``_lag_sum``, ``_lag_seconds``) are per group at every level.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from .catalogue import COMMITTED_OFFSET as COMMITTED, END_OFFSET, LAG, LAG_GRANULARITIES, MetricSpec
from .exposition import escape_label

Key = tuple  # (topic, partition)


def check_granularity(granularity: str) -> str:
    if granularity not in LAG_GRANULARITIES:
        raise ValueError(f"lag granularity {granularity!r} is not allowed; allowed values: "
                         f"{', '.join(LAG_GRANULARITIES)}")
    return granularity


def summed_lines(spec: MetricSpec, granularity: str, fixed: str, values: Iterable[tuple[Key, int]]) -> str:
    """``spec``'s lines at ``granularity``: ``values`` ((topic, partition), value) added up over the labels it
    sums away. ``fixed`` is the text of the labels before them (a group's label text, or the cluster's)."""
    if not spec.exported_at(granularity):
        return ""
    kept = spec.labels_at(granularity)[len(spec.labels) - len(spec.rollup):]  # (), (topic,) or (topic, partition)
    n = len(kept)
    sums: dict[tuple, int] = {}
    for key, v in values:
        k = key[:n]
        sums[k] = sums.get(k, 0) + v
    out = []
    for k in sorted(sums):
        pairs = [fixed] + [f'{label}="{escape_label(x)}"' for label, x in zip(kept, k)]
        out.append(f"{spec.name}{{{','.join(pairs)}}} {sums[k]}\n")
    return "".join(out)


def lag_lines(group_label: str, committed: Mapping[Key, int], ends: Mapping[Key, int], granularity: str) -> str:
    """``kafka_consumergroup_lag`` of one group at ``granularity``."""
    values = []
    for key, c in committed.items():
        e = ends.get(key)
        if e is not None:
            values.append((key, e - c if e > c else 0))
    return summed_lines(LAG, granularity, group_label, values)


def committed_lines(group_label: str, committed: Mapping[Key, int], granularity: str) -> str:
    """``kafka_consumergroup_committed_offset`` of one group at ``granularity``."""
    return summed_lines(COMMITTED, granularity, group_label, committed.items())


def end_offset_lines(keys: Iterable[Key], ends: Mapping[Key, int], granularity: str, cluster: str) -> str:
    """``kafka_topic_partition_end_offset`` of one topic's partitions ``keys`` at ``granularity``; ``cluster`` the
    cluster's label text."""
    return summed_lines(END_OFFSET, granularity, cluster, ((k, ends[k]) for k in keys))
