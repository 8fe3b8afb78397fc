"""The describe answers' decoders on bytes real brokers sent (data/answers-*.json, recorded with
tests/helpers/raw_answer.py from Kafka 4.4.0 and 3.9.2: see each file's `recorded`), and on bytes that are not
answers: cut short, too long, garbage. No broker: these run in `make test-fast`."""
from __future__ import annotations

import dataclasses
import io
import json
import random
import uuid
from pathlib import Path

import pytest

from rebalance_monitor.broker_facts import classic_describe as cd
from rebalance_monitor.broker_facts import consumer_group_describe as cgd
from rebalance_monitor.broker_facts.consumer_group_describe import DecodeError
from rebalance_monitor.broker_facts.descriptions import error_name

DATA = Path(__file__).parent / "data"


def answers(kafka: str) -> dict[tuple[str, int], bytes]:
    doc = json.loads((DATA / f"answers-{kafka}.json").read_text())
    return {(a["api"], a["version"]): bytes.fromhex(a["body"]) for a in doc["answers"]}


def described_69(body: bytes, version: int, names=None) -> dict:
    response = cgd.decode_response(body, version)
    return {g.group_id: cgd.described(g, version, 1, names) for g in response.groups}


@pytest.mark.parametrize("version", [0, 1])
def test_a_kip848_group_as_kafka_4_4_answered(version):
    got = described_69(answers("4.4.0")[("ConsumerGroupDescribe", version)], version)
    g = got["g848"]
    assert (g.group_type, g.state, g.protocol_type, g.protocol) == ("consumer", "Stable", "consumer", "uniform")
    assert (g.group_epoch, g.assignment_epoch, g.generation, g.error) == (3, 3, 3, None)
    assert (g.api, g.api_version, g.coordinator) == ("ConsumerGroupDescribe", version, 1)
    k1, k0 = g.members  # sorted by member id
    assert (k0.client_id, k0.member_id, k0.group_instance_id) == ("k0", "iqhciALEQXWgaZAsBtCZkA", None)
    assert (k1.client_id, k1.member_id, k1.group_instance_id) == ("k1", "3+5NHoIgT+ShTVYXozgRGg", "static-1")
    assert k0.assignment == k0.target_assignment == (("orders", 1), ("orders", 2), ("orders", 3))
    assert k1.assignment == k1.target_assignment == (("audit", 0), ("audit", 1), ("orders", 0))
    for m in g.members:
        assert (m.member_epoch, m.client_host, m.subscribed_topics) == (3, "/127.0.0.1", ("audit", "orders"))
        assert m.member_type == ("consumer" if version >= 1 else None)  # MemberType is v1+
        assert m.subscribed_topic_regex == ""  # as the broker sends it: empty, not null
    # a classic group and no group: API 69 answers GROUP_ID_NOT_FOUND for both, with the broker's own words
    assert (got["gclassic"].error, got["gclassic"].error_message) == (
        "GROUP_ID_NOT_FOUND", "Group gclassic is not a consumer group.")
    assert (got["nope"].error, got["nope"].members, got["nope"].state) == ("GROUP_ID_NOT_FOUND", (), None)


def test_kafka_3_9_answers_api_69_unsupported_for_every_group():
    """3.9.2 lists API 69 (v0) in ApiVersions, but without the new coordinator enabled it answers each group
    UNSUPPORTED_VERSION: describe_groups then asks DescribeGroups."""
    got = described_69(answers("3.9.2")[("ConsumerGroupDescribe", 0)], 0)
    assert {g: d.error for g, d in got.items()} == dict.fromkeys(["g848", "gclassic", "nope"], "UNSUPPORTED_VERSION")


def test_a_description_is_plain_values():
    g = described_69(answers("4.4.0")[("ConsumerGroupDescribe", 1)], 1)["g848"]
    as_json = json.loads(json.dumps(dataclasses.asdict(g)))
    assert as_json["members"][0]["assignment"] == [["audit", 0], ["audit", 1], ["orders", 0]]
    assert hash(g)  # frozen, tuples all the way down


@pytest.mark.parametrize("kafka,version", [("4.4.0", 0), ("4.4.0", 1), ("3.9.2", 0)])
def test_every_cut_short_answer_is_a_decode_error(kafka, version):
    body = answers(kafka)[("ConsumerGroupDescribe", version)]
    for n in range(len(body)):
        with pytest.raises(DecodeError, match=f"ConsumerGroupDescribe v{version} response of {n} bytes"):
            cgd.decode_response(body[:n], version)


def test_bytes_left_over_are_a_decode_error():
    body = answers("4.4.0")[("ConsumerGroupDescribe", 1)]
    with pytest.raises(DecodeError, match="leaves 1 bytes over"):
        cgd.decode_response(body + b"\x00", 1)
    with pytest.raises(DecodeError):  # v1's MemberType read as the next member's first byte
        cgd.decode_response(body, 0)


def test_garbage_is_a_decode_error_or_an_answer_never_another_exception():
    rnd = random.Random(848)
    body = answers("4.4.0")[("ConsumerGroupDescribe", 1)]
    decoded = 0
    for i in range(3000):
        if i % 2:
            data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(64)))
        else:  # the real answer with a few bytes changed: lengths and counts that lie
            data = bytearray(body)
            for _ in range(rnd.randrange(1, 4)):
                data[rnd.randrange(len(data))] = rnd.randrange(256)
        try:
            cgd.decode_response(bytes(data), 1)
            decoded += 1
        except DecodeError:
            pass
    assert decoded < 3000


@pytest.mark.parametrize("data,why", [
    (b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff\x0f", "a group count of 2^32-2"),
    (b"\x00\x00\x00\x00\x02\x00\x00\x00\x80", "a varint that never ends"),
    (b"\x00\x00\x00\x00\x02\x00\x00\x00\x03\xff\xfe", "a group id that is not UTF-8"),
])
def test_lengths_that_lie_are_decode_errors(data, why):
    with pytest.raises(DecodeError):
        cgd.decode_response(data, 1)


def test_a_version_the_decoder_does_not_read_is_a_decode_error():
    with pytest.raises(DecodeError, match="reads versions 0-1"):
        cgd.decode_response(b"", 2)


def test_the_connection_path_decodes_strictly():
    """kafka-python's connection calls the registered response class's decode on the body after the header; a
    DecodeError is a ValueError, which its parser turns into KafkaProtocolError."""
    from kafka.protocol.api_header import RequestHeader

    body = answers("4.4.0")[("ConsumerGroupDescribe", 1)]
    response_class = RequestHeader(request_api_key=69, request_api_version=1, correlation_id=1,
                                   client_id="t").get_response_class()
    assert response_class.decode(io.BytesIO(body)).groups[0].group_id == "g848"
    with pytest.raises(ValueError):
        response_class.decode(io.BytesIO(body[:-1]))


def test_a_topic_without_a_name_is_named_by_id():
    tid = uuid.uuid4()
    R = cgd.ConsumerGroupDescribeResponse
    G = R.DescribedGroup
    part = G.Member.Assignment.TopicPartitions(topic_id=tid, topic_name="", partitions=[2, 0])
    member = G.Member(member_id="m", instance_id=None, rack_id=None, member_epoch=5, client_id="c", client_host="h",
                      subscribed_topic_names=["t"], subscribed_topic_regex=None,
                      assignment=G.Member.Assignment(topic_partitions=[part]),
                      target_assignment=G.Member.Assignment(topic_partitions=[part]), member_type=1)
    group = G(error_code=0, error_message=None, group_id="g", group_state="Stable", group_epoch=5,
              assignment_epoch=5, assignor_name="range", members=[member], authorized_operations=0)
    body = R(throttle_time_ms=0, groups=[group]).encode(version=1)
    response = cgd.decode_response(body, 1)
    assert cgd.unnamed_topic_ids(response) == {str(tid)}
    named = cgd.described(response.groups[0], 1, 1, {str(tid): "t"})
    assert named.members[0].assignment == named.members[0].target_assignment == (("t", 0), ("t", 2))
    unnamed = cgd.described(response.groups[0], 1, 1)
    assert unnamed.members[0].assignment == ((str(tid), 0), (str(tid), 2))  # the id, said as Kafka writes it


def classic_groups(kafka: str, version: int) -> dict:
    from kafka.protocol.admin import DescribeGroupsResponse

    response = DescribeGroupsResponse.decode(answers(kafka)[("DescribeGroups", version)], version=version)
    return {g.group_id: cd.described(g, version, 1, "classic" if g.group_id == "gclassic" else None)
            for g in response.groups}


@pytest.mark.parametrize("kafka,version", [("4.4.0", 6), ("3.9.2", 5)])
def test_a_classic_group_as_kafka_answered(kafka, version):
    got = classic_groups(kafka, version)
    g = got["gclassic"]
    assert (g.group_type, g.state, g.protocol_type, g.protocol, g.error) == ("classic", "Stable", "consumer", "range",
                                                                            None)
    assert (g.generation, g.group_epoch, g.assignment_epoch) == (None, None, None)  # DescribeGroups has none
    assert (g.api, g.api_version) == ("DescribeGroups", version)
    assert [m.client_id for m in sorted(g.members, key=lambda m: m.client_id)] == ["c0", "c1"]
    assert sorted(m.assignment for m in g.members) == [(("orders", 0), ("orders", 1)), (("orders", 2), ("orders", 3))]
    for m in g.members:
        assert m.member_id.startswith(m.client_id + "-")
        assert (m.subscribed_topics, m.target_assignment, m.member_epoch, m.decode_error) == (("orders",), None,
                                                                                             None, None)
    if version >= 6:  # KIP-1043: a group the coordinator does not have, and a KIP-848 group, are not found
        assert got["nope"].error == got["g848"].error == "GROUP_ID_NOT_FOUND"
    else:  # before: a group in state Dead, without members or an error
        assert (got["nope"].state, got["nope"].members, got["nope"].error) == ("Dead", (), None)


def test_a_member_whose_bytes_are_not_the_consumer_protocol_keeps_its_other_fields():
    from kafka.protocol.admin import DescribeGroupsResponse

    response = DescribeGroupsResponse.decode(answers("4.4.0")[("DescribeGroups", 6)], version=6)
    group = next(g for g in response.groups if g.group_id == "gclassic")
    good = group.members[0].member_assignment
    group.members[0].member_metadata = b"\x00\x00\x00\x05\x00"  # one topic, its name cut
    group.members[1].member_assignment = good[:-3]
    d = cd.described(group, 6, 1)
    assert d.error is None and len(d.members) == 2
    broken = {m.member_id: m for m in d.members}
    first, second = broken[group.members[0].member_id], broken[group.members[1].member_id]
    assert first.subscribed_topics is None and "subscription of 5 bytes does not decode" in first.decode_error
    assert second.assignment is None and "assignment of" in second.decode_error
    assert first.client_id and second.client_host == "/127.0.0.1"


def test_member_bytes_of_the_consumer_protocol():
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

    sub = ConsumerProtocolSubscription(version=3, topics=["b", "a"], user_data=None, owned_partitions=[],
                                       generation_id=4, rack_id="r1").encode()
    assert cd.decode_subscription(sub) == (("a", "b"), "r1")
    assert cd.decode_subscription(b"") == (None, None)
    A = ConsumerProtocolAssignment
    assignment = A(version=0, assigned_partitions=[A.TopicPartition(topic="b", partitions=[1, 0]),
                                                   A.TopicPartition(topic="a", partitions=[7])],
                   user_data=None).encode()
    assert cd.decode_assignment(assignment) == (("a", 7), ("b", 0), ("b", 1))
    assert cd.decode_assignment(b"") == ()  # not assigned yet
    with pytest.raises(cd.MemberBytesError):
        cd.decode_assignment(b"\x00")


@pytest.mark.parametrize("code,name", [
    (0, None), (15, "COORDINATOR_NOT_AVAILABLE"), (16, "NOT_COORDINATOR"), (30, "GROUP_AUTHORIZATION_FAILED"),
    (35, "UNSUPPORTED_VERSION"), (69, "GROUP_ID_NOT_FOUND"), (-1, "UNKNOWN_SERVER_ERROR"), (9999, "ERROR_9999"),
])
def test_error_names(code, name):
    assert error_name(code) == name
