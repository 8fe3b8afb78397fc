"""Kafka Streams groups (KIP-1071): the broker's task assignor, Apache Kafka 4.4's ``StickyTaskAssignor`` ("sticky",
the group coordinator's default streams assignor), reproduced case for case.

    from rebalance_monitor.core.assignors.sticky_task import Subtopology, TaskMember, sticky_task_assign

    tasks = sticky_task_assign(
        [Subtopology("0", partitions=4, stateful=True), Subtopology("1", partitions=2, stateful=False)],
        [TaskMember("m1", process_id="p1", active=(("0", 0), ("0", 1))), TaskMember("m2", process_id="p2")],
        num_standby_replicas=1)
    tasks["m1"].active, tasks["m1"].standby, tasks["m1"].warmup     # frozensets of (subtopology id, partition)

What Kafka 4.4's assignor does (held against its class by tests/assignors/test_sticky_task_assignor.py):

* Quotas: ``ceil(active tasks / members)`` active tasks per member and ``ceil((active + stateful tasks x
  num.standby.replicas) / members)`` tasks of either kind per member; each time a member reaches its quota the
  quota is recomputed over the tasks and members left.
* Active tasks, ordered by (partition, subtopology): first each goes back to its previous active owner while that
  member is under its active quota; then to the least loaded of its standby candidates (members that held it as a
  standby, most caught-up first, then members that only report offsets for it, most caught-up first) under quota;
  the rest, ordered by (subtopology, partition), go to the least loaded process (tasks / members of the process,
  a Java priority queue: ties fall as its heap falls) and there to its least loaded member.
* Standby tasks (``num.standby.replicas`` replicas of each stateful task), ordered by (partition, subtopology)
  descending: a replica goes to the previous active owner, then to previous standby candidates, each only on a
  process that holds no copy of the task yet and under the total quota; the replicas left, ordered by
  (subtopology, partition) descending, go to the least loaded process that holds no copy (none: the replica is
  dropped, as Kafka only logs a warning).
* Load is counted per process (its tasks over its members); within a process, per member.
* Warm-up tasks are neither read nor made: 4.4's assignor ignores a member's warm-up tasks and answers active and
  standby tasks only, so ``warmup`` is always empty. Client tags, racks and ``rack.aware.assignment.tags`` are not
  read by 4.4's assignor either (accepted here, ignored). Task end offsets are not read; task offsets are
  (``task_offsets``: a member's reported offset sum per task ranks it among the standby candidates).
* Iteration orders Kafka leaves to Java: the coordinator hands the assignor its members in a ``HashMap`` filled in
  the group's member order (``members`` here, in that order); processes sit in a ``HashMap`` sized for the
  members, a process's members in a ``HashMap``; a later member's claim on an active task overrides an earlier one's.

A member not in the result never happens: every member of ``members`` is in it, with empty sets when it gets
nothing. Kafka's assignor throws when there are tasks and no member: :class:`KafkaAssignorFailure` here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from . import AssignmentInputError, KafkaAssignorFailure
from ._java import jkey, string_hash
from .java_collections import JavaPriorityQueue, hashmap_iteration

__all__ = ["Subtopology", "TaskAssignment", "TaskMember", "TASK_ASSIGNOR_NAME", "TASK_ASSIGNOR_RELEASE",
           "sticky_task_assign"]

TASK_ASSIGNOR_NAME = "sticky"  # the name the coordinator knows it by (group.streams.assignors)
TASK_ASSIGNOR_RELEASE = "4.4.0"

Task = tuple  # (subtopology id, partition)


@dataclass(frozen=True)
class Subtopology:
    """A subtopology of the group's topology: its id, its number of tasks (the most partitions among its source
    topics) and whether it has state (changelog topics): only stateful tasks get standby replicas."""
    subtopology_id: str
    partitions: int
    stateful: bool = False


@dataclass(frozen=True)
class TaskMember:
    """A member as the coordinator hands it to the assignor: its process, its current tasks (the previous
    assignment), the offsets it reported for tasks whose state it has (``{(subtopology, partition): offset sum}``),
    and, unread by 4.4's assignor, its warm-up tasks, client tags, rack and instance id."""
    member_id: str
    process_id: str
    active: tuple = ()
    standby: tuple = ()
    warmup: tuple = ()
    task_offsets: Mapping = field(default_factory=dict)
    client_tags: Mapping = field(default_factory=dict)
    rack: str | None = None
    instance_id: str | None = None


@dataclass(frozen=True)
class TaskAssignment:
    active: frozenset = frozenset()
    standby: frozenset = frozenset()
    warmup: frozenset = frozenset()


def _java_ceil_div(tasks: int, members: int) -> int:
    """computeTasksPerMember: Java's truncating division, one more when the remainder is positive; 0 members -> 0."""
    if members == 0:
        return 0
    q = abs(tasks) // abs(members)
    q = q if (tasks >= 0) == (members > 0) else -q
    return q + 1 if tasks - q * members > 0 else q


class _Process:
    """ProcessState: its members' task counts, its tasks, and the priority queue of its members by load that Kafka
    builds lazily and throws away when a task is placed on a chosen member."""
    __slots__ = ("counts", "capacity", "task_count", "load", "tasks", "active", "standby", "_member_order", "_by_load")

    def __init__(self):
        self.counts: dict = {}
        self.capacity = 0
        self.task_count = 0
        self.load = 0.0
        self.tasks: set = set()
        self.active: dict = {}
        self.standby: dict = {}
        self._member_order: list | None = None
        self._by_load: JavaPriorityQueue | None = None

    def add_member(self, member_id: str) -> None:
        self.counts[member_id] = 0
        self.capacity += 1
        self.load = self.task_count / self.capacity

    def _add(self, member_id: str, task: Task, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        n = self.counts[member_id] = self.counts[member_id] + 1
        self.load = self.task_count / self.capacity
        return n

    def add_task(self, member_id: str, task: Task, active: bool) -> int:
        n = self._add(member_id, task, active)
        self._by_load = None
        return n

    def add_to_least_loaded(self, task: Task, active: bool) -> int:
        if len(self.counts) == 1:
            return self._add(next(iter(self.counts)), task, active)
        if self._by_load is None:
            if self._member_order is None:
                self._member_order = hashmap_iteration(list(self.counts), string_hash)
            self._by_load = JavaPriorityQueue(lambda a, b: (a[1] > b[1]) - (a[1] < b[1]))
            for m in self._member_order:
                self._by_load.add([m, self.counts[m]])
        entry = self._by_load.poll()
        entry[1] = self._add(entry[0], task, active)
        self._by_load.add(entry)
        return entry[1]


def _by_load(a: _Process, b: _Process) -> int:
    return (a.load > b.load) - (a.load < b.load)


class _State:
    def __init__(self, subtopologies: Sequence[Subtopology], members: Sequence[TaskMember], standbys: int):
        self.standbys = standbys
        self.members = {m.member_id: m for m in members}
        self.member_ids = hashmap_iteration([m.member_id for m in members], string_hash)
        self.active_tasks = [(s.subtopology_id, p) for s in subtopologies for p in range(s.partitions)]
        self.stateful_tasks = [(s.subtopology_id, p) for s in subtopologies if s.stateful for p in range(s.partitions)]
        n = len(self.member_ids)
        self.total_active = len(self.active_tasks)
        self.total_tasks = self.total_active + len(self.stateful_tasks) * standbys
        self.members_active_room = self.members_room = n
        self.active_per_member = _java_ceil_div(self.total_active, n)
        self.tasks_per_member = _java_ceil_div(self.total_tasks, n)
        self.processes: dict = {}
        self.prev_active: dict = {}
        candidates: dict = {}
        for mid in self.member_ids:
            m = self.members[mid]
            self.processes.setdefault(m.process_id, _Process()).add_member(mid)
            for task in m.active:
                self.prev_active[task] = mid
            standby = set(m.standby)
            for task in standby:
                candidates.setdefault(task, []).append((0, -m.task_offsets.get(task, 0), mid))
            for task, offset in m.task_offsets.items():
                if task not in standby:
                    candidates.setdefault(task, []).append((1, -offset, mid))
        # a stable sort: previous standbys first, then the most caught-up, then the members' order
        self.prev_standby = {t: [mid for *_, mid in sorted(c, key=lambda x: x[:2])] for t, c in candidates.items()}
        self.process_order = [self.processes[p] for p in hashmap_iteration(
            [self.members[mid].process_id for mid in self.member_ids], string_hash, n, compute_if_absent=True)]

    def process_of(self, member_id: str) -> _Process:
        return self.processes[self.members[member_id].process_id]

    def count(self, member_id: str) -> int:
        return self.process_of(member_id).counts[member_id]

    def placed_active(self, n: int) -> None:
        if n == self.active_per_member:
            self.members_active_room -= 1
            self.total_active -= n
            self.active_per_member = _java_ceil_div(self.total_active, self.members_active_room)
        self.placed(n)

    def placed(self, n: int) -> None:
        if n == self.tasks_per_member:
            self.members_room -= 1
            self.total_tasks -= n
            self.tasks_per_member = _java_ceil_div(self.total_tasks, self.members_room)

    def least_loaded_prev(self, member_ids, standby_of: Task | None):
        """findPrevMemberWithLeastLoad: the first candidate, replaced only by one lower in both its process's load
        and its own task count; for a standby, only candidates whose process holds no copy of the task."""
        best, best_process, best_member = None, 0.0, 0
        for mid in member_ids or ():
            p = self.process_of(mid)
            if standby_of is not None and standby_of in p.tasks:
                continue
            if best is None or p.load < best_process and p.counts[mid] < best_member:
                best, best_process, best_member = mid, p.load, p.counts[mid]
        return best

    def queue(self) -> JavaPriorityQueue:
        q = JavaPriorityQueue(_by_load)
        for p in self.process_order:
            q.add(p)
        return q


def _assign_active(st: _State) -> None:
    left = sorted(st.active_tasks, key=lambda t: (t[1], jkey(t[0])))
    for previous in (lambda t: st.prev_active.get(t), lambda t: st.least_loaded_prev(st.prev_standby.get(t), None)):
        rest = []
        for task in left:
            mid = previous(task)
            if mid is not None and st.count(mid) < st.active_per_member:
                st.placed_active(st.process_of(mid).add_task(mid, task, True))
            else:
                rest.append(task)
        left = rest
    left.sort(key=lambda t: (jkey(t[0]), t[1]))
    q = st.queue()
    for task in left:
        p = q.poll()
        if p is None:
            raise KafkaAssignorFailure(f"No process available to assign active task {task[0]}_{task[1]}.")
        st.placed_active(p.add_to_least_loaded(task, True))
        q.add(p)


def _standby_to_least_loaded(st: _State, q: JavaPriorityQueue, task: Task) -> bool:
    """assignStandbyToMemberWithLeastLoad: the least loaded process without a copy of the task (the ones passed over
    go back into the queue after it, the last taken first)."""
    taken, found = [], False
    while True:
        p = q.poll()
        if p is None:
            break
        taken.append(p)
        if task not in p.tasks:
            found = True
            st.placed(p.add_to_least_loaded(task, False))
            break
        if not len(q):
            break
    for p in reversed(taken):
        q.add(p)
    return found


def _assign_standby(st: _State) -> None:
    left = []
    for task in sorted(st.stateful_tasks, key=lambda t: (t[1], jkey(t[0])), reverse=True):
        i = 0
        while i < st.standbys:
            mid = st.prev_active.get(task)
            if mid is not None:
                p = st.process_of(mid)
                if task not in p.tasks and p.counts[mid] < st.tasks_per_member:
                    st.placed(p.add_task(mid, task, False))
                    i += 1
                    continue
            mid = st.least_loaded_prev(st.prev_standby.get(task), task)
            if mid is None or not st.count(mid) < st.tasks_per_member:
                break
            st.placed(st.process_of(mid).add_task(mid, task, False))
            i += 1
        else:
            continue
        left.append((task, st.standbys - i))
    left.sort(key=lambda x: (jkey(x[0][0]), x[0][1]), reverse=True)
    q = st.queue()
    for task, replicas in left:
        for _ in range(replicas):
            if not _standby_to_least_loaded(st, q, task):
                break  # Kafka logs that there is not enough capacity for the requested standby replicas


def _checked(subtopologies, members, standbys) -> tuple[list, list]:
    if isinstance(standbys, bool) or not isinstance(standbys, int) or standbys < 0:
        raise AssignmentInputError(f"num.standby.replicas must be a non-negative integer, got {standbys!r}")
    subs, seen = [], set()
    for s in subtopologies:
        if not isinstance(s, Subtopology) or not isinstance(s.subtopology_id, str) or \
                isinstance(s.partitions, bool) or not isinstance(s.partitions, int) or s.partitions < 0:
            raise AssignmentInputError(f"a subtopology must be Subtopology(id: str, partitions: int >= 0), got {s!r}")
        if s.subtopology_id in seen:
            raise AssignmentInputError(f"subtopology {s.subtopology_id!r} is listed twice")
        seen.add(s.subtopology_id)
        subs.append(s)
    out, ids = [], set()
    for m in members:
        if not isinstance(m, TaskMember) or not isinstance(m.member_id, str) or not isinstance(m.process_id, str):
            raise AssignmentInputError(f"a member must be TaskMember(member_id: str, process_id: str, ...), got {m!r}")
        if m.member_id in ids:
            raise AssignmentInputError(f"member {m.member_id!r} is listed twice")
        ids.add(m.member_id)
        tasks = {}
        for kind in ("active", "standby", "warmup"):
            tasks[kind] = tuple(_task(t, m.member_id) for t in getattr(m, kind))
        if not isinstance(m.task_offsets, Mapping):
            raise AssignmentInputError(f"member {m.member_id!r}: task_offsets must map (subtopology, partition) to "
                                       "an offset sum")
        offsets = {}
        for t, o in m.task_offsets.items():
            if isinstance(o, bool) or not isinstance(o, int):
                raise AssignmentInputError(f"member {m.member_id!r}: the offset sum of {t!r} must be an integer")
            offsets[_task(t, m.member_id)] = o
        out.append(TaskMember(m.member_id, m.process_id, tasks["active"], tasks["standby"], tasks["warmup"],
                              offsets, m.client_tags, m.rack, m.instance_id))
    return subs, out


def _task(t, member_id: str) -> Task:
    if isinstance(t, (tuple, list)) and len(t) == 2 and isinstance(t[0], str) and isinstance(t[1], int) \
            and not isinstance(t[1], bool):
        return (t[0], t[1])
    raise AssignmentInputError(f"member {member_id!r}: task {t!r} is not (subtopology id, partition)")


def sticky_task_assign(subtopologies: Sequence[Subtopology], members: Sequence[TaskMember],
                       num_standby_replicas: int = 0) -> dict[str, TaskAssignment]:
    """The target assignment Kafka 4.4's StickyTaskAssignor computes: ``{member id: TaskAssignment}`` for every
    member. ``members`` in the order the coordinator holds them (the group's member map). Raises
    :class:`AssignmentInputError` on malformed input and :class:`KafkaAssignorFailure` where Kafka's assignor
    throws (tasks and no member)."""
    subs, mems = _checked(subtopologies, members, num_standby_replicas)
    st = _State(subs, mems, num_standby_replicas)
    _assign_active(st)
    if num_standby_replicas > 0:
        _assign_standby(st)
    out = {}
    for m in mems:
        p = st.processes[m.process_id]
        out[m.member_id] = TaskAssignment(frozenset(p.active.get(m.member_id, ())),
                                          frozenset(p.standby.get(m.member_id, ())))
    return out
