"""StreamsGroupDescribe (API key 89, KIP-1071 streams groups) on kafka-python's JSON-schema protocol machinery.

kafka-python has no schema for API 89. The messages here are built from this package's own schemas
(`StreamsGroupDescribeRequest.json`, `StreamsGroupDescribeResponse.json`: the wire format of versions 0-1, written
for this project from Apache Kafka 4.4's message definitions). Version 0 is Kafka 4.1's; version 1 (Kafka 4.4,
KIP-1331 and KIP-1357) asks whether to include the topology's description (never asked here) and answers the
description's status and the group's task assignor. Like API 69 (`consumer_group_describe.py`), the answer is
decoded strictly, and each group becomes a `GroupDescription`: its epochs, its topology's epoch, its assignor
(version 1), and each member's epoch, process, topology epoch and tasks, current and target. A task is a
subtopology id and a partition; a streams member owns no topic partitions in this answer (`assignment` None).
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from .consumer_group_describe import StrictResponse, DecodeError, strict_decode  # noqa: F401 (re-exported)
from .descriptions import GroupDescription, MemberDescription, error_name, failed

API = "StreamsGroupDescribe"
API_KEY = 89
TASK_KINDS = ("active", "standby", "warmup")
# TopologyDescriptionStatus (v1+): what the answer says of the topology's description
TOPOLOGY_DESCRIPTION_STATUS = {0: "not_requested", 1: "not_stored", 2: "error", 3: "available"}


class StreamsGroupDescribeRequest(ApiMessage, load_json=__package__):
    pass


class StreamsGroupDescribeResponse(StrictResponse, ApiMessage, load_json=__package__):
    API = API


def request(groups: list[str]) -> StreamsGroupDescribeRequest:
    """The request for `groups`, without authorized operations or the topology's description (the version is the
    connection's choice)."""
    return StreamsGroupDescribeRequest(group_ids=list(groups), include_authorized_operations=False,
                                       include_topology_description=False)


def decode_response(data: bytes | bytearray | memoryview, version: int) -> StreamsGroupDescribeResponse:
    """The response body (after the response header) of `version`; DecodeError where the bytes are not one."""
    return strict_decode(StreamsGroupDescribeResponse, API, data, version)


def described(group, version: int, coordinator: int | None) -> GroupDescription:
    """One DescribedGroup of the answer as a GroupDescription (group_type "streams", generation its group epoch)."""
    error = error_name(group.error_code)
    if error is not None:
        return failed(group.group_id, error, group.error_message, api=API, api_version=version,
                      coordinator=coordinator, group_type="streams")
    members = tuple(sorted((_member(m) for m in group.members), key=lambda m: m.member_id))
    return GroupDescription(
        group=group.group_id, group_type="streams", state=group.group_state, protocol_type="streams",
        protocol=(group.assignor_name or None) if version >= 1 else None, group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch, generation=group.group_epoch, members=members, error=None,
        error_message=group.error_message or None, api=API, api_version=version, coordinator=coordinator,
        topology_epoch=None if group.topology is None else group.topology.epoch)


def _member(m) -> MemberDescription:
    current, target = tasks(m.assignment), tasks(m.target_assignment)
    return MemberDescription(
        member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id, client_host=m.client_host,
        member_epoch=m.member_epoch, subscribed_topics=None, assignment=None, target_assignment=None,
        rack_id=m.rack_id, member_type="classic" if m.is_classic else "streams", process_id=m.process_id,
        topology_epoch=m.topology_epoch, active_tasks=current[0], standby_tasks=current[1],
        warmup_tasks=current[2], target_active_tasks=target[0], target_standby_tasks=target[1],
        target_warmup_tasks=target[2])


def tasks(assignment) -> tuple:
    """An Assignment's (active, standby, warm-up) tasks, each sorted (subtopology id, partition) pairs; three
    Nones for an assignment the answer left out."""
    if assignment is None:
        return None, None, None
    return tuple(task_pairs(getattr(assignment, f"{kind}_tasks")) for kind in TASK_KINDS)


def task_pairs(task_ids) -> tuple:
    """[]TaskIds as sorted (subtopology id, partition) pairs."""
    return tuple(sorted((str(t.subtopology_id), int(p)) for t in task_ids or () for p in t.partitions or ()))
