"""The monitor's output records applied to the exported series: one function per record kind (docs/records.md).

``apply_<kind>(series, record, ends)`` updates one group's :class:`~rebalance_monitor.metrics.series.GroupSeries`
(``ends``: the log-end offsets, for the lag snapshot taken when a rebalance starts) and marks what the renderer
must write again. ``end_offsets`` records are cluster-wide (:func:`apply_end_offsets`); a ``group_deleted`` record
drops the group's series (the store does it). :data:`APPLY` maps each per-group kind to its function.

Replayed records do not count twice: generations are deduplicated on ``(generation, completed_ms)``, rebalance
starts on ``(generation, started_ms)``, member timeouts on ``(member_id, timeout, detected_ms)``, storms on
``started_ms``.

A group's type (its ``group_type`` label) is the one its latest ``generation`` or ``group_status`` record says; a
change writes all of its lines again under the new label (unknown until then).

The group state is the one the ``group_status`` records say. Until a group's first ``group_status`` it is inferred
(docs/metrics.md, "Group state"): a ``rebalance_started`` record -> PreparingRebalance, a ``generation`` record ->
Stable (Empty when it has no member).
"""
from __future__ import annotations

from collections.abc import Callable

from ..core.vocabulary import REBALANCING_STATES, GroupState, RecordKind
from . import client_families, risk_families, task_families
from .lag import EndOffsetTable
from .series import GroupSeries

STATES = tuple(GroupState)
END_OFFSETS = RecordKind.END_OFFSETS          # cluster-wide: apply_end_offsets
GROUP_DELETED = RecordKind.GROUP_DELETED      # drops the group's series


def apply_generation(s: GroupSeries, r: dict, ends: EndOffsetTable) -> None:
    """A completed rebalance: counted (once per cause, once in all); the latest generation's gauges."""
    gen = r.get("generation")
    completed = r.get("completed_ms", r.get("ts"))
    if not s.seen_generations.first_time((gen, completed)):
        return
    s.stale_meta = True
    s.set_group_type(r.get("group_type"))
    s.generations_total += 1
    causes = {c.get("cause") or "unknown" for c in (r.get("causes") or []) if isinstance(c, dict)} or {"unknown"}
    for c in causes:
        s.rebalances[c] = s.rebalances.get(c, 0) + 1
    dur = r.get("duration_ms")
    if isinstance(dur, (int, float)) and dur >= 0:
        s.duration.observe(dur / 1000.0)
    moved = r.get("partitions_moved")
    if isinstance(moved, int) and moved > 0:
        s.partitions_moved_total += moved
    task_families.count_moves(s, r)
    if not isinstance(gen, int) or (s.generation is not None and gen < s.generation):
        return  # a late record of an older generation: counted, but the gauges keep the newer values
    s.generation = gen
    if isinstance(completed, (int, float)):
        s.last_rebalance_ts = completed / 1000.0
    if r.get("protocol"):
        s.protocol = r["protocol"]
    members = r.get("members")
    if isinstance(members, list):
        s.members = len(members)
    s.mismatched = r.get("mismatched_partitions")
    s.unassigned = r.get("unassigned_partitions")
    s.imbalance = r.get("imbalance")
    mm = r.get("min_moves")
    s.needless_moves = max(0, moved - mm) if isinstance(moved, int) and isinstance(mm, int) else None
    task_families.take_gauges(s, r)
    started = r.get("started_ms")
    if isinstance(started, (int, float)) and (s.last_rebalance_start_ts is None
                                              or started / 1000.0 > s.last_rebalance_start_ts):
        s.last_rebalance_start_ts = started / 1000.0
    s.in_progress = 0
    if not s.has_status:
        s.state = GroupState.STABLE if members else (GroupState.EMPTY if isinstance(members, list) else s.state)


def _snapshot_rebalance_start(s: GroupSeries, started_ms, ends: EndOffsetTable) -> None:
    s.lag_at_rebalance_start = group_lag_sum(s, ends)
    if isinstance(started_ms, (int, float)):
        s.last_rebalance_start_ts = started_ms / 1000.0


def apply_rebalance_started(s: GroupSeries, r: dict, ends: EndOffsetTable) -> None:
    """A rebalance began: in progress, and the group's lag and the time now (lag growth during rebalances)."""
    started = r.get("started_ms", r.get("ts"))
    if not s.seen_started.first_time((r.get("generation"), started)):
        return
    gen = r.get("generation")
    if isinstance(gen, int) and s.generation is not None and gen < s.generation:
        return  # the rebalance out of an older generation: already completed
    s.stale_meta = True
    _snapshot_rebalance_start(s, started, ends)
    s.in_progress = 1
    if not s.has_status:
        s.state = GroupState.PREPARING


def apply_member_timeout(s: GroupSeries, r: dict, ends: EndOffsetTable) -> None:
    """A member past its session timeout or max.poll.interval.ms: counted by timeout, client id and host."""
    key = (r.get("member_id"), r.get("timeout"), r.get("detected_ms"))
    if not s.seen_timeouts.first_time(key):
        return
    s.stale_meta = True
    k = (str(r.get("timeout") or "unknown"), str(r.get("client_id") or ""), str(r.get("host") or ""))
    s.member_timeouts[k] = s.member_timeouts.get(k, 0) + 1
    risk_families.drop_member(s, r.get("member_id"))


def apply_member_at_risk(s: GroupSeries, r: dict, ends: EndOffsetTable) -> None:
    """A member past its early-warning point: its series, valued its deadline, until it times out or recovers."""
    risk_families.set_at_risk(s, r)


def apply_storm(s: GroupSeries, r: dict, ends: EndOffsetTable) -> None:
    """A storm's start (counted once) or end; the gauges follow the latest storm."""
    started = r.get("started_ms")
    s.stale_meta = True
    if s.seen_storms.first_time(started):
        s.storms_total += 1
    if s.storm_started_ms is None or (isinstance(started, int) and started >= s.storm_started_ms):
        s.storm_started_ms = started
        s.storm = 1 if r.get("ended_ms") is None else 0
        if r.get("pattern"):
            s.storm_pattern = str(r["pattern"])


def apply_broker_view(s: GroupSeries, r: dict, ends: EndOffsetTable) -> None:
    """The coordinator's description held against the reconstruction: a disagreement counted (once per record)."""
    if r.get("agrees") is False and s.seen_views.first_time((r.get("ts"), r.get("broker_epoch"))):
        s.broker_view_disagreements_total += 1
        s.stale_meta = True


def apply_group_status(s: GroupSeries, r: dict, ends: EndOffsetTable) -> None:
    """The group as the core sees it now: state, generation, members, heartbeat gaps, members at risk, storm,
    coordinator."""
    s.stale_meta = True
    s.has_status = True
    s.set_group_type(r.get("group_type"))
    state = r.get("state")
    was_rebalancing = s.in_progress == 1
    if state in STATES:
        s.state = state
        s.in_progress = 1 if state in REBALANCING_STATES else 0
    if isinstance(r.get("generation"), int):
        s.generation = r["generation"]
    if r.get("protocol"):
        s.protocol = r["protocol"]
    if isinstance(r.get("members"), int):
        s.members = r["members"]
    ratio = r.get("max_heartbeat_gap_ratio")
    s.heartbeat_gap_ratio = float(ratio) if isinstance(ratio, (int, float)) else None
    ratio = r.get("max_poll_gap_ratio")
    s.poll_gap_ratio = float(ratio) if isinstance(ratio, (int, float)) else None
    s.client_standard = client_families.parse(r.get("client_standard_metrics"))
    risk_families.keep_listed(s, r.get("members_at_risk"))
    if isinstance(r.get("in_storm"), bool):
        s.storm = int(r["in_storm"])
    if s.in_progress == 1 and not was_rebalancing:
        # entered a rebalance without a rebalance_started record (yet): snapshot the lag now
        _snapshot_rebalance_start(s, r.get("rebalancing_since_ms") or r.get("ts"), ends)
    part = r.get("coordinator_partition")
    if isinstance(part, int):
        broker = s.coordinator[1] if s.coordinator and s.coordinator[0] == part else None
        s.coordinator = (part, broker)


def apply_coordinator(s: GroupSeries, r: dict, ends: EndOffsetTable) -> None:
    """A broker became (or resigned as) the group's coordinator."""
    s.stale_meta = True
    part = r.get("partition")
    if r.get("action") == "resigned":
        if s.coordinator is not None and s.coordinator[0] == part:
            s.coordinator = None
    elif isinstance(part, int):
        s.coordinator = (part, r.get("broker"))


def committed_entry(entry):
    """``(topic, partition, offset)`` of a well-formed ``[topic, partition, offset]`` entry (offset a non-negative
    int), else None: the entries the metrics take (spark/output_commits.py compacts by the same rule)."""
    try:
        t, p, o = entry
    except (TypeError, ValueError):
        return None
    if isinstance(o, int) and o >= 0:
        return t, p, o
    return None


def _offsets(r: dict):
    """The well-formed entries of a record (`committed_entry`)."""
    for entry in r.get("offsets") or ():
        e = committed_entry(entry)
        if e is not None:
            yield e


def group_lag_sum(s: GroupSeries, ends: EndOffsetTable) -> int | None:
    """The group's lag summed over its partitions (a share group's: the broker's lag where it gave one)."""
    if not s.share_lag:
        return ends.lag_sum(s.committed)
    total = None
    for key, c in s.committed.items():
        lag = s.share_lag.get(key)
        if lag is None:
            lag = ends.lag(key[0], key[1], c)
        if lag is not None:
            total = lag if total is None else total + lag
    return total


def apply_share_lag(s: GroupSeries, r: dict) -> None:
    """A share group's lag per partition as its share coordinator gave it (``share_lag`` of a broker
    ``offsets_committed`` record): it replaces the one held for each partition the record names (a lag of
    None: the broker gave none, the lag is then derived as end - start offset)."""
    for entry in r.get("share_lag") or ():
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            continue
        key, lag = (entry[0], entry[1]), entry[2]
        if isinstance(lag, int) and not isinstance(lag, bool) and lag >= 0:
            if s.share_lag.get(key) != lag:
                s.share_lag[key] = lag
                s.stale_offsets = True
        elif lag is None and s.share_lag.pop(key, None) is not None:
            s.stale_offsets = True


def apply_offsets_committed(s: GroupSeries, r: dict, ends: EndOffsetTable) -> list[str]:
    """The group's committed offsets (an older commit than the one held is ignored); returns the topics of the
    partitions it committed on for the first time (the store indexes them: their end offsets move its lag).
    A share group's record (broker poller) carries the share-partition start offsets, and ``share_lag``."""
    ts = r.get("ts") or 0
    if r.get("source") != "broker":
        s.stream_commits = True
    if "share_lag" in r:
        apply_share_lag(s, r)
    new_topics = []
    for t, p, o in _offsets(r):
        key = (t, p)
        if ts < s.committed_ts.get(key, -1):
            continue      # an older commit than the one we hold
        if key not in s.committed:
            new_topics.append(t)
            s.new_keys = True
        s.committed_ts[key] = ts
        if s.committed.get(key) != o:
            s.committed[key] = o
            s.stale_offsets = True
    return new_topics


def apply_end_offsets(ends: EndOffsetTable, r: dict, now_ms: int) -> set[str]:
    """Log-end offsets (cluster-wide: no group); returns the topics they are of."""
    ts = r.get("ts")
    if not isinstance(ts, int):
        ts = now_ms
    topics = set()
    update = ends.update
    for entry in r.get("offsets") or ():     # _offsets(r), inlined: a broker poll has every partition
        try:
            t, p, o = entry
        except (TypeError, ValueError):
            continue
        if isinstance(o, int) and o >= 0:
            update(t, p, o, ts, now_ms)
            topics.add(t)
    return topics


APPLY: dict[str, Callable[[GroupSeries, dict, EndOffsetTable], object]] = {
    RecordKind.GENERATION: apply_generation,
    RecordKind.REBALANCE_STARTED: apply_rebalance_started,
    RecordKind.MEMBER_TIMEOUT: apply_member_timeout,
    RecordKind.MEMBER_AT_RISK: apply_member_at_risk,
    RecordKind.STORM: apply_storm,
    RecordKind.GROUP_STATUS: apply_group_status,
    RecordKind.COORDINATOR: apply_coordinator,
    RecordKind.OFFSETS_COMMITTED: apply_offsets_committed,
    RecordKind.BROKER_VIEW: apply_broker_view,
}
