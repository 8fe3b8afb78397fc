"""What `rebalance-monitor history` answers: a group's timeline (generations with their causes, timeouts, storms) or
the fleet's groups ranked by rebalances, as plain rows the renderers print. Each row names its Kafka cluster (the
record's `kafka_cluster`); a group is a cluster's: the same name on two clusters is two groups of the fleet."""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from ..core.expected import unchecked_reason, unchecked_tasks_reason
from ..core.vocabulary import RecordKind

TIMELINE_COLUMNS = ("time", "cluster", "event", "generation", "duration_s", "members", "moved", "mismatched", "detail",
                    "unchecked_reason", "tasks")
FLEET_COLUMNS = ("cluster", "group", "rebalances", "timeouts", "storms", "first", "last", "top_cause", "top_member")


def _who(c: dict) -> str:
    parts = [c.get("client_id") or c.get("member_id") or ""]
    if c.get("host"):
        parts.append(f"@{c['host']}")
    return "".join(parts)


def _causes(rec: dict) -> str:
    out = []
    for c in rec.get("causes") or []:
        who = _who(c)
        out.append(f"{c.get('cause')}" + (f" ({who})" if who else ""))
    return "; ".join(out)


def _task_names(tasks) -> str:
    return ",".join(f"{t[0]}_{t[1]}" for t in tasks or ())


def streams_tasks(rec: dict) -> str | None:
    """A streams group's generation (KIP-1071): each process, its threads (a member's client id, without the
    consumer suffix) and their tasks (`subtopology_partition`; standby and warm-up tasks marked); None when the
    generation is no streams group's."""
    tasks = rec.get("tasks")
    if not isinstance(tasks, dict):
        return None
    by_process: dict = {}
    for mid, t in sorted(tasks.items()):
        thread = (t.get("client_id") or mid).removesuffix("-consumer")
        kinds = [f"{label}{_task_names(t.get(kind))}" for kind, label in
                 (("active", ""), ("standby", "standby "), ("warmup", "warm-up ")) if t.get(kind)]
        by_process.setdefault(t.get("process_id") or "?", []).append(f"{thread} [{' '.join(kinds) or 'none'}]")
    return "; ".join(f"process {p}: {', '.join(threads)}" for p, threads in by_process.items())


def _moved(r: dict):
    """Partitions moved; for a streams group, tasks moved (`between processes/within a process`)."""
    if r.get("tasks_moved") is None:
        return r.get("partitions_moved")
    return f"{r.get('tasks_moved_between_processes')}/{r.get('tasks_moved_within_process')} tasks"


def timeline_rows(records: Iterable[dict]) -> list[dict]:
    """One row per thing that happened to the group, oldest first."""
    rows = []
    for r in records:
        kind = r.get("kind")
        row = dict.fromkeys(TIMELINE_COLUMNS)
        row["time"] = r.get("ts")
        row["cluster"] = r.get("kafka_cluster")
        if kind == RecordKind.GENERATION:
            d = r.get("duration_ms")
            row.update(event="generation", generation=r.get("generation"),
                       duration_s=round(d / 1000.0, 3) if d is not None else None,
                       members=len(r.get("members") or []), moved=_moved(r),
                       mismatched=r.get("mismatched_partitions"), detail=_causes(r),
                       unchecked_reason=unchecked_reason(r), tasks=streams_tasks(r))
            if r.get("tasks") is not None:  # a streams group's: its tasks, as the sticky task assignor checked them
                row.update(mismatched=r.get("mismatched_tasks"), unchecked_reason=unchecked_tasks_reason(r))
        elif kind == RecordKind.MEMBER_TIMEOUT:
            row.update(event=f"{r.get('timeout')} timeout", detail=_who(r) or r.get("member_id"))
        elif kind == RecordKind.MEMBER_AT_RISK:
            row["time"] = r.get("warn_ms") or r.get("ts")
            silent, limit = _silent_s(r), r.get("limit_ms")
            row.update(event=f"{r.get('risk')} at risk", detail=f"{_who(r) or r.get('member_id')}: no "
                       f"{'heartbeat' if r.get('risk') == 'session' else 'poll'} for {silent} s of its "
                       f"{(limit or 0) / 1000:g} s {'session timeout' if r.get('risk') == 'session' else 'max.poll.interval.ms'}")
        elif kind == RecordKind.STORM:
            what = "storm ended" if r.get("ended_ms") else "storm" if r.get("ts") == r.get("started_ms") else "storm pattern"
            row.update(event=what, detail=f"{r.get('rebalances')} rebalances in the window"
                       + (f", {r.get('pattern')}" if r.get("pattern") else ""))
        elif kind == RecordKind.BROKER_VIEW:
            agrees = r.get("agrees")
            verdict = "agrees" if agrees else "disagrees" if agrees is False else "not compared"
            row.update(event=f"broker {verdict}", generation=r.get("broker_epoch"),
                       detail="; ".join(r.get("differences") or []) or r.get("reason") or "")
        elif kind in (RecordKind.GROUP_DELETED, RecordKind.COORDINATOR):
            row.update(event=kind.replace("_", " "), detail=r.get("action") or r.get("reason") or "")
        else:
            continue
        rows.append(row)
    return rows


def _silent_s(r: dict):
    seen, warn = r.get("last_seen_ms"), r.get("warn_ms")
    return round((warn - seen) / 1000.0, 1) if isinstance(seen, int) and isinstance(warn, int) else "?"


def fleet_rows(records: Iterable[dict], top: int = 20) -> list[dict]:
    """Groups (a cluster's: (kafka_cluster, group)) ranked by rebalances (generations) in the range, then timeouts;
    `top` rows."""
    stats: dict[tuple, dict] = {}
    causes: dict[tuple, Counter] = {}
    members: dict[tuple, Counter] = {}
    started: dict[tuple, set] = {}
    for r in records:
        if not r.get("group"):
            continue
        g = (r.get("kafka_cluster"), r["group"])
        s = stats.setdefault(g, {"cluster": g[0], "group": g[1], "rebalances": 0, "timeouts": 0, "storms": 0,
                                 "first": None, "last": None, "top_cause": None, "top_member": None})
        ts = r.get("ts")
        if ts is not None:
            s["first"] = ts if s["first"] is None else min(s["first"], ts)
            s["last"] = ts if s["last"] is None else max(s["last"], ts)
        kind = r.get("kind")
        if kind == RecordKind.GENERATION:
            s["rebalances"] += 1
            for c in r.get("causes") or []:
                causes.setdefault(g, Counter())[c.get("cause")] += 1
                who = _who(c)
                if who:
                    members.setdefault(g, Counter())[who] += 1
        elif kind == RecordKind.MEMBER_TIMEOUT:
            s["timeouts"] += 1
        elif kind == RecordKind.STORM and not r.get("ended_ms") and r.get("started_ms") not in started.setdefault(g, set()):
            started[g].add(r.get("started_ms"))  # (a running storm's record repeats when its pattern changes)
            s["storms"] += 1
    for g, s in stats.items():
        if causes.get(g):
            s["top_cause"] = causes[g].most_common(1)[0][0]
        if members.get(g):
            s["top_member"] = members[g].most_common(1)[0][0]
    ranked = sorted(stats.values(), key=lambda s: (-s["rebalances"], -s["timeouts"], s["group"], s["cluster"] or ""))
    return ranked[:top]
