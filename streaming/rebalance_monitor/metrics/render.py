"""The lines of a consumer group's families (and of the topics' end offsets), written through the catalogue's specs.

One renderer per family group, like KMinion's ``collect_*.go`` (``redpanda-data/kminion``, ``prometheus/``):

* :func:`rebalance_lines`: rebalances, generations, their duration, the latest generation and its assignment;
* :func:`state_lines`: state, members, protocol, rebalance in progress, coordinator;
* :func:`liveness_lines`: member timeouts, heartbeat gaps, members at risk, storms;
* :func:`lag_lines` and :func:`committed_lines`: the per-partition offsets, lag sum and time lag (the hot path:
  the per-partition label text is cached); :func:`end_offset_lines`: a topic's log-end offsets.

Each returns or fills ``{family name: text}``; the families' order is the catalogue's, kept by ``body.py``. A
group's lines are cached in its :class:`GroupLines` until its series marks them stale.
"""
from __future__ import annotations

from ..core.group import STATES
from .catalogue import (
    ASSIGNMENT_IMBALANCE, COMMITTED_OFFSET, COORDINATOR_INFO, END_OFFSET, GENERATION, GENERATIONS, HEARTBEAT_GAP_RATIO,
    LAG, LAG_SECONDS, LAG_SUM, LAG_SUM_AT_REBALANCE_START, LAST_REBALANCE_START_TS, LAST_REBALANCE_TS, MEMBER_TIMEOUTS,
    MEMBERS, MISMATCHED_PARTITIONS, NEEDLESS_MOVES, PARTITIONS_MOVED, POLL_GAP_RATIO, PROTOCOL_INFO, REBALANCE_DURATION,
    REBALANCE_IN_PROGRESS, REBALANCES, STATE, STORM, STORM_PATTERN, STORMS, UNASSIGNED_PARTITIONS,
    BROKER_VIEW_DISAGREEMENTS,
)
from . import client_families, lag_levels, risk_families, task_families
from .exposition import Family, escape_label
from .lag import EndOffsetTable
from .series import GroupSeries

_REBALANCES, _GENERATIONS, _PARTITIONS_MOVED = Family(REBALANCES), Family(GENERATIONS), Family(PARTITIONS_MOVED)
_GENERATION, _LAST_REBALANCE_TS = Family(GENERATION), Family(LAST_REBALANCE_TS)
_ASSIGNMENT = tuple((Family(spec), field) for spec, field in (
    (MISMATCHED_PARTITIONS, "mismatched"), (UNASSIGNED_PARTITIONS, "unassigned"),
    (ASSIGNMENT_IMBALANCE, "imbalance"), (NEEDLESS_MOVES, "needless_moves")))
_LAG_AT_START, _LAST_START_TS = Family(LAG_SUM_AT_REBALANCE_START), Family(LAST_REBALANCE_START_TS)
_STATE, _MEMBERS, _PROTOCOL = Family(STATE), Family(MEMBERS), Family(PROTOCOL_INFO)
_IN_PROGRESS, _COORDINATOR = Family(REBALANCE_IN_PROGRESS), Family(COORDINATOR_INFO)
_STATE_OPEN, _STATES = STATE.name + "{", tuple((st, _STATE.after_fixed((st,))) for st in STATES)
_TIMEOUTS, _GAP_RATIO = Family(MEMBER_TIMEOUTS), Family(HEARTBEAT_GAP_RATIO)
_POLL_GAP_RATIO = Family(POLL_GAP_RATIO)
_STORM, _STORMS, _STORM_PATTERN = Family(STORM), Family(STORMS), Family(STORM_PATTERN)
_BROKER_VIEW = Family(BROKER_VIEW_DISAGREEMENTS)
_LAG, _LAG_SUM, _LAG_SECONDS = Family(LAG), Family(LAG_SUM), Family(LAG_SECONDS)
_END_OFFSET = Family(END_OFFSET)

# The per-partition families are the hot path (one line per group and partition): a partition's label text is
# written once, from the pieces of the spec, and cached; lag and committed offset lines share it.
assert LAG.labels == COMMITTED_OFFSET.labels and len(LAG.labels) == 5, "cluster, group, group_type, topic, partition"
_PARTITION = _LAG.pieces(fixed=True)                       # {<group>,topic="<t>",partition="<p>"}
_TOPIC_PARTITION = tuple([END_OFFSET.name + _END_OFFSET.pieces(fixed=True)[0],
                          *_END_OFFSET.pieces(fixed=True)[1:]])   # name{<cluster>,topic="<t>",partition="<p>"}
assert len(_TOPIC_PARTITION) == 4, "cluster, topic, partition"

META_FAMILIES = (REBALANCES, GENERATIONS, REBALANCE_DURATION, PARTITIONS_MOVED, GENERATION, LAST_REBALANCE_TS,
                 MISMATCHED_PARTITIONS, UNASSIGNED_PARTITIONS, ASSIGNMENT_IMBALANCE, NEEDLESS_MOVES,
                 LAG_SUM_AT_REBALANCE_START, LAST_REBALANCE_START_TS, STATE, MEMBERS, PROTOCOL_INFO,
                 REBALANCE_IN_PROGRESS, COORDINATOR_INFO, MEMBER_TIMEOUTS, HEARTBEAT_GAP_RATIO, POLL_GAP_RATIO,
                 *risk_families.FAMILIES, *client_families.FAMILIES, STORM, STORMS, STORM_PATTERN, BROKER_VIEW_DISAGREEMENTS,
                 *task_families.FAMILIES)
LAG_FAMILIES = (LAG, LAG_SUM, LAG_SECONDS)      # re-rendered when an end offset moves


class GroupLines:
    """The cached lines of one group: ``meta`` and ``lag`` ({family name: text}), ``committed`` (text), and the
    group's partitions sorted with their label text."""

    __slots__ = ("meta", "lag", "committed", "keys", "prefix")

    def __init__(self) -> None:
        self.meta: dict[str, str] = {}
        self.lag: dict[str, str] = {}
        self.committed = ""
        self.keys: list[tuple[str, int]] = []
        self.prefix: dict[tuple[str, int], str] = {}


# ---- rebalances and generations -----------------------------------------------------------------------------
def rebalance_lines(s: GroupSeries, f: dict[str, str]) -> None:
    g = s.label
    if s.rebalances:
        f[REBALANCES.name] = "".join(_REBALANCES.line(g, (c,), s.rebalances[c]) for c in sorted(s.rebalances))
    if s.generations_total or s.generation is not None:
        f[GENERATIONS.name] = _GENERATIONS.only_fixed(g, s.generations_total)
        f[REBALANCE_DURATION.name] = "".join(s.duration.lines(REBALANCE_DURATION.name, g))
        f[PARTITIONS_MOVED.name] = _PARTITIONS_MOVED.only_fixed(g, s.partitions_moved_total)
    if s.generation is not None:
        f[GENERATION.name] = _GENERATION.only_fixed(g, s.generation)
    if s.last_rebalance_ts is not None:
        f[LAST_REBALANCE_TS.name] = _LAST_REBALANCE_TS.only_fixed(g, s.last_rebalance_ts)
    for fam, field in _ASSIGNMENT:
        v = getattr(s, field)
        if v is not None:
            f[fam.name] = fam.only_fixed(g, v)
    if s.lag_at_rebalance_start is not None:
        f[LAG_SUM_AT_REBALANCE_START.name] = _LAG_AT_START.only_fixed(g, s.lag_at_rebalance_start)
    if s.last_rebalance_start_ts is not None:
        f[LAST_REBALANCE_START_TS.name] = _LAST_START_TS.only_fixed(g, s.last_rebalance_start_ts)


# ---- state, membership, coordinator -------------------------------------------------------------------------
def state_lines(s: GroupSeries, f: dict[str, str]) -> None:
    g = s.label
    if s.state is not None:
        f[STATE.name] = "".join([f"{_STATE_OPEN}{g}{text}{1 if st == s.state else 0}\n" for st, text in _STATES])
    if s.members is not None:
        f[MEMBERS.name] = _MEMBERS.only_fixed(g, s.members)
    if s.protocol:
        f[PROTOCOL_INFO.name] = _PROTOCOL.line(g, (s.protocol,), 1)
    if s.in_progress is not None:
        f[REBALANCE_IN_PROGRESS.name] = _IN_PROGRESS.only_fixed(g, s.in_progress)
    if s.coordinator is not None:
        part, broker = s.coordinator
        f[COORDINATOR_INFO.name] = _COORDINATOR.line(g, (part, "" if broker is None else broker), 1)


# ---- members' liveness and storms ---------------------------------------------------------------------------
def liveness_lines(s: GroupSeries, f: dict[str, str]) -> None:
    g = s.label
    if s.member_timeouts:
        f[MEMBER_TIMEOUTS.name] = "".join(_TIMEOUTS.line(g, k, s.member_timeouts[k]) for k in sorted(s.member_timeouts))
    if s.heartbeat_gap_ratio is not None:
        f[HEARTBEAT_GAP_RATIO.name] = _GAP_RATIO.only_fixed(g, s.heartbeat_gap_ratio)
    if s.poll_gap_ratio is not None:
        f[POLL_GAP_RATIO.name] = _POLL_GAP_RATIO.only_fixed(g, s.poll_gap_ratio)
    risk_families.lines(s, f)
    if s.client_standard:
        client_families.lines(g, s.client_standard, f)
    if s.storm is not None or s.storms_total:
        f[STORM.name] = _STORM.only_fixed(g, s.storm or 0)
        f[STORMS.name] = _STORMS.only_fixed(g, s.storms_total)
    if s.storm_pattern is not None:
        f[STORM_PATTERN.name] = _STORM_PATTERN.line(g, (s.storm_pattern,), s.storm or 0)
    if s.broker_view_disagreements_total:
        f[BROKER_VIEW_DISAGREEMENTS.name] = _BROKER_VIEW.only_fixed(g, s.broker_view_disagreements_total)


def meta_lines(s: GroupSeries) -> dict[str, str]:
    """Every family of the group but its offsets."""
    f: dict[str, str] = {}
    rebalance_lines(s, f)
    state_lines(s, f)
    liveness_lines(s, f)
    task_families.lines(s, f)
    return f


# ---- offsets and lag ----------------------------------------------------------------------------------------
def sorted_keys(s: GroupSeries, lines: GroupLines) -> list[tuple[str, int]]:
    """The group's partitions, sorted, each with its label text cached (after a commit on a new partition)."""
    if s.new_keys:
        s.new_keys = False
        lines.keys = sorted(s.committed)
        pref = lines.prefix
        head = _PARTITION[0] + s.label + _PARTITION[1]
        mid, tail = _PARTITION[2], _PARTITION[3]
        for key in lines.keys:
            if key not in pref:
                t, p = key
                pref[key] = f"{head}{escape_label(t)}{mid}{p if type(p) is int else escape_label(p)}{tail}"
    return lines.keys


def committed_lines(s: GroupSeries, lines: GroupLines, granularity: str) -> str:
    if granularity != "partition":
        return lag_levels.committed_lines(s.label, s.committed, granularity)
    pref, com, name = lines.prefix, s.committed, COMMITTED_OFFSET.name
    return "".join([f"{name}{pref[k]}{com[k]}\n" for k in sorted_keys(s, lines)])


def lag_lines(s: GroupSeries, lines: GroupLines, ends: EndOffsetTable, now_ms: int,
              granularity: str) -> dict[str, str]:
    """Lag lines (lag_levels.py sums them at a coarser granularity), the lag sum and the time lag, which follows
    lag.PartitionSamples.produce_time_ms (inlined: the hot path)."""
    if s.share_lag:
        return share_lag_lines(s, lines, ends, now_ms, granularity)
    keys = sorted_keys(s, lines)
    pref, com, name = lines.prefix, s.committed, LAG.name
    end_get, samples_get = ends.ends.get, ends.samples.get
    out_lines: list[str] | None = [] if granularity == "partition" else None
    total = 0
    known = False
    oldest = None            # earliest produce time of an unconsumed record over the partitions
    time_unknown = False
    for k in keys:
        e = end_get(k)
        if e is None:
            continue
        known = True
        c = com[k]
        if e <= c:
            if out_lines is not None:
                out_lines.append(f"{name}{pref[k]}0\n")
            continue
        if out_lines is not None:
            out_lines.append(f"{name}{pref[k]}{e - c}\n")
        total += e - c
        if time_unknown:
            continue
        sample = samples_get(k)
        t = sample.produce_time_ms(c) if sample is not None else None
        if t is None:
            time_unknown = True          # a lagging partition of unknown age: the max is unknown too
        elif oldest is None or t < oldest:
            oldest = t
    g = s.label
    out = {name: "".join(out_lines) if out_lines is not None else
           lag_levels.lag_lines(g, com, ends.ends, granularity)}
    if known:
        out[LAG_SUM.name] = _LAG_SUM.only_fixed(g, total)
        if not time_unknown:
            worst = 0.0 if oldest is None else max(0.0, (now_ms - oldest) / 1000.0)
            out[LAG_SECONDS.name] = _LAG_SECONDS.only_fixed(g, worst)
    return out


def share_lag_lines(s: GroupSeries, lines: GroupLines, ends: EndOffsetTable, now_ms: int,
                    granularity: str) -> dict[str, str]:
    """A share group's lag lines: per partition the lag its share coordinator gave (records at or above the
    share-partition start offset not yet acknowledged), else end - start offset; the time lag is the age of the
    record at the start offset (the oldest not yet acknowledged) on the partitions that lag."""
    keys = sorted_keys(s, lines)
    pref, com, name, share = lines.prefix, s.committed, LAG.name, s.share_lag
    values: list[tuple[tuple[str, int], int]] = []
    oldest, time_unknown = None, False
    for k in keys:
        lag = share.get(k)
        if lag is None:
            lag = ends.lag(k[0], k[1], com[k])
            if lag is None:
                continue
        values.append((k, lag))
        if lag > 0 and not time_unknown:
            sample = ends.samples.get(k)
            t = sample.produce_time_ms(com[k]) if sample is not None else None
            if t is None:
                time_unknown = True
            elif oldest is None or t < oldest:
                oldest = t
    g = s.label
    out = {name: "".join(f"{name}{pref[k]}{v}\n" for k, v in values) if granularity == "partition" else
           lag_levels.summed_lines(LAG, granularity, g, values)}
    if values:
        out[LAG_SUM.name] = _LAG_SUM.only_fixed(g, sum(v for _, v in values))
        if not time_unknown:
            worst = 0.0 if oldest is None else max(0.0, (now_ms - oldest) / 1000.0)
            out[LAG_SECONDS.name] = _LAG_SECONDS.only_fixed(g, worst)
    return out


def end_offset_lines(keys: list[tuple[str, int]], ends: dict, prefix: dict, granularity: str, cluster: str) -> str:
    """One topic's end-offset lines; ``keys`` its partitions, sorted; ``prefix`` caches the start of each line;
    ``cluster`` is the cluster's label text (exposition.cluster_label)."""
    if granularity != "partition":
        return lag_levels.end_offset_lines(keys, ends, granularity, cluster)
    opening, topic, mid, tail = _TOPIC_PARTITION
    head = f"{opening}{cluster}{topic}"
    for k in keys:
        if k not in prefix:
            t, p = k
            prefix[k] = f"{head}{escape_label(t)}{mid}{p if type(p) is int else escape_label(p)}{tail}"
    return "".join([f"{prefix[k]}{ends[k]}\n" for k in keys])
