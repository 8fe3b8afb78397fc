"""ShareGroupDescribe (API key 77, KIP-932 share groups) on kafka-python's JSON-schema protocol machinery.

kafka-python has no schema for API 77. The messages here are built from this package's own schemas
(`ShareGroupDescribeRequest.json`, `ShareGroupDescribeResponse.json`: the wire format of version 1, written for this
project; version 0 was Kafka 4.0's early access, which 4.1 removed). Like API 69 (`consumer_group_describe.py`),
the answer is decoded strictly, and each group becomes a `GroupDescription`: its epochs, its assignor (`simple`),
and each member's epoch and current assignment. A share group has no target assignment in this answer, and a share
member no instance id (no static membership).
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from .consumer_group_describe import StrictResponse, DecodeError, partitions, strict_decode, topic_name  # noqa: F401 (re-exported)
from .descriptions import GroupDescription, MemberDescription, error_name, failed

API = "ShareGroupDescribe"
API_KEY = 77


class ShareGroupDescribeRequest(ApiMessage, load_json=__package__):
    pass


class ShareGroupDescribeResponse(StrictResponse, ApiMessage, load_json=__package__):
    API = API


def request(groups: list[str]) -> ShareGroupDescribeRequest:
    """The request for `groups`, without authorized operations."""
    return ShareGroupDescribeRequest(group_ids=list(groups), include_authorized_operations=False, min_version=1)


def decode_response(data: bytes | bytearray | memoryview, version: int) -> ShareGroupDescribeResponse:
    return strict_decode(ShareGroupDescribeResponse, API, data, version)


def described(group, version: int, coordinator: int | None, topic_names=None) -> GroupDescription:
    """One DescribedGroup of the answer as a GroupDescription (topics named as in API 69's answer)."""
    error = error_name(group.error_code)
    if error is not None:
        return failed(group.group_id, error, group.error_message, api=API, api_version=version,
                      coordinator=coordinator, group_type="share")
    names = topic_names or {}
    members = tuple(sorted((MemberDescription(
        member_id=m.member_id, group_instance_id=None, client_id=m.client_id, client_host=m.client_host,
        member_epoch=m.member_epoch, subscribed_topics=tuple(sorted(m.subscribed_topic_names or ())),
        assignment=partitions(m.assignment, names), target_assignment=None, rack_id=m.rack_id,
        member_type="share") for m in group.members), key=lambda m: m.member_id))
    return GroupDescription(
        group=group.group_id, group_type="share", state=group.group_state, protocol_type="share",
        protocol=group.assignor_name, group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
        generation=group.group_epoch, members=members, error=None, error_message=group.error_message or None,
        api=API, api_version=version, coordinator=coordinator)


def unnamed_topic_ids(response) -> set[str]:
    """The topic ids of the answer that come without a name."""
    return {str(tp.topic_id) for g in response.groups for m in g.members if m.assignment is not None
            for tp in m.assignment.topic_partitions or () if not tp.topic_name}
