"""ConsumerGroupDescribe (API key 69, KIP-848 "consumer" groups) on kafka-python's JSON-schema protocol machinery.

kafka-python 3.0.12 has no schema for API 69. The two messages here are kafka-python `ApiMessage`s built from this
package's own schemas (`ConsumerGroupDescribeRequest.json`, `ConsumerGroupDescribeResponse.json`: the wire
format of versions 0-1, written for this project), so kafka-python's connections send them and read the answer
like any API they know (defining the response class registers it for API key 69). Every version is flexible
(compact strings and arrays, tagged fields); version 1 (Kafka 4.0+) adds each member's MemberType. Kafka 3.9
answers version 0, Kafka 4.0 and 4.4 versions 0-1.

The answer is decoded strictly (`decode_response`): bytes that end early, run past a length, or leave bytes over
raise `DecodeError`, never an IndexError or a silently shortened string.
"""
from __future__ import annotations

import struct

from kafka.protocol.api_message import ApiMessage

from .descriptions import GroupDescription, MemberDescription, error_name, failed, sorted_partitions

API = "ConsumerGroupDescribe"
API_KEY = 69
MEMBER_TYPES = {0: "classic", 1: "consumer"}  # MemberType (v1+); -1 unknown


class DecodeError(ValueError):
    """Bytes that are not a well-formed answer of the version asked (a ValueError, as kafka-python's connection
    expects of a response that does not decode)."""


class ConsumerGroupDescribeRequest(ApiMessage, load_json=__package__):
    pass


class StrictResponse:
    """A response class of this package's schemas (first base, before ApiMessage) that kafka-python's connection
    decodes strictly: the body after the response header (`header` and `framed` False) goes through
    `strict_decode`, named by the class's `API`."""

    API = ""

    @classmethod
    def decode(cls, data, version=None, header=False, framed=False):
        if header or framed:
            return super().decode(data, version=version, header=header, framed=framed)
        if hasattr(data, "read"):
            data = data.read()
        return strict_decode(cls, cls.API, data, cls._class_version if version is None else version)


class ConsumerGroupDescribeResponse(StrictResponse, ApiMessage, load_json=__package__):
    API = API


def request(groups: list[str]) -> ConsumerGroupDescribeRequest:
    """The request for `groups`, without authorized operations (the version is the connection's choice)."""
    return ConsumerGroupDescribeRequest(group_ids=list(groups), include_authorized_operations=False)


def decode_response(data: bytes | bytearray | memoryview, version: int) -> ConsumerGroupDescribeResponse:
    """The response body (after the response header) of `version`; DecodeError where the bytes are not one."""
    return strict_decode(ConsumerGroupDescribeResponse, API, data, version)


def strict_decode(response_class, api: str, data: bytes | bytearray | memoryview, version: int):
    """A flexible-version `response_class` (one of this package's schemas) read from `data` at `version`, whole:
    DecodeError where the bytes end early, run past a length or leave bytes over, or the version is not one the
    schema has (shared by the describe APIs kafka-python lacks)."""
    low = (response_class.valid_versions or (0,))[0]
    if not isinstance(version, int) or not low <= version <= response_class.max_version:
        raise DecodeError(f"{api} response version {version!r}: this decoder reads versions "
                          f"{low}-{response_class.max_version}")
    view = memoryview(bytes(data))
    decode = response_class._struct.compiled_decode_from(
        version, compact=True, tagged=True, data_class=response_class)
    try:
        response, end = decode(view, 0)
    except (struct.error, IndexError, ValueError, TypeError, OverflowError, KeyError) as exc:
        # UnicodeDecodeError is a ValueError; a varint read past the end an IndexError
        raise DecodeError(f"{api} v{version} response of {len(view)} bytes does not decode: "
                          f"{type(exc).__name__}: {exc}") from None
    if end != len(view):
        what = "runs past its end" if end > len(view) else f"leaves {len(view) - end} bytes over"
        raise DecodeError(f"{api} v{version} response of {len(view)} bytes {what} (a length read as {end})")
    response._version = version
    return response


def described(group, version: int, coordinator: int | None, topic_names=None) -> GroupDescription:
    """One DescribedGroup of the answer as a GroupDescription. Topics are named by the answer's own TopicName;
    an empty name is looked up by topic id in `topic_names` ({id string: name}), else stays the id string."""
    error = error_name(group.error_code)
    if error is not None:
        return failed(group.group_id, error, group.error_message, api=API, api_version=version,
                      coordinator=coordinator)
    members = tuple(sorted((_member(m, version, topic_names or {}) for m in group.members),
                           key=lambda m: m.member_id))
    return GroupDescription(
        group=group.group_id, group_type="consumer", state=group.group_state, protocol_type="consumer",
        protocol=group.assignor_name, group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
        generation=group.group_epoch, members=members, error=None, error_message=group.error_message or None,
        api=API, api_version=version, coordinator=coordinator)


def _member(m, version: int, topic_names) -> MemberDescription:
    return MemberDescription(
        member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id, client_host=m.client_host,
        member_epoch=m.member_epoch, subscribed_topics=tuple(sorted(m.subscribed_topic_names or ())),
        assignment=partitions(m.assignment, topic_names),
        target_assignment=partitions(m.target_assignment, topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex, rack_id=m.rack_id,
        member_type=MEMBER_TYPES.get(m.member_type) if version >= 1 else None)


def partitions(assignment, topic_names) -> tuple:
    """An Assignment's (topic, partition) pairs, sorted, topics named as `topic_name` names them."""
    if assignment is None:
        return ()
    return sorted_partitions((topic_name(tp, topic_names), p)
                             for tp in assignment.topic_partitions or () for p in tp.partitions or ())


def topic_name(tp, topic_names) -> str:
    """A TopicPartitions entry's topic: its name, or its id looked up, or the id string."""
    if tp.topic_name:
        return tp.topic_name
    tid = str(tp.topic_id)
    return topic_names.get(tid, tid)


def unnamed_topic_ids(response) -> set[str]:
    """The topic ids of the answer that come without a name (Kafka's own answers name every topic)."""
    return {str(tp.topic_id) for g in response.groups for m in g.members
            for a in (m.assignment, m.target_assignment) if a is not None
            for tp in a.topic_partitions or () if not tp.topic_name}
