"""A streams group's topology and assignment configs as its coordinator keeps them (KIP-1071): what its task
assignor is handed besides the members. `streams_topology` events (from `__consumer_offsets`: the topology record,
and the group metadata record's LastAssignmentConfigs) are kept in `g.streams_state`, which survives the group's
snapshot (codec key `ss`), and so are the tasks the members held when the coordinator computed each epoch's target
(the assignor's previous assignment): each member's latest tasks (`note_tasks`, from its syncs), taken when the
group's epoch is bumped (`before_epoch`: the coordinator hands the assignor each member's current tasks), and the
tasks of the group's last generation (`remember_tasks`), for an epoch whose bump no input showed
(core/streams_expected.py reads them).

    g.streams_state = {"epoch": topology epoch, "subtopologies": [{subtopology_id, source_topics,
                       repartition_source_topics, state_changelog_topics, source_topic_regex}, ...],
                       "standby": num.standby.replicas of the coordinator's last assignment,
                       "standby_config": [num.standby.replicas, "group" or "broker"] as DescribeConfigs said it,
                       "held": {member id: tasks}, "before": {"<epoch>": {member id: tasks}},
                       "prev": {member id: tasks}}      # tasks: {"process_id", "active", "standby", "warmup"}
"""
from __future__ import annotations

from ..events import StreamsTopology
from ..vocabulary import Cause
from .held import cap_owners

TASK_KINDS = ("active", "standby", "warmup")
EPOCHS_KEPT = 3  # the epochs whose members' tasks before the bump are kept (a generation's record may come late)


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
        was = state.get("standby")
        if was is not None and was != ev.num_standby_replicas:  # (the epoch bumped with it: an operator's change)
            state["configs_changed"] = [was, ev.num_standby_replicas]
        state["standby"] = ev.num_standby_replicas
    g.streams_state = state


def bump_cause(g, metadata_hash: int | None, topology_epoch: int | None) -> tuple[str, str] | None:
    """(cause, reason) of a streams group's epoch bump that no member started, from what the group's records say:
    its assignment configurations changed (num.standby.replicas, `assignment_config_change`), or its topics'
    metadata (`metadata_change`, see `metadata_change`); None otherwise. Called once per bump."""
    state = g.streams_state
    configs = state.pop("configs_changed", None) if state else None
    changed = metadata_change(g, metadata_hash, topology_epoch) if metadata_hash is not None else None
    if g.rebalance is not None:
        return None
    if configs is not None:
        return Cause.ASSIGNMENT_CONFIG_CHANGE, f"assignment configurations changed: num.standby.replicas {configs[0]} " \
                                           f"-> {configs[1]}"
    if changed is not None:
        return Cause.METADATA_CHANGE, changed
    return None


def note_configured_standbys(g, configured: tuple[int, str] | None) -> None:
    """The group's num.standby.replicas as the broker's settings say it (group_config.streams_standbys): what the
    assignor is taken to use while no group metadata record has said the coordinator's own."""
    state = dict(g.streams_state or {})
    if configured is None:
        state.pop("standby_config", None)
    else:
        state["standby_config"] = list(configured)
    if state != (g.streams_state or {}):
        g.streams_state = state


def metadata_change(g, metadata_hash: int, topology_epoch: int | None) -> str | None:
    """A streams group's epoch bumped with `metadata_hash` (of its topics' partitions and racks, as the coordinator
    computes it): why, when the group's topics changed under an unchanged topology while nothing else had started a
    rebalance (a source topic's partitions added, an internal topic created); else None. Kept: the last hash and the topology epoch it went
    with (a topology change, or a member's join or leave, changes the hash too: theirs is the cause then)."""
    state = dict(g.streams_state or {})
    before, before_topology = state.get("hash"), state.get("hash_topology")
    topology = topology_epoch if topology_epoch is not None else state.get("epoch")
    state["hash"], state["hash_topology"] = metadata_hash, topology
    g.streams_state = state
    if not before or not metadata_hash or before == metadata_hash or g.rebalance is not None:
        return None
    if topology is None or before_topology != topology:
        return None
    return f"the metadata of the group's topics changed (a source topic's partitions added, or an internal topic " \
        f"created): hash {before} -> {metadata_hash} at topology epoch {topology}"


def _entry(t: dict) -> dict:
    return {"process_id": t.get("process_id"), **{k: t.get(k) or [] for k in TASK_KINDS}}


def note_tasks(g, member_id: str, process_id: str | None, tasks: dict) -> None:
    """A streams member's tasks as its latest sync (current assignment) gave them."""
    state = dict(g.streams_state or {})
    state["held"] = {**(state.get("held") or {}), member_id: _entry({"process_id": process_id, **tasks})}
    g.streams_state = state


def own_task_partitions(g, owner_key: str, active: list) -> None:
    """The input partitions of a member's active tasks are its own (`g.owners`): task (subtopology s, partition p)
    reads partition p of each of s's source and repartition topics, and commits their offsets under the group, so
    `__consumer_offsets` commits are signs of its life (causes.cause_of_departure). Needs the topology."""
    subs = {s["subtopology_id"]: [*s.get("source_topics", ()), *(s.get("repartition_source_topics") or {})]
            for s in (g.streams_state or {}).get("subtopologies") or ()}
    for sub, p in active:
        for topic in subs.get(sub, ()):
            g.owners[(topic, p)] = owner_key
    cap_owners(g)


def before_epoch(g, epoch: int) -> None:
    """The group's epoch is bumped to `epoch`: what its members hold now is what the coordinator hands the assignor
    (the first bump of an epoch counts: a second input's word on it changes nothing)."""
    state = g.streams_state
    if state is None or not state.get("held"):
        return
    before = dict(state.get("before") or {})
    if str(epoch) in before:
        return
    before[str(epoch)] = dict(state["held"])
    keep = sorted(before, key=int)[-EPOCHS_KEPT:]
    g.streams_state = {**state, "before": {k: before[k] for k in keep}}


def remember_tasks(g, tasks: dict) -> None:
    """The tasks each member holds in the generation just recorded (a generation record's `tasks`); the members no
    longer in the group are forgotten."""
    state = dict(g.streams_state or {})
    state["prev"] = {mid: _entry(t) for mid, t in tasks.items()}
    state["held"] = {mid: t for mid, t in (state.get("held") or {}).items() if mid in tasks}
    g.streams_state = state
