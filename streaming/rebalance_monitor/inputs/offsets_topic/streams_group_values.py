"""The values of the streams group protocol's records (KIP-1071, Kafka Streams with `group.protocol=streams`):
group metadata (the group epoch), member metadata, the target assignment, each member's current assignment and
the group's topology, and the events each gives (`streams_group_events`). Every value is version 0 and flexible.

Apache Kafka 4.4's layouts are read (its StreamsGroup*Value message definitions, kafka-group-coordinator-4.4.0).
Kafka 4.1's (the protocol's early access) are the same but for tagged fields 4.4 added, which a reader skips:
StreamsGroupMetadataValue's ValidatedTopologyEpoch, LastAssignmentConfigs and the topology description epochs,
StreamsGroupTargetAssignmentMetadataValue's AssignmentTimestamp, TaskIds' AssignmentEpochs. Builds before 4.1
wrote StreamsGroupPartitionMetadata (key type 18, the layout of ConsumerGroupPartitionMetadataValue), read
best-effort for the topic names it gives. A value 4.4's layout does not read to its end is rejected naming the
field (`bad_length:<value>` when bytes are left over).

A task is a subtopology id and a partition: the events carry a member's tasks as `[subtopology_id, partition]`
pairs (`active_tasks`, `standby_tasks`, `warmup_tasks` of its sync), and its process id (its join's
`process_id`: the Kafka Streams client whose thread the member is), which is what a task assignor needs to
tell a task moved between processes from one moved between the threads of one process."""
from __future__ import annotations

from rebalance_monitor.core.vocabulary import STREAMS_ASSIGNOR, GroupProtocol

from .consumer_group_values import cg_partition_metadata_value, timed_target_metadata_value
from .wire import DecodeError, Reader, host_of, partition_index

STREAMS = GroupProtocol.STREAMS.value  # a streams group's members' group_protocol and its generations' type
# the coordinator's MemberState codes (org.apache.kafka.coordinator.group.streams.MemberState: from 1, where the
# consumer group's start from 0)
STREAMS_MEMBER_STATES = {1: "stable", 2: "unrevoked_tasks", 3: "unreleased_tasks", 127: "unknown"}
TASK_KINDS = ("active", "standby", "warmup")


def _str(r: Reader, p: str, nullable: bool = False) -> str | None:
    return r.string(p, compact=True, nullable=nullable)


def _key_values(r: Reader, p: str, nullable: bool = False) -> list | None:
    """[]KeyValue (a client tag, an assignment config, a topic config) -> [[key, value], ...]."""
    def kv(rr: Reader, pp: str):
        k = _str(rr, f"{pp}.key")
        v = _str(rr, f"{pp}.value")
        rr.tagged_fields(pp)
        return [k, v]
    return r.array(p, kv, compact=True, nullable=nullable, min_item_bytes=3)


def sgs_metadata_value(r: Reader) -> dict:
    p = "StreamsGroupMetadataValue"
    out = {"epoch": r.int32(f"{p}.epoch"), "metadata_hash": r.int64(f"{p}.metadata_hash")}
    out.update(r.tagged_fields(p, {
        0: ("validated_topology_epoch", lambda rr, pp: rr.int32(pp)),
        1: ("last_assignment_configs", lambda rr, pp: _key_values(rr, pp, nullable=True)),
    }))
    return out


def sgs_member_metadata_value(r: Reader) -> dict:
    p = "StreamsGroupMemberMetadataValue"
    out = {"instance_id": _str(r, f"{p}.instance_id", True), "rack_id": _str(r, f"{p}.rack_id", True),
           "client_id": _str(r, f"{p}.client_id"), "client_host": _str(r, f"{p}.client_host"),
           "rebalance_timeout_ms": r.int32(f"{p}.rebalance_timeout_ms"),
           "topology_epoch": r.int32(f"{p}.topology_epoch"), "process_id": _str(r, f"{p}.process_id")}
    ep = f"{p}.user_endpoint"
    if r.int8(ep) < 0:  # a nullable struct: -1 null, 1 present
        out["user_endpoint"] = None
    else:
        host = _str(r, f"{ep}.host")
        port = r.int16(f"{ep}.port") & 0xFFFF  # uint16
        r.tagged_fields(ep)
        out["user_endpoint"] = f"{host}:{port}"
    out["client_tags"] = _key_values(r, f"{p}.client_tags")
    r.tagged_fields(p)
    return out


def _task_ids(r: Reader, p: str, with_epochs: bool) -> list:
    """[]TaskIds -> [[subtopology_id, partition], ...] (protocol order kept)."""
    def entry(rr: Reader, pp: str):
        sub = _str(rr, f"{pp}.subtopology_id")
        parts = rr.array(f"{pp}.partitions", partition_index, compact=True, min_item_bytes=4)
        handlers = {0: ("assignment_epochs", lambda r3, p3: r3.array(
            p3, lambda r4, p4: r4.int32(p4), compact=True, nullable=True, min_item_bytes=4))} if with_epochs else None
        rr.tagged_fields(pp, handlers)
        return [[sub, x] for x in parts]
    out = []
    for chunk in r.array(p, entry, compact=True, min_item_bytes=3):
        out.extend(chunk)
    return out


def sgs_target_metadata_value(r: Reader) -> dict:
    return timed_target_metadata_value(r, "StreamsGroupTargetAssignmentMetadataValue")


def sgs_target_member_value(r: Reader) -> dict:
    p = "StreamsGroupTargetAssignmentMemberValue"
    out = {f"{k}_tasks": _task_ids(r, f"{p}.{k}_tasks", False) for k in TASK_KINDS}
    r.tagged_fields(p)
    return out


def sgs_current_assignment_value(r: Reader) -> dict:
    p = "StreamsGroupCurrentMemberAssignmentValue"
    out = {"member_epoch": r.int32(f"{p}.member_epoch"),
           "previous_member_epoch": r.int32(f"{p}.previous_member_epoch"), "state": r.int8(f"{p}.state")}
    for k in TASK_KINDS:
        out[f"{k}_tasks"] = _task_ids(r, f"{p}.{k}_tasks", True)
    for k in TASK_KINDS:
        out[f"{k}_tasks_pending_revocation"] = _task_ids(r, f"{p}.{k}_tasks_pending_revocation", True)
    r.tagged_fields(p)
    return out


def sgs_topology_value(r: Reader) -> dict:
    p = "StreamsGroupTopologyValue"

    def strings(rr: Reader, pp: str) -> list:
        return rr.array(pp, lambda r3, p3: _str(r3, p3), compact=True)

    def topic_info(rr: Reader, pp: str) -> dict:
        out = {"name": _str(rr, f"{pp}.name"), "partitions": rr.int32(f"{pp}.partitions"),
               "replication_factor": rr.int16(f"{pp}.replication_factor"),
               "topic_configs": _key_values(rr, f"{pp}.topic_configs")}
        rr.tagged_fields(pp)
        return out

    def copartition_group(rr: Reader, pp: str) -> dict:
        out = {f: rr.array(f"{pp}.{f}", lambda r3, p3: r3.int16(p3), compact=True, min_item_bytes=2)
               for f in ("source_topics", "source_topic_regex", "repartition_source_topics")}
        rr.tagged_fields(pp)
        return out

    def subtopology(rr: Reader, pp: str) -> dict:
        out = {"subtopology_id": _str(rr, f"{pp}.subtopology_id"),
               "source_topics": strings(rr, f"{pp}.source_topics"),
               "source_topic_regex": strings(rr, f"{pp}.source_topic_regex"),
               "state_changelog_topics": rr.array(f"{pp}.state_changelog_topics", topic_info, compact=True,
                                                  min_item_bytes=9),
               "repartition_sink_topics": strings(rr, f"{pp}.repartition_sink_topics"),
               "repartition_source_topics": rr.array(f"{pp}.repartition_source_topics", topic_info, compact=True,
                                                     min_item_bytes=9),
               "copartition_groups": rr.array(f"{pp}.copartition_groups", copartition_group, compact=True,
                                              min_item_bytes=4)}
        rr.tagged_fields(pp)
        return out

    out = {"epoch": r.int32(f"{p}.epoch"),
           "subtopologies": r.array(f"{p}.subtopologies", subtopology, compact=True, min_item_bytes=9)}
    r.tagged_fields(p)
    return out


def _whole(r: Reader, path: str, out: dict) -> dict:
    if r.remaining():
        raise DecodeError(f"bad_length:{path}", f"{r.remaining()} bytes left over")
    return out


def _standby_replicas(configs: list | None) -> int | None:
    """`num.standby.replicas` of a group metadata record's LastAssignmentConfigs; None when absent or not a number."""
    for k, v in configs or ():
        if k == "num.standby.replicas":
            return int(v) if v.isdigit() else None
    return None


def _subtopology(s: dict) -> dict:
    """A decoded subtopology as the `streams_topology` event carries it: what its task count and state depend on."""
    return {"subtopology_id": s["subtopology_id"], "source_topics": s["source_topics"],
            "repartition_source_topics": {t["name"]: max(t["partitions"], 0) for t in s["repartition_source_topics"]},
            "state_changelog_topics": [t["name"] for t in s["state_changelog_topics"]],
            "source_topic_regex": s["source_topic_regex"]}


def streams_group_events(name: str, k: dict, vr: Reader, at, topic_names: dict | None, event) -> list[dict]:
    """The events of a streams group's record (KIP-1071), as its consumer-group (KIP-848) twin gives them: the group
    epoch's bump starts a rebalance, a member's metadata is its join (`group_protocol` `streams`, assignor
    `sticky`), the target assignment's epoch completes the generation (protocol `sticky`, type `streams`), a
    member's current assignment is its sync, carrying its tasks (the `assignment` of topic partitions is empty:
    a task names a subtopology, not a topic). `at()` is the record's usable time; `event` builds an event."""
    group = k["group"]
    value = name + "Value"
    if name == "StreamsGroupMetadata":
        v = _whole(vr, value, sgs_metadata_value(vr))
        epoch = v["epoch"]
        out = [event("rebalance_started", at(), group, generation=max(epoch - 1, 0),
                     reason=f"streams group epoch bumped to {epoch}", metadata_hash=v["metadata_hash"])]
        if v.get("validated_topology_epoch") is not None:  # (a tagged field: 4.1 wrote none)
            out[0]["topology_epoch"] = v["validated_topology_epoch"]
        standby = _standby_replicas(v.get("last_assignment_configs"))
        if standby is not None:  # (4.4's records: the configs the coordinator's last assignment used; before the
            # bump, which a change of them caused)
            out.insert(0, event("streams_topology", at(), group, num_standby_replicas=standby))
        return out
    if name == "StreamsGroupMemberMetadata":
        v = _whole(vr, value, sgs_member_metadata_value(vr))
        ev = event("join", at(), group, member_id=k["member_id"], group_instance_id=v["instance_id"],
                   client_id=v["client_id"], host=host_of(v["client_host"]), protocols=[STREAMS_ASSIGNOR],
                   topics=[], rebalance_timeout_ms=v["rebalance_timeout_ms"], group_protocol=STREAMS,
                   process_id=v["process_id"], topology_epoch=v["topology_epoch"],
                   client_tags={kk: vv for kk, vv in v["client_tags"]})
        if v["rack_id"] is not None:
            ev["rack"] = v["rack_id"]
        return [ev]
    if name == "StreamsGroupTargetAssignmentMetadata":
        v = _whole(vr, value, sgs_target_metadata_value(vr))
        return [event("generation_completed", at(), group, generation=v["assignment_epoch"],
                      protocol=STREAMS_ASSIGNOR, leader=None, protocol_type=STREAMS)]
    if name == "StreamsGroupTargetAssignmentMember":
        _whole(vr, value, sgs_target_member_value(vr))
        return []
    if name == "StreamsGroupCurrentMemberAssignment":
        v = _whole(vr, value, sgs_current_assignment_value(vr))
        return [event("sync", at(), group, member_id=k["member_id"], generation=v["member_epoch"],
                      protocol=STREAMS_ASSIGNOR, leader=None, assignment=[],
                      member_state=STREAMS_MEMBER_STATES.get(v["state"], "unknown"),
                      active_tasks=v["active_tasks"], standby_tasks=v["standby_tasks"],
                      warmup_tasks=v["warmup_tasks"])]
    if name == "StreamsGroupTopology":
        v = _whole(vr, value, sgs_topology_value(vr))
        return [event("streams_topology", at(), group, topology_epoch=v["epoch"],
                      subtopologies=[_subtopology(s) for s in v["subtopologies"]])]
    # StreamsGroupPartitionMetadata (builds before 4.1): ConsumerGroupPartitionMetadataValue's layout
    v = _whole(vr, value, cg_partition_metadata_value(vr, value))
    if topic_names is not None:
        for t in v["topics"]:
            topic_names[t["topic_id"]] = t["topic_name"]
    return []
