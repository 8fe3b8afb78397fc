"""Test-only encoder of a streams group's `__consumer_offsets` values (KIP-1071), byte by byte from Apache Kafka
4.4's StreamsGroup*Value message definitions (kafka-group-coordinator-4.4.0.jar, common/message/). Shares no
code with the decoder. A task list is [(subtopology_id, [partitions])]; `kafka41` leaves out the tagged fields
4.4 added (4.1's layouts are otherwise the same)."""
from __future__ import annotations

import struct

from helpers.offsets_encoder import Writer


def _tasks(w: Writer, tasks, epochs: dict | None = None) -> None:
    w.count(len(tasks))
    for sub, parts in tasks:
        w.string(sub).count(len(parts))
        for p in parts:
            w.int32(p)
        tags = {}
        if epochs is not None and sub in epochs:  # AssignmentEpochs, tag 0 (4.4)
            t = Writer(True).count(len(epochs[sub]))
            for e in epochs[sub]:
                t.int32(e)
            tags[0] = t.done()
        w.tags(tags)


def _key_values(w: Writer, pairs) -> None:
    w.count(len(pairs))
    for k, v in pairs:
        w.string(k).string(v).tags()


def metadata_value(epoch: int, metadata_hash: int = 0, validated_topology_epoch: int | None = None,
                   configs=None, kafka41: bool = False) -> bytes:
    w = Writer(True).int16(0).int32(epoch).int64(metadata_hash)
    tags = {}
    if not kafka41:
        if validated_topology_epoch is not None:
            tags[0] = struct.pack(">i", validated_topology_epoch)
        if configs is not None:
            c = Writer(True)
            _key_values(c, configs)
            tags[1] = c.done()
    return w.tags(tags).done()


def member_metadata_value(client_id: str, client_host: str, process_id: str, *, instance_id: str | None = None,
                          rack_id: str | None = None, rebalance_timeout_ms: int = 300000, topology_epoch: int = 0,
                          endpoint: tuple[str, int] | None = None, client_tags=()) -> bytes:
    w = Writer(True).int16(0).string(instance_id).string(rack_id).string(client_id).string(client_host)
    w.int32(rebalance_timeout_ms).int32(topology_epoch).string(process_id)
    if endpoint is None:
        w.int8(-1)
    else:
        w.int8(1).string(endpoint[0]).raw(struct.pack(">H", endpoint[1])).tags()
    _key_values(w, list(client_tags))
    return w.tags().done()


def target_metadata_value(epoch: int, assignment_ts: int | None = None) -> bytes:
    tags = {} if assignment_ts is None else {0: struct.pack(">q", assignment_ts)}
    return Writer(True).int16(0).int32(epoch).tags(tags).done()


def target_member_value(active, standby=(), warmup=()) -> bytes:
    w = Writer(True).int16(0)
    for tasks in (active, standby, warmup):
        _tasks(w, list(tasks))
    return w.tags().done()


def current_assignment_value(member_epoch: int, previous_epoch: int, state: int, active, standby=(), warmup=(),
                             pending=((), (), ()), epochs: dict | None = None) -> bytes:
    """`pending`: the active, standby and warm-up tasks pending revocation; `epochs`: {subtopology: [epoch per
    partition]} of the active tasks (4.4's tagged AssignmentEpochs)."""
    w = Writer(True).int16(0).int32(member_epoch).int32(previous_epoch).int8(state)
    _tasks(w, list(active), epochs)
    _tasks(w, list(standby))
    _tasks(w, list(warmup))
    for tasks in pending:
        _tasks(w, list(tasks))
    return w.tags().done()


def _topic_info(w: Writer, name: str, partitions: int = 0, replication: int = 0, configs=()) -> None:
    w.string(name).int32(partitions).int16(replication)
    _key_values(w, list(configs))
    w.tags()


def topology_value(epoch: int, subtopologies) -> bytes:
    """subtopologies: [{"id", "sources", "changelogs": [names], "repartition_sources": [(name, partitions)],
    "repartition_sinks": [names], "copartition": [[source index, ...]]}]"""
    w = Writer(True).int16(0).int32(epoch).count(len(subtopologies))
    for s in subtopologies:
        w.string(s["id"])
        for names in (s.get("sources", []), s.get("regex", [])):
            w.count(len(names))
            for n in names:
                w.string(n)
        w.count(len(s.get("changelogs", [])))
        for n in s.get("changelogs", []):
            _topic_info(w, n, configs=[("cleanup.policy", "compact")])
        w.count(len(s.get("repartition_sinks", [])))
        for n in s.get("repartition_sinks", []):
            w.string(n)
        w.count(len(s.get("repartition_sources", [])))
        for n, parts in s.get("repartition_sources", []):
            _topic_info(w, n, parts, 1)
        w.count(len(s.get("copartition", [])))
        for idx in s.get("copartition", []):
            w.count(len(idx))
            for i in idx:
                w.int16(i)
            w.count(0).count(0).tags()
        w.tags()
    return w.tags().done()
