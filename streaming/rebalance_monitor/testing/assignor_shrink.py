"""Shrink an assignor case on which the project and Kafka disagree to a small one on which they still do.

`shrink(case, fails)` tries simpler variants, keeps the first that still fails and starts over, until none does:
fewer members, fewer topics, fewer partitions, fewer owned partitions, no racks, no instance ids, no generations,
short member ids, fewer topics in a subscription. `fails(candidates) -> [bool, ...]` judges a list at once, so the
oracle answers one batch per step. `disagreement(oracle)` is the `fails` of the differential tests.
"""
from __future__ import annotations

import copy
import itertools
from typing import Callable, Iterator

from ..core.assignors import AssignmentInputError, run_assign_case
from ..core.assignors.sticky_task_case import STICKY_TASK_CASE, run_sticky_task_case


def outcome(case: dict):
    """The project's answer as the oracle writes it: {"result": ...} or {"error": ...} (the project rejects the case,
    e.g. because Kafka's assignor would fail on it), or {"crash": ...} (any other exception: never an agreement)."""
    try:
        if isinstance(case, dict) and case.get("assignor") == STICKY_TASK_CASE:  # a streams group's tasks
            return {"result": run_sticky_task_case(case)}
        return {"result": run_assign_case(case)}
    except AssignmentInputError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    except Exception as exc:
        return {"crash": f"{type(exc).__name__}: {exc}"}


def agree(ours: dict, kafkas: dict) -> bool:
    """Same assignment, or both reject the case."""
    if "result" in ours and "result" in kafkas:
        return ours["result"] == kafkas["result"]
    return "error" in ours and "error" in kafkas


def disagreement(oracle) -> Callable[[list], list]:
    def fails(cases: list) -> list:
        return [not agree(outcome(c), k) for c, k in zip(cases, oracle.assign_many(cases))]
    return fails


def shrink(case: dict, fails: Callable[[list], list], batch: int = 8, max_steps: int = 10_000) -> dict:
    """The smallest variant found of `case` that still `fails` (`case` itself when none does)."""
    current = copy.deepcopy(case)
    for _ in range(max_steps):
        hit = None
        for candidates in _passes(current):
            while hit is None:
                group = list(itertools.islice(candidates, batch))
                if not group:
                    break
                hit = next((c for c, v in zip(group, fails(group)) if v), None)
            if hit is not None:
                break
        if hit is None:
            return current
        current = hit
    return current


def _passes(case: dict) -> Iterator[Iterator[dict]]:
    """Lazy groups of candidates, boldest first; each candidate is a new case."""
    yield _chunks_removed(case, len(case["members"]), _remove_members)
    yield (_remove_topics(case, [t]) for t in case["partitions_per_topic"])
    yield _fewer_partitions(case)
    yield _chunks_removed(case, len(_all_owned(case)), _remove_owned)
    yield _simpler_members(case)
    yield _simpler_group(case)


def _chunks(n: int) -> Iterator[tuple[int, int]]:
    """(start, stop) slices: halves, quarters, ... single items."""
    size = max(1, n // 2)
    while n:
        for start in range(0, n, size):
            yield start, min(n, start + size)
        if size == 1:
            return
        size //= 2


def _chunks_removed(case: dict, n: int, remove) -> Iterator[dict]:
    return (c for c in (remove(case, a, b) for a, b in _chunks(n)) if c is not None)


def _remove_members(case: dict, a: int, b: int):
    if b - a >= len(case["members"]):
        return None  # a group keeps a member
    c = copy.deepcopy(case)
    del c["members"][a:b]
    return c


def _all_owned(case: dict) -> list:
    return [(i, j) for i, m in enumerate(case["members"]) for j in range(len(m.get("owned_partitions") or ()))]


def _remove_owned(case: dict, a: int, b: int):
    drop = set(_all_owned(case)[a:b])
    c = copy.deepcopy(case)
    for i, m in enumerate(c["members"]):
        if m.get("owned_partitions"):
            m["owned_partitions"] = [tp for j, tp in enumerate(m["owned_partitions"]) if (i, j) not in drop]
    return c


def _remove_topics(case: dict, topics: list) -> dict:
    c = copy.deepcopy(case)
    gone = set(topics)
    c["partitions_per_topic"] = {t: n for t, n in c["partitions_per_topic"].items() if t not in gone}
    for m in c["members"]:
        m["topics"] = [t for t in m["topics"] if t not in gone]
        if m.get("owned_partitions"):
            m["owned_partitions"] = [tp for tp in m["owned_partitions"] if tp[0] not in gone]
    if "partition_racks" in c:
        c["partition_racks"] = {t: r for t, r in c["partition_racks"].items() if t not in gone}
    return c


def _with_partitions(case: dict, topic: str, n: int) -> dict:
    """`topic` with `n` partitions; claims on the partitions it loses go (claims beyond the old count stay)."""
    c = copy.deepcopy(case)
    old = c["partitions_per_topic"][topic]
    c["partitions_per_topic"][topic] = n
    for m in c["members"]:
        if m.get("owned_partitions"):
            m["owned_partitions"] = [tp for tp in m["owned_partitions"] if tp[0] != topic or not n <= tp[1] < old]
    if topic in c.get("partition_racks", {}):
        c["partition_racks"][topic] = c["partition_racks"][topic][:n]
    return c


def _fewer_partitions(case: dict) -> Iterator[dict]:
    for t, n in case["partitions_per_topic"].items():
        for k in dict.fromkeys((1, n // 2, n - 1)):
            if 1 <= k < n:
                yield _with_partitions(case, t, k)


def _simpler_members(case: dict) -> Iterator[dict]:
    for i, m in enumerate(case["members"]):
        for key in ("rack", "group_instance_id", "generation"):
            if m.get(key) is not None:
                c = copy.deepcopy(case)
                del c["members"][i][key]
                yield c
        if len(m["topics"]) > 1:
            for t in m["topics"]:
                c = copy.deepcopy(case)
                c["members"][i]["topics"] = [x for x in m["topics"] if x != t]
                yield c


def _simpler_group(case: dict) -> Iterator[dict]:
    if "partition_racks" in case:
        c = copy.deepcopy(case)
        del c["partition_racks"]
        yield c
    ids = [m["member_id"] for m in case["members"]]
    short = [f"m{i}" for i in range(len(ids))]
    if ids != short:  # short member ids, in the same order (another Java hash order, though)
        c = copy.deepcopy(case)
        for m, new in zip(c["members"], short):
            m["member_id"] = new
        yield c
    gens = {m.get("generation") for m in case["members"] if m.get("generation") is not None}
    if len(gens) > 1:  # generations renumbered 1, 2, ... in the same order
        rank = {g: k + 1 for k, g in enumerate(sorted(gens))}
        if rank != {g: g for g in gens}:
            c = copy.deepcopy(case)
            for m in c["members"]:
                if m.get("generation") is not None:
                    m["generation"] = rank[m["generation"]]
            yield c
