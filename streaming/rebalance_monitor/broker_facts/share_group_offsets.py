"""DescribeShareGroupOffsets (API key 90, KIP-932 share groups) on kafka-python's JSON-schema protocol machinery.

A share group commits no offsets: its progress on a partition is the share-partition state its share coordinator
keeps (in ``__share_group_state``): the share-partition start offset (every record below it is delivered and
acknowledged, or archived) and the records at or above it already acknowledged. Admin's ``listShareGroupOffsets``
asks it with this API, at the group's coordinator, and so does ``kafka-share-groups --describe --offsets``.

kafka-python has no schema for API 90. The messages here are built from this package's own schemas
(``DescribeShareGroupOffsetsRequest.json``, ``DescribeShareGroupOffsetsResponse.json``: the wire format of
versions 0-1, written for this project). Every version is flexible. Version 0 (Kafka 4.1) gives each partition's
StartOffset and LeaderEpoch; version 1 (KIP-1226, Kafka 4.2+; Kafka 4.4 answers 0-1) adds Lag, which Kafka 4.4's
group coordinator computes as ``latest offset - StartOffset - deliveryCompleteCount`` (the records at or above
the start offset that are not yet acknowledged: available, or acquired and in flight), and sets to -1 where it
cannot (the partition's state not yet initialised or read, or its end offset not found).

`share_offsets` asks it for a list of groups and turns each partition's answer into a `SharePartitionOffset`:
the start offset, and the lag where the broker gives one. The answer is decoded strictly (``strict_decode``).
"""
from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from kafka.protocol.api_message import ApiMessage

from .consumer_group_describe import DecodeError, StrictResponse, strict_decode
from .descriptions import GroupDescription, error_name
from .describe import BrokerUnreachable, _find_coordinators, _manager_of, _send, _supports

API = "DescribeShareGroupOffsets"
API_KEY = 90

__all__ = ["BrokerUnreachable", "DecodeError", "SharePartitionOffset", "ShareGroupOffsets", "share_offsets"]


class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=__package__):
    pass


class DescribeShareGroupOffsetsResponse(StrictResponse, ApiMessage, load_json=__package__):
    API = API


class SharePartitionOffset(NamedTuple):
    """One share-partition of a group: its start offset (-1: not initialised) and the broker's lag (None: the
    broker gave none: version 0, or -1)."""
    start_offset: int
    lag: int | None


class ShareGroupOffsets(NamedTuple):
    """A group's answer: ``{(topic, partition): SharePartitionOffset}`` of its partitions without an error, or the
    group's error (its Kafka name) and message; ``partition_errors`` {(topic, partition): error name}."""
    group: str
    partitions: dict
    error: str | None = None
    error_message: str | None = None
    partition_errors: dict | None = None
    api_version: int | None = None


def request(groups: list[str]) -> DescribeShareGroupOffsetsRequest:
    """The request for every partition (Topics null) of each of `groups`; the version is the connection's choice."""
    return DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=g, topics=None)
        for g in groups])


def decode_response(data: bytes | bytearray | memoryview, version: int) -> DescribeShareGroupOffsetsResponse:
    """The response body (after the response header) of `version`; DecodeError where the bytes are not one."""
    return strict_decode(DescribeShareGroupOffsetsResponse, API, data, version)


def group_offsets(group, version: int) -> ShareGroupOffsets:
    """One group of the answer as ShareGroupOffsets."""
    error = error_name(group.error_code)
    if error is not None:
        return ShareGroupOffsets(group.group_id, {}, error, group.error_message, api_version=version)
    parts, errors = {}, {}
    for topic in group.topics or ():
        name = topic.topic_name or str(topic.topic_id)
        for p in topic.partitions or ():
            key = (name, p.partition_index)
            perr = error_name(p.error_code)
            if perr is not None:
                errors[key] = perr
                continue
            lag = getattr(p, "lag", -1) if version >= 1 else -1
            parts[key] = SharePartitionOffset(p.start_offset, lag if isinstance(lag, int) and lag >= 0 else None)
    return ShareGroupOffsets(group.group_id, parts, partition_errors=errors or None, api_version=version)


def supported(client) -> bool:
    """Whether the brokers answer API 90 (Kafka 4.1+; its Lag from version 1, Kafka 4.2+)."""
    return _supports(_manager_of(client), DescribeShareGroupOffsetsRequest)


def share_offsets(client, groups: list[str]) -> dict[str, ShareGroupOffsets]:
    """{group: ShareGroupOffsets} of `groups` (duplicates asked once), each asked at its coordinator through
    `client`, a kafka-python KafkaAdminClient. A broker without API 90 gives each group UNSUPPORTED_VERSION.
    Raises BrokerUnreachable and DecodeError as `describe.describe_groups` does; a broker's error for one group
    is that group's `error`."""
    manager = _manager_of(client)
    wanted = list(dict.fromkeys(groups))
    if not wanted:
        return {}
    if not _supports(manager, DescribeShareGroupOffsetsRequest):
        return {g: ShareGroupOffsets(g, {}, "UNSUPPORTED_VERSION", "the brokers have no API 90") for g in wanted}
    out: dict[str, ShareGroupOffsets] = {}
    by_node: dict[int, list[str]] = defaultdict(list)
    for group, found in _find_coordinators(manager, wanted).items():
        if isinstance(found, GroupDescription):  # FindCoordinator's error
            out[group] = ShareGroupOffsets(group, {}, found.error, found.error_message)
        else:
            by_node[found].append(group)
    for node, node_groups in by_node.items():
        req = request(node_groups)
        response = _send(manager, req, node)
        for g in response.groups:
            out[g.group_id] = group_offsets(g, req.API_VERSION)
    return {g: out.get(g) or ShareGroupOffsets(g, {}, "UNKNOWN_SERVER_ERROR", "the broker's answer did not name "
                                               "the group") for g in wanted}
