"""A streams group's task figures (KIP-1071): from its `generation` records' `tasks` (each member's active, standby
and warm-up tasks), `tasks_moved_between_processes` / `tasks_moved_within_process` and `mismatched_tasks`, written
as the catalogue's `kafka_streamsgroup_*` families. A member is labelled by its client id (a stream thread's, which
a restarted thread keeps; its member id changes), its members of older generations drop out with the generation."""
from __future__ import annotations

from .catalogue import STREAMS_MEMBER_TASKS, STREAMS_MISMATCHED_TASKS, STREAMS_TASKS_MOVED
from .exposition import Family

FAMILIES = (STREAMS_MEMBER_TASKS, STREAMS_TASKS_MOVED, STREAMS_MISMATCHED_TASKS)
KINDS = ("active", "standby", "warmup")
SCOPES = (("between_processes", "tasks_moved_between_processes"), ("within_process", "tasks_moved_within_process"))
_MEMBER_TASKS, _MOVED, _MISMATCHED = Family(STREAMS_MEMBER_TASKS), Family(STREAMS_TASKS_MOVED), Family(
    STREAMS_MISMATCHED_TASKS)


def count_moves(s, r: dict) -> None:
    """A generation's task moves added to the group's counters (every generation, an older one's too)."""
    for scope, field in SCOPES:
        n = r.get(field)
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            s.tasks_moved[scope] = s.tasks_moved.get(scope, 0) + n


def take_gauges(s, r: dict) -> None:
    """The latest generation's tasks per member and mismatched tasks (a generation with no `tasks`, no streams
    group's, clears them)."""
    tasks = r.get("tasks")
    held: dict = {}
    if isinstance(tasks, dict):
        for mid, t in tasks.items():
            if not isinstance(t, dict):
                continue
            client = str(t.get("client_id") or mid)
            for kind in KINDS:
                if isinstance(t.get(kind), list):
                    held[(client, kind)] = held.get((client, kind), 0) + len(t[kind])
    s.member_tasks = held
    n = r.get("mismatched_tasks")
    s.mismatched_tasks = n if isinstance(n, int) and not isinstance(n, bool) else None


def lines(s, f: dict[str, str]) -> None:
    """The families' lines of group series `s` into ``f`` ({family name: text})."""
    g = s.label
    if s.member_tasks:
        f[STREAMS_MEMBER_TASKS.name] = "".join(_MEMBER_TASKS.line(g, k, s.member_tasks[k])
                                               for k in sorted(s.member_tasks))
    if s.tasks_moved:
        f[STREAMS_TASKS_MOVED.name] = "".join(_MOVED.line(g, (k,), s.tasks_moved[k]) for k in sorted(s.tasks_moved))
    if s.mismatched_tasks is not None:
        f[STREAMS_MISMATCHED_TASKS.name] = _MISMATCHED.only_fixed(g, s.mismatched_tasks)
