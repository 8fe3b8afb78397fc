"""A streams group's task assignments compared (KIP-1071): a recomputed one (``sticky_task_assign``) against the one
the coordinator actually made, and the moves from one assignment to the next.

    wrong = misplaced_tasks(recomputed, actual, process_of)    # tasks not where the assignor would put them
    moves = task_moves(previous, actual, process_of)            # what a rebalance moved
    moves.between_processes    # a task that changed process: its state is restored there (unless a standby had it)
    moves.within_process       # a task handed to another member (stream thread) of the same process

Assignments are ``{member id: TaskAssignment}`` (``sticky_task.TaskAssignment``: active, standby and warm-up sets of
(subtopology id, partition)); ``process_of`` maps each member id to its process id (members of either side).
A member missing from ``process_of`` counts as a process of its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ._java import jkey
from .sticky_task import TaskAssignment

__all__ = ["MisplacedTask", "TaskMove", "TaskMoves", "misplaced_tasks", "task_moves"]

KINDS = ("active", "standby", "warmup")


@dataclass(frozen=True)
class MisplacedTask:
    """A task (of one kind) whose members differ from the recomputed ones; ``same_processes``: the processes agree
    (only the member, the stream thread, differs)."""
    task: tuple
    kind: str
    expected_members: tuple
    actual_members: tuple
    same_processes: bool


@dataclass(frozen=True)
class TaskMove:
    """A task (of one kind) that ``to_member`` holds now and did not before; ``from_member`` the member that held it
    and does not now (None: nobody gave it up, a new task or a new replica)."""
    task: tuple
    kind: str
    from_member: str | None
    to_member: str
    from_process: str | None
    to_process: str


@dataclass(frozen=True)
class TaskMoves:
    between_processes: tuple = ()
    within_process: tuple = ()
    dropped: tuple = ()  # (task, kind, member): held before, by nobody who took its place

    @property
    def restores(self) -> tuple:
        """The stateful-looking moves: active tasks that changed process (a standby of the task on the new process
        spares the restore; the caller that knows it filters these)."""
        return tuple(m for m in self.between_processes if m.kind == "active")


def _holders(assignment: Mapping[str, TaskAssignment], kind: str) -> dict:
    out: dict = {}
    for mid, a in assignment.items():
        for task in getattr(a, kind):
            out.setdefault(task, set()).add(mid)
    return out


def _order(task) -> tuple:
    return (jkey(task[0]), task[1])


def _ids(members) -> tuple:
    return tuple(sorted(members, key=jkey))


def misplaced_tasks(expected: Mapping[str, TaskAssignment], actual: Mapping[str, TaskAssignment],
                    process_of: Mapping[str, str]) -> list[MisplacedTask]:
    """Every (task, kind) whose holders differ between the two assignments, ordered by kind then task."""
    out = []
    for kind in KINDS:
        want, have = _holders(expected, kind), _holders(actual, kind)
        for task in sorted(set(want) | set(have), key=_order):
            e, a = want.get(task, set()), have.get(task, set())
            if e == a:
                continue
            same = sorted(process_of.get(m, f"member:{m}") for m in e) == \
                sorted(process_of.get(m, f"member:{m}") for m in a)
            out.append(MisplacedTask(task, kind, _ids(e), _ids(a), same))
    return out


def task_moves(before: Mapping[str, TaskAssignment], after: Mapping[str, TaskAssignment],
               process_of: Mapping[str, str]) -> TaskMoves:
    """The moves from ``before`` to ``after``: each member that gained a (task, kind) is paired with a member of its
    own process that gave it up (a move within the process), else with another member that gave it up (a move
    between processes; members taken in id order), else with nobody (between processes, from None)."""
    def proc(m):
        return process_of.get(m, f"member:{m}")
    between, within, dropped = [], [], []
    for kind in KINDS:
        was, now = _holders(before, kind), _holders(after, kind)
        for task in sorted(set(was) | set(now), key=_order):
            b, a = was.get(task, set()), now.get(task, set())
            lost, unpaired = list(_ids(b - a)), []
            for m in _ids(a - b):  # first the members of a process that gave the task up
                mate = next((x for x in lost if proc(x) == proc(m)), None)
                if mate is None:
                    unpaired.append(m)
                else:
                    lost.remove(mate)
                    within.append(TaskMove(task, kind, mate, m, proc(mate), proc(m)))
            for m in unpaired:
                giver = lost.pop(0) if lost else None
                between.append(TaskMove(task, kind, giver, m, None if giver is None else proc(giver), proc(m)))
            dropped.extend((task, kind, m) for m in lost)
    return TaskMoves(tuple(between), tuple(within), tuple(dropped))
