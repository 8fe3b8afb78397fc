"""Judging a streams group's generation (KIP-1071): the task assignment recomputed with Kafka 4.4's
StickyTaskAssignor (`assignors/sticky_task.py`) and held against the tasks the members hold, and what the
rebalance moved (`assignors/task_moves.py`).

What the assignor is handed, as the coordinator hands it (`TargetAssignmentBuilder`):
- the subtopologies (the group's topology record, `streams_topology` events): a subtopology has as many tasks as
  the most partitions among its source topics and repartition source topics (Kafka's InternalTopicManager
  `computeNumberOfTasks`), taken from the partition counts the core knows (`topic_partitions`), a repartition
  topic's own count where the topology fixes it; it is stateful when it has state changelog topics. A count the
  core does not know is bounded below by the tasks the members hold (said in `expected_reason`); with no topology
  at all, the subtopologies are those the members' tasks name (stateful when a standby of one is held);
- the members in the order the group holds them, each with its process and the tasks it held when the group's
  epoch was bumped (the coordinator hands each member's current tasks: group/streams_topology.py `before_epoch`;
  the previous generation's when no input showed the bump);
- `num.standby.replicas`: the coordinator's own, from the group metadata record's LastAssignmentConfigs (Kafka 4.4
  writes it), else the group's `streams.num.standby.replicas`, else the brokers' `group.streams.num.standby.replicas`
  (DescribeConfigs, the broker poller's `group_config` events), else 0 (Kafka's default):
  `num_standby_replicas_source` says which (coordinator, group, broker, default).

What the recomputation is held against: the members' tasks of the generation itself (their current assignment
records at the generation's epoch). The coordinator's target assignment (record type 21) is not kept by the core:
a member that has not reconciled to the generation's epoch yet (its tasks of an older epoch) leaves
`mismatched_tasks` null, with the reason. Members' reported task offsets (which rank standby candidates) are not
in `__consumer_offsets`: a stateful group with standbys may differ for that alone.
"""
from __future__ import annotations

from .assignors import AssignmentInputError, KafkaAssignorFailure
from .assignors.sticky_task import TASK_ASSIGNOR_RELEASE, Subtopology, TaskAssignment, TaskMember, sticky_task_assign
from .assignors.task_moves import misplaced_tasks, task_moves

KINDS = ("active", "standby", "warmup")
NULL_FIELDS = {"expected_tasks": None, "mismatched_tasks": None, "tasks_moved": None,
               "tasks_moved_between_processes": None, "tasks_moved_within_process": None,
               "num_standby_replicas": None, "num_standby_replicas_source": None}


def _assignment(tasks: dict | None) -> TaskAssignment:
    tasks = tasks or {}
    return TaskAssignment(*(frozenset(tuple(t) for t in (tasks.get(k) or ())) for k in KINDS))


def _held_tasks(assignments) -> dict:
    """{subtopology id: (most partitions + 1 seen, a standby seen)} over assignments' tasks of any kind."""
    out: dict = {}
    for a in assignments:
        for kind in KINDS:
            for sub, p in getattr(a, kind):
                n, stateful = out.get(sub, (0, False))
                out[sub] = (max(n, p + 1), stateful or kind == "standby")
    return out


def _tasks_before(state: dict, epoch: int) -> dict:
    """{member id: tasks} the members held when epoch `epoch`'s target was computed: taken at its bump
    (group/streams_topology.py `before_epoch`), else the group's last generation's."""
    taken = (state.get("before") or {}).get(str(epoch))
    return dict(taken if taken is not None else state.get("prev") or {})


def subtopologies(group, held: dict) -> tuple[list[Subtopology], list[str]]:
    """The subtopologies with their task counts, and what was bounded by the tasks held (for the reason)."""
    known = (group.streams_state or {}).get("subtopologies")
    if known is None:
        subs = [Subtopology(sid, n, stateful) for sid, (n, stateful) in sorted(held.items())]
        return subs, (["the topology (subtopologies from the tasks held)"] if subs else ["the topology"])
    out, bounded = [], []
    for s in known:
        counts, unknown = [], list(s.get("source_topic_regex") or ())
        for t in s.get("source_topics") or ():
            (counts.append(group.partitions[t]) if t in group.partitions else unknown.append(t))
        for t, n in (s.get("repartition_source_topics") or {}).items():
            if n > 0:
                counts.append(n)
            elif t in group.partitions:
                counts.append(group.partitions[t])
            else:
                unknown.append(t)
        sid = s["subtopology_id"]
        n = max(counts, default=0)
        if unknown:
            n = max(n, held.get(sid, (0, False))[0])
            bounded.append(f"subtopology {sid} ({', '.join(unknown[:3])})")
        out.append(Subtopology(sid, n, bool(s.get("state_changelog_topics"))))
    return out, bounded


def judge_streams(group, ids: list[str], members: dict, gen: int, out: dict) -> dict:
    """Fill `out` (judge_generation's fields) with the streams fields of generation `gen` of members `ids`
    (`members`: streams_members)."""
    out.update(NULL_FIELDS)
    state = group.streams_state or {}
    process_of = {mid: s.get("process_id") or f"member:{mid}" for mid, s in members.items()}
    prev = _tasks_before(state, gen)
    for mid, t in prev.items():
        process_of.setdefault(mid, t.get("process_id") or f"member:{mid}")
    before = {mid: _assignment(t) for mid, t in prev.items()}
    actual = {mid: _assignment(s.get("tasks")) for mid, s in members.items()}
    late = sorted(mid for mid, s in members.items() if s.get("tasks") is None or s.get("tasks_epoch") != gen
                  or s.get("tasks_state") not in (None, "stable"))
    if not late:
        # a move is a task a member gave up and another took (a new task, or a new replica, moves nothing)
        moves = task_moves(before, actual, process_of)
        between = sum(1 for m in moves.between_processes if m.from_member is not None)
        out.update(tasks_moved=between + len(moves.within_process), tasks_moved_between_processes=between,
                   tasks_moved_within_process=len(moves.within_process))
    if not group.settings.expected_assignment:
        out["expected_reason"] = "disabled"
        return out
    standby, source = ((state["standby"], "coordinator") if state.get("standby") is not None
                       else tuple(state.get("standby_config") or (0, "default")))
    out.update(num_standby_replicas=standby, num_standby_replicas_source=source)
    subs, bounded = subtopologies(group, _held_tasks([*before.values(), *actual.values()]))
    if not subs:
        out["expected_reason"] = "topology unknown and no task held"
        return out
    work = len(members) * max(1, sum(sub.partitions for sub in subs) * (1 + standby))
    if work > group.settings.expected_assignment_max_work:
        out["expected_reason"] = f"group too large to recompute ({work} member-tasks)"
        return out
    order = [mid for mid in group.members if mid in members]  # the order the group (its coordinator) holds them
    task_members = [TaskMember(mid, process_of[mid], active=tuple(sorted(before[mid].active)) if mid in before
                               else (), standby=tuple(sorted(before[mid].standby)) if mid in before else ())
                    for mid in order]
    try:
        expected = sticky_task_assign(subs, task_members, num_standby_replicas=standby)
    except (AssignmentInputError, KafkaAssignorFailure) as exc:
        out["expected_reason"] = f"cannot recompute: {exc}"[:300]
        return out
    except Exception as exc:  # noqa: BLE001 - an assignor's bug must not stop the group's reconstruction
        out["expected_reason"] = f"assignor failed: {type(exc).__name__}: {exc}"[:300]
        return out
    out["expected_tasks"] = {mid: {k: sorted([list(t) for t in getattr(a, k)]) for k in KINDS}
                             for mid, a in sorted(expected.items())}
    out["expected_assignor_release"] = TASK_ASSIGNOR_RELEASE
    reasons = []
    if bounded:
        reasons.append("task counts bounded below by the tasks held for " + "; ".join(bounded[:3]))
    if late:
        reasons.append(f"tasks of epoch {gen} not known for {len(late)} member(s) (not reconciled yet)")
    else:
        out["mismatched_tasks"] = len(misplaced_tasks(expected, actual, process_of))
    out["expected_reason"] = "; ".join(reasons) or None
    return out
