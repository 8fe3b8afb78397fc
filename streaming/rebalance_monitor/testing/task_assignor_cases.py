"""Random streams group task assignment cases (KIP-1071) for the project's StickyTaskAssignor and Kafka's
(rebalance_monitor.core.assignors.sticky_task_case's JSON form): 1-20 members on 1-6 processes, 1-5 subtopologies of
1-16 partitions, some stateful, 0-2 standby replicas; with no previous assignment, a random one (conflicting,
duplicated, out of range and unknown claims included) or the group's own previous one after members left, joined,
restarted with a new member id on their process or moved threads; task offsets reported by some members.

    case = seeded_task_case(seed, index)      # the same case on every run and machine
"""
from __future__ import annotations

import random
import uuid

from ..core.assignors.sticky_task_case import STICKY_TASK_CASE, run_sticky_task_case

SUBTOPOLOGY_STYLES = (lambda i: str(i), lambda i: f"subtopology-{i}", lambda i: f"{i}_{i * 7 % 5}")


def seeded_task_case(seed, index: int) -> dict:
    """Case number `index` for `seed`."""
    return random_task_case(random.Random(f"{seed}:{STICKY_TASK_CASE}:{index}"))


def _ids(rnd: random.Random, n: int, prefix: str) -> list:
    style = rnd.randrange(3)
    out: dict = {}
    while len(out) < n:
        s = style if style < 2 else rnd.randrange(2)
        # a Java UUID's text (what Streams clients use) or short names (Java hash buckets collide more)
        out.setdefault(str(uuid.UUID(int=rnd.getrandbits(128))) if s == 0 else f"{prefix}{rnd.randrange(max(100, 4 * n))}", None)
    return list(out)


def random_task_case(rnd: random.Random, members: int = 20, processes: int = 6, subtopologies: int = 5,
                     partitions: int = 16) -> dict:
    """A case of at most that many members, processes, subtopologies and partitions per subtopology."""
    style = rnd.choice(SUBTOPOLOGY_STYLES)
    n_subs = rnd.randint(1, subtopologies)
    subs = [{"id": style(i), "partitions": rnd.randint(1, partitions) if rnd.random() < 0.9 else rnd.randint(0, 2),
             "stateful": rnd.random() < 0.6} for i in range(n_subs)]
    processes = _ids(rnd, rnd.randint(1, processes), "p")
    n_members = rnd.randint(1, members)
    member_ids = _ids(rnd, n_members, "m")
    spread = rnd.random() < 0.7  # members spread over the processes round robin, else at random
    members = [{"member_id": mid, "process_id": processes[i % len(processes)] if spread else rnd.choice(processes)}
               for i, mid in enumerate(member_ids)]
    case = {"assignor": STICKY_TASK_CASE, "num_standby_replicas": rnd.choice((0, 0, 1, 1, 2)),
            "subtopologies": subs, "members": members}
    mode = rnd.choice(("none", "random", "evolved", "evolved"))
    if mode == "random":
        _random_previous(rnd, case)
    elif mode == "evolved":
        _evolved_previous(rnd, case)
    if rnd.random() < 0.3:
        _task_offsets(rnd, case)
    if rnd.random() < 0.2:
        for m in case["members"]:  # client tags: per process, as Streams sends them (4.4's assignor reads none)
            m["client_tags"] = {"zone": f"z{processes.index(m['process_id']) % 3}"}
    return case


def _tasks(case: dict) -> list:
    return [[s["id"], p] for s in case["subtopologies"] for p in range(s["partitions"])]


def _random_previous(rnd: random.Random, case: dict) -> None:
    tasks = _tasks(case)
    members = case["members"]
    for t in tasks:
        if rnd.random() < 0.8:
            rnd.choice(members).setdefault("active", []).append(list(t))
        if rnd.random() < 0.1:  # a conflicting active claim
            rnd.choice(members).setdefault("active", []).append(list(t))
        for _ in range(rnd.choice((0, 0, 1, 2))):
            rnd.choice(members).setdefault("standby", []).append(list(t))
        if rnd.random() < 0.1:
            rnd.choice(members).setdefault("warmup", []).append(list(t))
    if rnd.random() < 0.15:  # a claim on a task the topology no longer has
        s = rnd.choice(case["subtopologies"])
        bogus = [s["id"], s["partitions"] + rnd.randrange(3)] if rnd.random() < 0.5 else ["gone", rnd.randrange(3)]
        rnd.choice(members).setdefault(rnd.choice(("active", "standby")), []).append(bogus)


def _evolved_previous(rnd: random.Random, case: dict) -> None:
    """The group's own previous assignment (computed by the assignor) for a group that then changed."""
    members = case["members"]
    before = [dict(m) for m in members]
    changes = rnd.sample(("leave", "join", "restart", "move"), rnd.randint(1, 2))
    joined: set = set()
    if "join" in changes and len(members) > 1:  # the last ones are new: not in the previous group
        joined = {m["member_id"] for m in members[-rnd.randint(1, max(1, len(members) // 3)):]}
        before = [m for m in before if m["member_id"] not in joined]
    if "leave" in changes:  # members of the previous group that are gone now
        for i in range(rnd.randint(1, 3)):
            before.insert(rnd.randrange(len(before) + 1),
                          {"member_id": f"gone-{i}-{rnd.randrange(1000)}", "process_id": rnd.choice(
                              [m["process_id"] for m in members] + [f"gone-process-{i}"])})
    prev_case = dict(case, members=before)
    try:
        prev = run_sticky_task_case(prev_case)
    except Exception:  # a previous group without members: no previous assignment
        return
    by_id = {m["member_id"]: m for m in members}
    restarted = set()
    if "restart" in changes:
        restarted = {m["member_id"] for m in members if rnd.random() < 0.3}
    moved = "move" in changes
    for mid, a in prev.items():
        target = by_id.get(mid)
        if target is None or mid in restarted:
            continue
        if moved and rnd.random() < 0.3:  # the tasks of one thread show up at another member of its process
            mates = [m for m in members if m["process_id"] == target["process_id"]]
            target = rnd.choice(mates)
        for kind in ("active", "standby"):
            if a[kind]:
                target.setdefault(kind, []).extend(a[kind])
    if rnd.random() < 0.2:  # warm-up tasks on some members
        for m in members:
            for t in (m.get("standby") or [])[:1]:
                m.setdefault("warmup", []).append(list(t))


def _task_offsets(rnd: random.Random, case: dict) -> None:
    tasks = _tasks(case)
    if not tasks:
        return
    for m in case["members"]:
        if rnd.random() < 0.5:
            continue
        mine = (m.get("standby") or []) + (m.get("active") or []) + (m.get("warmup") or [])
        pool = mine + [list(rnd.choice(tasks)) for _ in range(rnd.randint(0, 3))]
        seen = set()
        for t in pool:
            if tuple(t) in seen or rnd.random() < 0.3:
                continue
            seen.add(tuple(t))
            # equal offset sums are common (ties), a few are large
            offset = rnd.choice((0, 10, 100, rnd.randrange(1, 10**6), rnd.randrange(2**40)))
            m.setdefault("task_offsets", []).append([t[0], t[1], offset])
