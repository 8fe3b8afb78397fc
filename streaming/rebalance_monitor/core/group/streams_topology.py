"""A streams group's topology and assignment configs as its coordinator keeps them (KIP-1071): what its task
assignor is handed besides the members. `streams_topology` events (from `__consumer_offsets`: the topology record,
and the group metadata record's LastAssignmentConfigs) are kept in `g.streams_state`, which survives the group's
snapshot (codec key `ss`), and so are the tasks each member held in the group's last generation (the assignor's
previous assignment: `remember_tasks`).

    g.streams_state = {"epoch": topology epoch, "subtopologies": [{subtopology_id, source_topics,
                       repartition_source_topics, state_changelog_topics, source_topic_regex}, ...],
                       "standby": num.standby.replicas of the coordinator's last assignment,
                       "prev": {member id: {"process_id", "active", "standby", "warmup"}}}
"""
from __future__ import annotations

from ..events import StreamsTopology

TASK_KINDS = ("active", "standby", "warmup")


def on_streams_topology(g, ev: StreamsTopology, out: list) -> None:
    """Keep what the event says (a field it leaves out stays as it was)."""
    state = dict(g.streams_state or {})
    if ev.topology_epoch is not None:
        state["epoch"] = ev.topology_epoch
    if ev.subtopologies is not None:
        state["subtopologies"] = [
            {"subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
             "repartition_source_topics": dict(s.repartition_source_topics or {}),
             "state_changelog_topics": list(s.state_changelog_topics),
             "source_topic_regex": list(s.source_topic_regex)} for s in ev.subtopologies]
    if ev.num_standby_replicas is not None:
        state["standby"] = ev.num_standby_replicas
    g.streams_state = state


def remember_tasks(g, tasks: dict) -> None:
    """The tasks each member holds in the generation just recorded (a generation record's `tasks`): the previous
    assignment the next generation's is judged with."""
    state = dict(g.streams_state or {})
    state["prev"] = {mid: {"process_id": t.get("process_id"), **{k: t.get(k) or [] for k in TASK_KINDS}}
                     for mid, t in tasks.items()}
    g.streams_state = state
