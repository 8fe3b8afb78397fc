"""The output records, built in one place: one function per kind (docs/records.md; contract section 2).

Every record is a JSON-ready dict with `kind`, `group` and `ts` (the event time it refers to, epoch ms) first, then
its own fields in a fixed order, so the JSON text of a record is the same whichever driver or module made it. The
core's handlers, the group runner, the Spark job and `replay` call these instead of writing dict literals.
Pure: standard library only.
"""
from __future__ import annotations

from typing import Iterable

from .vocabulary import RecordKind


def generation(group: str, ts: int, *, generation: int | None, protocol: str | None, leader: str | None,
               started_ms: int | None, completed_ms: int, duration_ms: int | None, causes: list[dict],
               members: list[str], assignment: dict | None, group_type: str = "unknown") -> dict:
    """A generation that completed (the expected-assignment fields are added by `core/expected.py`);
    `group_type`: classic, consumer, streams, share or unknown (`group/group_type.py`)."""
    return {"kind": RecordKind.GENERATION, "group": group, "ts": ts, "group_type": group_type, "generation": generation,
            "protocol": protocol, "leader": leader, "started_ms": started_ms, "completed_ms": completed_ms,
            "duration_ms": duration_ms, "causes": causes, "members": members, "assignment": assignment}


def rebalance_started(group: str, ts: int, *, generation: int | None, started_ms: int,
                      causes: list[dict]) -> dict:
    return {"kind": RecordKind.REBALANCE_STARTED, "group": group, "ts": ts, "generation": generation,
            "started_ms": started_ms, "causes": causes}


def member_timeout(group: str, detected_ms: int, *, member_id: str, timeout: str, last_seen_ms: int | None,
                   deadline_ms: int, identity: Iterable[tuple[str, str | None]] = ()) -> dict:
    """A member's deadline passed; `identity`: its (client_id, host, group_instance_id) where known."""
    rec = {"kind": RecordKind.MEMBER_TIMEOUT, "group": group, "ts": detected_ms, "member_id": member_id,
           "timeout": timeout, "last_seen_ms": last_seen_ms, "deadline_ms": deadline_ms, "detected_ms": detected_ms}
    for key, value in identity:
        if value is not None:
            rec[key] = value
    return rec


def member_at_risk(group: str, detected_ms: int, *, member_id: str, risk: str, last_seen_ms: int | None,
                   warn_ms: int, deadline_ms: int, limit_ms: int | None, identity: Iterable[tuple[str, str | None]] = ()
                   ) -> dict:
    """A member silent for core.early_warning_percent of its `risk` ("session" or "poll") limit `limit_ms`: at
    `warn_ms` (event time) it had not been heard from since `last_seen_ms`; its deadline is `deadline_ms`."""
    rec = {"kind": RecordKind.MEMBER_AT_RISK, "group": group, "ts": detected_ms, "member_id": member_id,
           "risk": risk, "last_seen_ms": last_seen_ms, "warn_ms": warn_ms, "deadline_ms": deadline_ms,
           "limit_ms": limit_ms, "detected_ms": detected_ms}
    for key, value in identity:
        if value is not None:
            rec[key] = value
    return rec


def storm(*, started_ms: int, ended_ms: int | None, rebalances: int, window_ms: int, pattern: str,
          pattern_detail: dict) -> dict:
    """A storm starting, changing its pattern, or ending; the group and time are stamped by its group
    (`group/rebalance.stamp`)."""
    return {"kind": RecordKind.STORM, "started_ms": started_ms, "ended_ms": ended_ms, "rebalances": rebalances,
            "window_ms": window_ms, "pattern": pattern, "pattern_detail": pattern_detail}


def group_status(group: str, ts: int, *, state: str, generation: int | None, protocol: str | None,
                 leader: str | None, members: int, heartbeat_gap_ratios: dict, in_storm: bool,
                 rebalancing_since_ms: int | None, coordinator_partition: int,
                 poll_gap_ratios: dict | None = None, client_standard_metrics: list | None = None,
                 group_type: str = "unknown", members_at_risk: list | None = None) -> dict:
    """The group as it stands at `ts`; `members_at_risk`: [member id, risk] of each member past its early-warning
    point and not past its deadline at `ts` (`group/timers.at_risk_now`), so a reader can tell one heard from again."""
    return {"kind": RecordKind.GROUP_STATUS, "group": group, "ts": ts, "group_type": group_type, "state": state,
            "generation": generation,
            "protocol": protocol, "leader": leader, "members": members,
            "max_heartbeat_gap_ratio": max(heartbeat_gap_ratios.values()) if heartbeat_gap_ratios else None,
            "heartbeat_gap_ratios": heartbeat_gap_ratios, "in_storm": in_storm,
            "rebalancing_since_ms": rebalancing_since_ms, "coordinator_partition": coordinator_partition,
            "max_poll_gap_ratio": max(poll_gap_ratios.values()) if poll_gap_ratios else None,
            "poll_gap_ratios": poll_gap_ratios or {}, "client_standard_metrics": client_standard_metrics or [],
            "members_at_risk": members_at_risk or []}


def offsets_committed(group: str, ts: int, *, member_id: str | None, offsets) -> dict:
    return {"kind": RecordKind.OFFSETS_COMMITTED, "group": group, "ts": ts, "member_id": member_id,
            "offsets": [list(o) for o in offsets]}


def end_offsets(group: str, ts: int, *, offsets) -> dict:
    """Log-end offsets: of the whole cluster (group "") or reported for one group."""
    return {"kind": RecordKind.END_OFFSETS, "group": group, "ts": ts, "offsets": [list(o) for o in offsets]}


def group_deleted(group: str, ts: int) -> dict:
    return {"kind": RecordKind.GROUP_DELETED, "group": group, "ts": ts}


def coordinator(group: str, ts: int, *, partition: int, broker: int | None, action: str) -> dict:
    return {"kind": RecordKind.COORDINATOR, "group": group, "ts": ts, "partition": partition, "broker": broker,
            "action": action}


def dead_letter(group: str, ts: int, *, reason: str, detail: str, raw: str, origin: dict | None = None) -> dict:
    """An input record that could not be used: why, and the record itself (`origin`: its topic, partition and
    offset when it came from Kafka)."""
    rec = {"kind": RecordKind.DEAD_LETTER, "group": group, "ts": ts, "reason": reason, "detail": detail, "raw": raw}
    if origin:
        rec.update(origin)
    return rec


def broker_view(group: str, ts: int, *, group_type: str | None, state: str | None, protocol: str | None,
                broker_epoch: int | None, monitor_epoch: int | None, members: int, agrees: bool | None,
                differences: list[str], reason: str | None) -> dict:
    """The coordinator's description of the group held against the reconstruction (core/group/broker_view.py)."""
    return {"kind": RecordKind.BROKER_VIEW, "group": group, "ts": ts, "group_type": group_type, "state": state,
            "protocol": protocol, "broker_epoch": broker_epoch, "monitor_epoch": monitor_epoch, "members": members,
            "agrees": agrees, "differences": differences, "reason": reason}
