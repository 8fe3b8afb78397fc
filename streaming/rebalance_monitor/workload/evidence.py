"""Check, from the client events alone (no monitor), that a scenario really caused what it declares.

`evidence(events)` summarises a group's client events; `missing_triggers(expect, events)` lists the
declared expectations the events do not support (empty = all present). This is the workload's own
sanity check; the end-to-end tests then check what the monitor reports against `expect`.
"""
from __future__ import annotations

from rebalance_monitor.core.causes import classify_reason


def evidence(events: list[dict], session_timeout_ms: int = 6000) -> dict:
    by_member: dict[str, list[dict]] = {}
    for ev in sorted(events, key=lambda e: e.get("ts", 0)):
        if ev.get("member_id"):
            by_member.setdefault(ev["member_id"], []).append(ev)
    generations = sorted({e["generation"] for e in events if e.get("type") == "sync"})
    causes: set[str] = set()
    crashed: list[str] = []
    initial_joins = [e for e in events if e.get("type") == "join" and e.get("member_id") == ""]
    if initial_joins:
        causes.add("member_joined")
    for ev in events:
        if ev.get("type") == "leave":
            causes.add(classify_reason(ev.get("reason"), default="member_left"))
    syncs = [e for e in events if e.get("type") == "sync"]
    last_ts = max((e.get("ts", 0) for e in events), default=0)
    for member, evs in by_member.items():
        if any(e["type"] == "leave" for e in evs) or not any(e["type"] == "sync" for e in evs):
            continue
        beats = [e for e in evs if e["type"] == "heartbeat"]
        last_seen = max(e["ts"] for e in evs)
        last_gen = max(e["generation"] for e in evs if e["type"] == "sync")
        # silent without a leave, while the others went on to a newer generation well after the session
        # timeout: the coordinator expired it
        later = [s for s in syncs if s["member_id"] != member and s["generation"] > last_gen
                 and s["ts"] >= last_seen + session_timeout_ms * 0.5]
        if beats and later and last_ts - last_seen >= session_timeout_ms * 0.5:
            crashed.append(member)
            causes.add("session_timeout")
    topics_by_member: dict[str, set] = {}
    for ev in sorted(events, key=lambda e: e.get("ts", 0)):
        if ev.get("type") == "join":
            key = ev.get("client_id") or ev.get("member_id")
            topics = tuple(ev.get("topics") or ())
            if key in topics_by_member and topics not in topics_by_member[key]:
                causes.add("subscription_change")
            topics_by_member.setdefault(key, set()).add(topics)
    final_gen = generations[-1] if generations else None
    final_members = {s["member_id"] for s in syncs if s["generation"] == final_gen}
    protocols = [s.get("protocol") for s in sorted(syncs, key=lambda s: s["generation"]) if s.get("protocol")]
    static = {e.get("group_instance_id") for e in events if e.get("group_instance_id")}
    return {"generations": generations, "causes": sorted(causes), "crashed_members": crashed,
            "final_members": len(final_members), "protocol_first": protocols[0] if protocols else None,
            "static_members": len(static)}


def missing_triggers(expect: dict, events: list[dict], session_timeout_ms: int = 6000) -> list[str]:
    ev = evidence(events, session_timeout_ms)
    problems = []
    if len(ev["generations"]) < expect.get("generations_min", 0):
        problems.append(f"generations {ev['generations']} < {expect['generations_min']}")
    if "generations_max" in expect and len(ev["generations"]) > expect["generations_max"]:
        problems.append(f"generations {ev['generations']} > {expect['generations_max']}")
    for cause in expect.get("causes", ()):
        if cause not in ev["causes"]:
            problems.append(f"cause {cause} not evidenced (have {ev['causes']})")
    have = set(ev["causes"]) | ({"metadata_change"} if _topics_grew(events) else set())
    if expect.get("causes_any") and not set(expect["causes_any"]) & have:
        problems.append(f"none of {expect['causes_any']} evidenced (have {sorted(have)})")
    for t in expect.get("timeouts", ()):
        if t["timeout"] == "session" and len(ev["crashed_members"]) != t["count"]:
            problems.append(f"session timeouts {ev['crashed_members']} != {t['count']}")
        if t["timeout"] == "poll" and ev["causes"].count("poll_timeout") < 1:
            problems.append("no poll-timeout leave")
    if "members_final" in expect and ev["final_members"] != expect["members_final"]:
        problems.append(f"final members {ev['final_members']} != {expect['members_final']}")
    if "protocol_first" in expect and ev["protocol_first"] != expect["protocol_first"]:
        problems.append(f"first protocol {ev['protocol_first']} != {expect['protocol_first']}")
    if "static_members" in expect and ev["static_members"] != expect["static_members"]:
        problems.append(f"static members {ev['static_members']} != {expect['static_members']}")
    return problems


def _topics_grew(events: list[dict]) -> bool:
    """The group's assignment covers more partitions in a later generation (metadata change)."""
    per_gen: dict[int, set] = {}
    for s in events:
        if s.get("type") == "sync":
            per_gen.setdefault(s["generation"], set()).update(tuple(tp) for tp in s.get("assignment", ()))
    sizes = [len(per_gen[g]) for g in sorted(per_gen)]
    return any(b > a for a, b in zip(sizes, sizes[1:]))
