"""The group as its coordinator describes it, held against what the monitor reconstructed (a `group_described`
event: the broker poller's ConsumerGroupDescribe, ShareGroupDescribe, StreamsGroupDescribe or DescribeGroups
answer, broker_facts/describe.py).

The description is a second witness, never an overwrite: each one becomes a `broker_view` record saying whether
the broker and the monitor agree on the group's epoch, members and each member's partitions (a streams member's
process and tasks), and what differs.
Where they stand at different epochs (the monitor has not read the newest epoch yet, or the description is
older than what the monitor holds), nothing else is compared: `agrees` is null, with why. For a KIP-848 group the
description names the assignor the coordinator uses: the core judges the group's later generations with it
(`assignor`) when no input named one.
"""
from __future__ import annotations

from .. import records
from . import group_type
from ..events import GroupDescribed

DESCRIBED = "described"  # the key of `g.configs` holding what the coordinator's description named
ASSIGNOR = "as"
MAX_DIFFERENCES = 10


def on_group_described(g, ev: GroupDescribed, out: list) -> None:
    if ev.error is not None:
        g.count("describe_errors")
        return
    group_type.described(g, ev.group_type)
    if ev.group_type == "consumer" and ev.protocol:
        g.configs[DESCRIBED] = {ASSIGNOR: ev.protocol}
    broker_epoch = ev.group_epoch
    agrees, differences, why = compare(g, ev)
    rec = records.broker_view(
        g.group, ev.ts, group_type=ev.group_type, state=ev.state, protocol=ev.protocol, broker_epoch=broker_epoch,
        monitor_epoch=g.generation, members=len(ev.members), agrees=agrees, differences=differences[:MAX_DIFFERENCES],
        reason=why)
    if agrees is False:
        g.count("broker_view_disagreements")
    out.append(rec)


def assignor(g) -> str | None:
    """The assignor the coordinator's latest description named for this KIP-848 group, if any."""
    return (g.configs.get(DESCRIBED) or {}).get(ASSIGNOR)


def compare(g, ev: GroupDescribed) -> tuple[bool | None, list[str], str | None]:
    """(agrees, differences, why not compared). KIP-848, share and streams groups are compared at the same group
    epoch (members, and each member's current assignment; a streams member's process and its current active and
    standby tasks); a classic group's description carries no generation: it is compared while the monitor holds
    the group stable. A streams group that DescribeGroups answered (a broker without StreamsGroupDescribe) names
    neither epoch nor tasks: it is not compared."""
    if ev.group_type == "streams" and ev.group_epoch is None:
        return None, [], "a streams group's description without its epoch (DescribeGroups) is not compared"
    if ev.group_type in ("consumer", "share", "streams"):
        if ev.group_epoch is None or g.generation is None:
            return None, [], "no epoch to compare"
        if ev.group_epoch != g.generation:
            return None, [], (f"the broker is at epoch {ev.group_epoch}, the monitor at {g.generation}: "
                              f"{'not read yet' if ev.group_epoch > g.generation else 'the description is older'}")
    elif g.rebalance is not None or ev.state not in ("Stable", "Empty"):
        return None, [], f"a rebalance is under way (broker: {ev.state})"
    differences = []
    theirs = {m.member_id: m for m in ev.members}
    ours = set(g.members)
    for mid in sorted(set(theirs) - ours):
        differences.append(f"member {mid}: the broker has it, the monitor does not")
    for mid in sorted(ours - set(theirs)):
        differences.append(f"member {mid}: the monitor has it, the broker does not")
    for mid in sorted(ours & set(theirs)):
        seen, said = g.members[mid].assignment, theirs[mid].assignment
        if seen is None or said is None:
            continue
        if set(map(tuple, seen)) != set(map(tuple, said)):
            differences.append(f"member {mid}: the broker assigns {_short(said)}, the monitor {_short(seen)}")
    for mid in sorted(ours & set(theirs)):
        differences.extend(_streams_differences(mid, g.members[mid].streams, theirs[mid]))
    return not differences, differences, None


def _streams_differences(mid: str, ours: dict | None, said) -> list[str]:
    """What a streams member's description (its process id, current active and standby tasks) says otherwise than
    the monitor's reconstruction (Member.streams); nothing where either side does not know."""
    if ours is None or (said.process_id is None and said.active_tasks is None):
        return []
    out = []
    if said.process_id is not None and ours.get("process_id") is not None and said.process_id != ours["process_id"]:
        out.append(f"member {mid}: the broker names its process {said.process_id}, the monitor {ours['process_id']}")
    held = ours.get("tasks") or {}
    for kind in ("active", "standby"):
        seen, told = held.get(kind), getattr(said, f"{kind}_tasks")
        if seen is None or told is None:
            continue
        if set(map(tuple, seen)) != set(map(tuple, told)):
            out.append(f"member {mid}: the broker gives it {kind} tasks {_short(told, '_')}, the monitor "
                       f"{_short(seen, '_')}")
    return out


def _short(tps, sep: str = "-") -> str:
    """Partitions as `topic-partition`, tasks (sep "_") as Kafka names them, `subtopology_partition`."""
    parts = sorted(f"{t}{sep}{p}" for t, p in tps)
    return "[" + ", ".join(parts[:6]) + (f", +{len(parts) - 6}" if len(parts) > 6 else "") + "]"
