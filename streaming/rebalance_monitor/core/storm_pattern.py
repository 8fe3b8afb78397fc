"""What a rebalance storm looks like, from the generations inside it: a few named rules, checked in order, the first
that holds names the pattern (Burrow's evaluator rules are the model). A planned rolling restart or autoscaling
should not page the way a flapping member does; the pattern lets alert rules tell them apart.

Each generation is summarised as `{"members": n, "causes": [(cause, who), ...]}`, `who` being the client id (or
member id) and host of the member a cause names.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Callable, Sequence

# Kafka's member ids are "<client.id>-<UUID>": without a client id, the member id less its UUID names the client
_MEMBER_UUID = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

ROLLING_RESTART = "rolling_restart"
SCALING = "scaling"
FLAPPING_MEMBER = "flapping_member"
TIMEOUTS = "timeouts"
MIXED = "mixed"
PATTERNS = (TIMEOUTS, FLAPPING_MEMBER, SCALING, ROLLING_RESTART, MIXED)

_TIMEOUT_CAUSES = {"session_timeout", "poll_timeout", "join_timeout", "sync_timeout"}
_CHURN_CAUSES = {"member_joined", "member_left", "static_member_replaced", "unknown"}
_DEPARTURES = {"member_left", "unknown", "session_timeout", "poll_timeout", "join_timeout", "sync_timeout"}


def summarise(generation_record: dict) -> dict:
    """The part of a `generation` record the rules read."""
    causes = []
    for c in generation_record.get("causes") or []:
        who = c.get("client_id") or _MEMBER_UUID.sub("", c.get("member_id") or "")
        if c.get("host"):
            who = f"{who}@{c['host']}"
        causes.append((c.get("cause"), who))
    return {"members": len(generation_record.get("members") or []), "causes": causes}


def _timeouts(gens: Sequence[dict]) -> str | None:
    timed = [g for g in gens if any(c in _TIMEOUT_CAUSES for c, _ in g["causes"])]
    if len(timed) * 2 < len(gens):
        return None
    who = sorted({w for g in timed for c, w in g["causes"] if c in _TIMEOUT_CAUSES and w})
    kinds = sorted({c for g in timed for c, _ in g["causes"] if c in _TIMEOUT_CAUSES})
    return f"{', '.join(kinds)} of {', '.join(who[:5]) or 'unnamed members'}" + (" ..." if len(who) > 5 else "")


def _flapping(gens: Sequence[dict]) -> str | None:
    # each generation's names in sorted order: a tie in the count goes to the same name in every process
    per_gen = Counter(w for g in gens for w in sorted({w for _, w in g["causes"] if w}))
    if not per_gen:
        return None
    who, n = per_gen.most_common(1)[0]
    departures = sum(1 for g in gens for c, w in g["causes"] if w == who and c in _DEPARTURES)
    # named in at least 60% of the generations, and gone more than once (a rolling restart takes each member
    # out once)
    if n >= 3 and n * 5 >= len(gens) * 3 and departures >= 2:
        return f"{who} in {n} of {len(gens)} generations, gone {departures} times"
    return None


def _rolling_restart(gens: Sequence[dict]) -> str | None:
    causes = [(c, w) for g in gens for c, w in g["causes"]]
    if not causes:
        return None
    departed: Counter = Counter()
    back = set()
    for c, w in causes:  # in time order
        if not w:
            continue
        if c in _DEPARTURES:
            departed[w] += 1
        elif c in ("member_joined", "static_member_replaced") and departed[w]:
            back.add(w)
        if c == "static_member_replaced":
            departed[w] += 1
            back.add(w)
    if len(departed) < 2 or max(departed.values()) > 2 or not back:
        return None  # several members, each out (and back) once
    if any(departed[w] > 1 and w not in back for w in departed):
        return None
    other = sum(1 for c, _ in causes if c not in _CHURN_CAUSES and c not in _DEPARTURES)
    if other * 3 > len(causes):  # churn, give or take a client's own rejoin
        return None
    if abs(gens[-1]["members"] - max(g["members"] for g in gens)) > 1:
        return None  # the group shrank for good: not a restart
    return f"{len(departed)} members restarted in turn"


def _scaling(gens: Sequence[dict]) -> str | None:
    sizes = [g["members"] for g in gens]
    steps = [b - a for a, b in zip(sizes, sizes[1:])]
    if len(sizes) < 2 or sizes[0] == sizes[-1]:
        return None
    if all(s >= 0 for s in steps) or all(s <= 0 for s in steps):
        return f"{'scale-out' if sizes[-1] > sizes[0] else 'scale-in'} from {sizes[0]} to {sizes[-1]} members"
    return None


RULES: tuple[tuple[str, Callable[[Sequence[dict]], str | None]], ...] = (
    (TIMEOUTS, _timeouts), (FLAPPING_MEMBER, _flapping), (SCALING, _scaling), (ROLLING_RESTART, _rolling_restart))


def classify(gens: Sequence[dict]) -> tuple[str, str]:
    """(pattern, detail) of a storm made of these generations (oldest first)."""
    for name, rule in RULES:
        detail = rule(gens) if gens else None
        if detail is not None:
            return name, detail
    kinds = Counter(c for g in gens for c, _ in g["causes"])
    return MIXED, ", ".join(f"{c} x{n}" for c, n in kinds.most_common(4)) or "no causes known"
