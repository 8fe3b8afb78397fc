"""DescribeGroups (API key 15, classic groups) answers as GroupDescriptions, through kafka-python's own messages.

A member's metadata and assignment are opaque bytes to the coordinator; where the group's protocol type is
"consumer" they are the consumer protocol's Subscription and Assignment (ConsumerProtocolSubscription,
ConsumerProtocolAssignment: a version, then topics and partitions), decoded here. A member whose bytes do not
decode keeps its other fields and says why in `decode_error`; the group's description stays whole.

DescribeGroups carries no generation id: a classic description's `generation` is None. Version 6 (Kafka 4.0+)
answers GROUP_ID_NOT_FOUND for a group the coordinator does not have; versions 0-5 (Kafka 3.9) answer it as a group
in state "Dead" without members and without an error.
"""
from __future__ import annotations

import struct

from .descriptions import GroupDescription, MemberDescription, error_name, failed, sorted_partitions

API = "DescribeGroups"
API_KEY = 15
CONSUMER_PROTOCOL = "consumer"


def request(groups: list[str]):
    """kafka-python's DescribeGroups request for `groups` (the version is the connection's choice)."""
    from kafka.protocol.admin import DescribeGroupsRequest

    return DescribeGroupsRequest(groups=list(groups), include_authorized_operations=False)


def described(group, version: int, coordinator: int | None, group_type: str | None = None) -> GroupDescription:
    """One group of a DescribeGroups answer as a GroupDescription (`group_type` as ListGroups named it)."""
    error = error_name(group.error_code)
    message = getattr(group, "error_message", None) or None  # v6+
    if error is not None:
        return failed(group.group_id, error, message, api=API, api_version=version, coordinator=coordinator,
                      group_type=group_type)
    consumer = group.protocol_type == CONSUMER_PROTOCOL
    members = tuple(sorted((_member(m, consumer) for m in group.members), key=lambda m: m.member_id))
    return GroupDescription(
        group=group.group_id, group_type=group_type, state=group.group_state, protocol_type=group.protocol_type,
        protocol=group.protocol_data, group_epoch=None, assignment_epoch=None, generation=None, members=members,
        error=None, error_message=message, api=API, api_version=version, coordinator=coordinator)


def _member(m, consumer: bool) -> MemberDescription:
    topics = assignment = rack = problem = None
    if consumer:
        try:
            topics, rack = decode_subscription(m.member_metadata)
            assignment = decode_assignment(m.member_assignment)
        except MemberBytesError as exc:
            problem = str(exc)
    return MemberDescription(
        member_id=m.member_id, group_instance_id=getattr(m, "group_instance_id", None), client_id=m.client_id,
        client_host=m.client_host, member_epoch=None, subscribed_topics=topics, assignment=assignment,
        target_assignment=None, rack_id=rack, decode_error=problem)


class MemberBytesError(ValueError):
    """A member's metadata or assignment that is not the consumer protocol's."""


def decode_subscription(data: bytes | None) -> tuple[tuple[str, ...] | None, str | None]:
    """(sorted subscribed topics, rack id) of a consumer protocol Subscription; (None, None) for no bytes."""
    if not data:
        return None, None
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    sub = _decode(ConsumerProtocolSubscription, data, "subscription")
    return tuple(sorted(sub.topics or ())), getattr(sub, "rack_id", None)


def decode_assignment(data: bytes | None):
    """The sorted (topic, partition) pairs of a consumer protocol Assignment; () for no bytes (a member the
    coordinator has not given an assignment yet)."""
    if not data:
        return ()
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    got = _decode(ConsumerProtocolAssignment, data, "assignment")
    return sorted_partitions((tp.topic, p) for tp in got.assigned_partitions or () for p in tp.partitions or ())


def _decode(cls, data: bytes, what: str):
    try:
        return cls.decode(bytes(data))
    except (struct.error, ValueError, IndexError, TypeError, OverflowError, EOFError) as exc:
        raise MemberBytesError(f"consumer protocol {what} of {len(data)} bytes does not decode: "
                               f"{type(exc).__name__}: {exc}") from None
