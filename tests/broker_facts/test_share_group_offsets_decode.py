"""DescribeShareGroupOffsets' (API 90) decoder on bytes written by hand here after Kafka 4.4's message definition
(clients/src/main/resources/common/message/DescribeShareGroupOffsetsResponse.json: flexible from version 0, Lag
from version 1), not by the project's schema, and on bytes that are not answers: cut short, too long, a version it
does not read. No broker: these run in `make test-fast` (the real broker's answer: tests/inputs/
test_share_group_lag_on_kafka.py)."""
from __future__ import annotations

import struct
import uuid

import pytest

from rebalance_monitor.broker_facts import share_group_offsets as sgo
from rebalance_monitor.broker_facts.consumer_group_describe import DecodeError

TOPIC_ID = uuid.UUID("6f1c2a3b-0000-4000-8000-00000000002a")


def uvarint(n: int) -> bytes:
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def cstring(s: str | None) -> bytes:  # compact (nullable) string: length + 1, 0 for null
    if s is None:
        return uvarint(0)
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def carray(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = uvarint(0)


def partition(version: int, index: int, start: int, epoch: int, lag: int, error: int = 0,
              message: str | None = None) -> bytes:
    body = struct.pack(">iqi", index, start, epoch)
    if version >= 1:
        body += struct.pack(">q", lag)
    return body + struct.pack(">h", error) + cstring(message) + NO_TAGS


def answer(version: int) -> bytes:
    parts = [partition(version, 0, 5, 0, 7), partition(version, 1, -1, 0, -1),
             partition(version, 2, 0, 0, -1, error=3, message="This server does not host this topic-partition.")]
    topic = cstring("share-t") + TOPIC_ID.bytes + carray(parts) + NO_TAGS
    g1 = cstring("gshare") + carray([topic]) + struct.pack(">h", 0) + cstring(None) + NO_TAGS
    g2 = cstring("nope") + carray([]) + struct.pack(">h", 69) + cstring("Group nope not found.") + NO_TAGS
    return struct.pack(">i", 0) + carray([g1, g2]) + NO_TAGS


@pytest.mark.parametrize("version", [0, 1])
def test_an_answer_decodes_to_start_offsets_and_the_brokers_lag(version):
    response = sgo.decode_response(answer(version), version)
    got = {g.group_id: sgo.group_offsets(g, version) for g in response.groups}
    g = got["gshare"]
    assert g.error is None and g.api_version == version
    # v1 carries Lag (KIP-1226); v0 has none, and -1 (not computed) is no lag either
    assert g.partitions == {("share-t", 0): sgo.SharePartitionOffset(5, 7 if version >= 1 else None),
                            ("share-t", 1): sgo.SharePartitionOffset(-1, None)}
    assert g.partition_errors == {("share-t", 2): "UNKNOWN_TOPIC_OR_PARTITION"}
    nope = got["nope"]
    assert (nope.error, nope.error_message, nope.partitions) == ("GROUP_ID_NOT_FOUND", "Group nope not found.", {})


@pytest.mark.parametrize("version", [0, 1])
def test_every_truncation_raises_decode_error(version):
    data = answer(version)
    for n in range(len(data)):
        with pytest.raises(DecodeError):
            sgo.decode_response(data[:n], version)


@pytest.mark.parametrize("version", [0, 1])
def test_bytes_left_over_raise_decode_error(version):
    with pytest.raises(DecodeError, match="bytes over"):
        sgo.decode_response(answer(version) + b"\x00", version)


def test_a_v0_answer_is_not_a_v1_answer():
    with pytest.raises(DecodeError):
        sgo.decode_response(answer(0), 1)


@pytest.mark.parametrize("version", [-1, 2, None])
def test_a_version_it_does_not_read_is_refused(version):
    with pytest.raises(DecodeError, match="reads versions 0-1"):
        sgo.decode_response(answer(1), version)


def test_kafka_pythons_connection_decodes_through_the_strict_decoder():
    response = sgo.DescribeShareGroupOffsetsResponse.decode(answer(1), version=1)
    assert response.groups[0].topics[0].partitions[0].lag == 7
    with pytest.raises(DecodeError):
        sgo.DescribeShareGroupOffsetsResponse.decode(answer(1)[:-3], version=1)


def test_the_request_asks_every_partition_of_each_group():
    request = sgo.request(["a", "b"])
    assert [(g.group_id, g.topics) for g in request.groups] == [("a", None), ("b", None)]
    assert sgo.DescribeShareGroupOffsetsRequest.API_KEY == 90
