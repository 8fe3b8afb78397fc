"""A streams group's task assignment case as JSON (the oracle's and the tests' form) to :func:`sticky_task_assign`
and back:

    {"assignor": "sticky-task", "num_standby_replicas": 1,
     "subtopologies": [{"id": "0", "partitions": 4, "stateful": true}, ...],
     "members": [{"member_id": "m1", "process_id": "p1", "active": [["0", 1]], "standby": [], "warmup": [],
                  "task_offsets": [["0", 2, 1234]], "client_tags": {"az": "a"}, "rack": null,
                  "instance_id": null}, ...]}

answers ``{member: {"active": [[subtopology, partition], ...], "standby": [...], "warmup": [...]}}``, members and
tasks sorted (subtopology ids as Java compares strings).
"""
from __future__ import annotations

from typing import Any

from . import AssignmentInputError
from ._java import jkey
from .sticky_task import Subtopology, TaskMember, sticky_task_assign

__all__ = ["STICKY_TASK_CASE", "run_sticky_task_case"]

STICKY_TASK_CASE = "sticky-task"  # the "assignor" of such a case (the coordinator names the assignor "sticky")


def _pairs(raw, where: str) -> tuple:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise AssignmentInputError(f"{where} must be a list of [subtopology, partition]")
    out = []
    for t in raw:
        if not (isinstance(t, list) and len(t) == 2 and isinstance(t[0], str) and isinstance(t[1], int)
                and not isinstance(t[1], bool)):
            raise AssignmentInputError(f"{where}: {t!r} is not [subtopology (string), partition (integer)]")
        out.append((t[0], t[1]))
    return tuple(out)


def _member(m, i: int) -> TaskMember:
    if not isinstance(m, dict) or not isinstance(m.get("member_id"), str) or not isinstance(m.get("process_id"), str):
        raise AssignmentInputError(f"members[{i}] must be an object with string member_id and process_id")
    where = f"member {m['member_id']!r}"
    offsets = {}
    for t in m.get("task_offsets") or []:
        if not (isinstance(t, list) and len(t) == 3 and isinstance(t[0], str)
                and all(isinstance(x, int) and not isinstance(x, bool) for x in t[1:])):
            raise AssignmentInputError(f"{where}: task offset {t!r} is not [subtopology, partition, offset sum]")
        offsets[(t[0], t[1])] = t[2]
    tags = m.get("client_tags") or {}
    if not isinstance(tags, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in tags.items()):
        raise AssignmentInputError(f"{where}: client_tags must be an object of strings")
    for key in ("rack", "instance_id"):
        if m.get(key) is not None and not isinstance(m[key], str):
            raise AssignmentInputError(f"{where}: {key} must be a string or null")
    return TaskMember(m["member_id"], m["process_id"], _pairs(m.get("active"), f"{where}: active"),
                      _pairs(m.get("standby"), f"{where}: standby"), _pairs(m.get("warmup"), f"{where}: warmup"),
                      offsets, tags, m.get("rack"), m.get("instance_id"))


def _sorted(tasks) -> list:
    return [[s, p] for s, p in sorted(tasks, key=lambda t: (jkey(t[0]), t[1]))]


def run_sticky_task_case(case: Any) -> dict[str, dict[str, list]]:
    """The case's assignment as the oracle writes it; :class:`AssignmentInputError` (or its subclass
    KafkaAssignorFailure, where Kafka's assignor throws) on a bad case."""
    if not isinstance(case, dict) or case.get("assignor") != STICKY_TASK_CASE:
        raise AssignmentInputError(f"a task assignment case is an object with \"assignor\": \"{STICKY_TASK_CASE}\"")
    subs = case.get("subtopologies")
    if not isinstance(subs, list) or not all(isinstance(s, dict) for s in subs):
        raise AssignmentInputError("'subtopologies' must be a list of {id, partitions, stateful}")
    members = case.get("members")
    if not isinstance(members, list):
        raise AssignmentInputError("'members' must be a list of objects")
    standbys = case.get("num_standby_replicas", 0)
    result = sticky_task_assign(
        [Subtopology(s.get("id"), s.get("partitions"), bool(s.get("stateful", False))) for s in subs],
        [_member(m, i) for i, m in enumerate(members)], standbys)
    return {mid: {"active": _sorted(a.active), "standby": _sorted(a.standby), "warmup": _sorted(a.warmup)}
            for mid, a in sorted(result.items(), key=lambda kv: jkey(kv[0]))}
