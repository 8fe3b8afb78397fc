"""StreamsGroupDescribe's (API 89) decoder on bytes a real Kafka 4.4.0 broker sent (data/answers-4.4.0-streams.json,
recorded with tests/helpers/raw_answer.py: see its `recorded`), beside what Kafka's streams group tool printed at
the same moment, and on bytes that are not answers: cut short, too long, garbage, a version it does not read. No
broker: these run in `make test-fast`."""
from __future__ import annotations

import dataclasses
import io
import json
import random
from pathlib import Path

import pytest

from rebalance_monitor.broker_facts import streams_group_describe as sgd
from rebalance_monitor.broker_facts.consumer_group_describe import DecodeError

DATA = Path(__file__).parent / "data"
RECORDED = json.loads((DATA / "answers-4.4.0-streams.json").read_text())
BODIES = {a["version"]: bytes.fromhex(a["body"]) for a in RECORDED["answers"]}


def described(version: int) -> dict:
    response = sgd.decode_response(BODIES[version], version)
    return {g.group_id: sgd.described(g, version, 1) for g in response.groups}


@pytest.mark.parametrize("version", [0, 1])
def test_a_streams_group_as_kafka_4_4_answered(version):
    got = described(version)
    g = got["gstreams"]
    assert (g.group_type, g.state, g.protocol_type, g.error) == ("streams", "Stable", "streams", None)
    assert (g.group_epoch, g.assignment_epoch, g.generation, g.topology_epoch) == (4, 4, 4, 0)
    assert g.protocol == ("sticky" if version >= 1 else None)  # AssignorName is v1+ (KIP-1357)
    assert (g.api, g.api_version, g.coordinator) == ("StreamsGroupDescribe", version, 1)
    # the members as the streams group tool printed them: client ids, epochs, processes, active tasks
    assert {m.member_id: {"client_id": m.client_id, "epoch": m.member_epoch, "process_id": m.process_id,
                          "active": [list(t) for t in m.active_tasks]} for m in g.members} == RECORDED["tool"]
    assert [m.member_id for m in g.members] == sorted(RECORDED["tool"])
    for m in g.members:  # a stateless topology: no standby or warm-up tasks; the target reached
        assert (m.standby_tasks, m.warmup_tasks, m.target_standby_tasks, m.target_warmup_tasks) == ((),) * 4
        assert m.target_active_tasks == m.active_tasks
        assert (m.member_type, m.topology_epoch, m.client_host, m.group_instance_id) == ("streams", 0, "/127.0.0.1",
                                                                                         None)
        # a task names a subtopology, not a topic: the member owns no topic partitions in this answer
        assert (m.assignment, m.target_assignment, m.subscribed_topics) == (None, None, None)
    # two processes: ra's two threads share one
    assert len({m.process_id for m in g.members}) == 2
    nope = got["nope"]
    assert (nope.error, nope.error_message, nope.group_type, nope.members) == (
        "GROUP_ID_NOT_FOUND", "Group nope not found.", "streams", ())


def test_a_description_is_plain_values():
    g = described(1)["gstreams"]
    as_json = json.loads(json.dumps(dataclasses.asdict(g)))
    assert as_json["members"][0]["active_tasks"] == [["0", 2]] and as_json["topology_epoch"] == 0
    assert hash(g)  # frozen, tuples all the way down


@pytest.mark.parametrize("version", [0, 1])
def test_every_cut_short_answer_is_a_decode_error(version):
    body = BODIES[version]
    for n in range(len(body)):
        with pytest.raises(DecodeError, match=f"StreamsGroupDescribe v{version} response of {n} bytes"):
            sgd.decode_response(body[:n], version)


def test_bytes_left_over_and_the_other_versions_bytes_are_decode_errors():
    with pytest.raises(DecodeError, match="leaves 1 bytes over"):
        sgd.decode_response(BODIES[1] + b"\x00", 1)
    with pytest.raises(DecodeError):  # v1's three last fields of a group read as v0's next group
        sgd.decode_response(BODIES[1], 0)
    with pytest.raises(DecodeError):
        sgd.decode_response(BODIES[0], 1)


def test_a_version_the_decoder_does_not_read_is_a_decode_error():
    with pytest.raises(DecodeError, match="reads versions 0-1"):
        sgd.decode_response(BODIES[1], 2)
    with pytest.raises(DecodeError, match="reads versions 0-1"):
        sgd.decode_response(b"", -1)


def test_garbage_is_a_decode_error_or_an_answer_never_another_exception():
    rnd = random.Random(1071)
    decoded = 0
    for i in range(3000):
        if i % 2:
            data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(64)))
        else:  # the real answer with a few bytes changed: lengths, counts and null markers that lie
            data = bytearray(BODIES[1])
            for _ in range(rnd.randrange(1, 4)):
                data[rnd.randrange(len(data))] = rnd.randrange(256)
        try:
            sgd.decode_response(bytes(data), 1)
            decoded += 1
        except DecodeError:
            pass
    assert decoded < 3000


def test_the_connection_path_decodes_strictly():
    """kafka-python's connection calls the response class registered for API 89 on the body after the header."""
    from kafka.protocol.api_header import RequestHeader

    response_class = RequestHeader(request_api_key=89, request_api_version=1, correlation_id=1,
                                   client_id="t").get_response_class()
    assert response_class.decode(io.BytesIO(BODIES[1])).groups[0].group_id == "gstreams"
    with pytest.raises(ValueError):
        response_class.decode(io.BytesIO(BODIES[1][:-1]))


def test_the_request_asks_no_topology_description():
    request = sgd.request(["a", "b"])
    assert bytes(request.encode(version=1)) == b"\x03\x02a\x02b\x00\x00\x00"  # ids, no operations, no description
    assert bytes(request.encode(version=0)) == b"\x03\x02a\x02b\x00\x00"


def _member(R, **kw):
    G = R.DescribedGroup
    A = G.Member.Assignment
    T = A.TaskIds
    fields = dict(member_id="m", member_epoch=7, instance_id="i-1", rack_id="r", client_id="c", client_host="/h",
                  topology_epoch=2, process_id="p", user_endpoint=G.Member.Endpoint(host="h", port=65535),
                  client_tags=[G.Member.KeyValue(key="zone", value="a")],
                  task_offsets=[G.Member.TaskOffset(subtopology_id="1", partition=0, offset=5)], task_end_offsets=[],
                  assignment=A(active_tasks=[T(subtopology_id="1", partitions=[2, 0]), T(subtopology_id="0",
                                                                                       partitions=[1])],
                               standby_tasks=[T(subtopology_id="1", partitions=[1])], warmup_tasks=[]),
                  target_assignment=A(active_tasks=[T(subtopology_id="1", partitions=[0])], standby_tasks=[],
                                      warmup_tasks=[T(subtopology_id="1", partitions=[1])]),
                  is_classic=False)
    fields.update(kw)
    return G.Member(**fields)


def test_every_field_of_version_1_round_trips():
    """An answer no stateless application gives: a stateful member with standby and warm-up tasks, an endpoint,
    client tags and offsets, a classic member not upgraded yet, and the topology's description (status 3)."""
    R = sgd.StreamsGroupDescribeResponse
    G = R.DescribedGroup
    D = G.TopologyDescription
    node = D.TopologyDescriptionSubtopology.TopologyDescriptionNode
    description = D(subtopologies=[D.TopologyDescriptionSubtopology(subtopology_id="0", nodes=[
        node(name="KSTREAM-SOURCE-0000000000", node_type=1, source_topics=["in"], sink_topic=None, stores=[],
             successors=["KSTREAM-SINK-0000000001"]),
        node(name="KSTREAM-SINK-0000000001", node_type=3, source_topics=[], sink_topic="out", stores=[],
             successors=[])])],
        global_stores=[])
    topology = G.Topology(epoch=3, subtopologies=[G.Topology.Subtopology(
        subtopology_id="1", source_topics=["in"], repartition_sink_topics=[], repartition_source_topics=[],
        state_changelog_topics=[G.Topology.Subtopology.TopicInfo(name="app-store-changelog", partitions=0,
                                                                 replication_factor=0, topic_configs=[])])])
    group = G(error_code=0, error_message=None, group_id="g", group_state="Reconciling", group_epoch=9,
              assignment_epoch=9, topology=topology,
              members=[_member(R), _member(R, member_id="k", instance_id=None, user_endpoint=None, is_classic=True)],
              authorized_operations=-2147483648, topology_description=description, topology_description_status=3,
              assignor_name="sticky")
    body = bytes(R(throttle_time_ms=0, groups=[group]).encode(version=1))
    response = sgd.decode_response(body, 1)
    back = response.groups[0]
    assert back.topology_description.subtopologies[0].nodes[1].sink_topic == "out"
    assert back.members[0].user_endpoint.port == 65535 and back.members[1].user_endpoint is None
    d = sgd.described(back, 1, 3)
    assert (d.state, d.group_epoch, d.topology_epoch, d.protocol, d.coordinator) == ("Reconciling", 9, 3, "sticky", 3)
    k, m = d.members
    assert (m.member_type, k.member_type, m.group_instance_id, m.rack_id) == ("streams", "classic", "i-1", "r")
    assert (m.active_tasks, m.standby_tasks, m.warmup_tasks) == ((("0", 1), ("1", 0), ("1", 2)), (("1", 1),), ())
    assert (m.target_active_tasks, m.target_standby_tasks, m.target_warmup_tasks) == ((("1", 0),), (), (("1", 1),))
    for n in range(0, len(body), 3):
        with pytest.raises(DecodeError):
            sgd.decode_response(body[:n], 1)
    # without the topology (a group not initialised yet) and without an assignor (a null AssignorName)
    bare = G(error_code=0, error_message=None, group_id="g", group_state="NotReady", group_epoch=1,
             assignment_epoch=0, topology=None, members=[], authorized_operations=0, topology_description=None,
             topology_description_status=0, assignor_name=None)
    d = sgd.described(sgd.decode_response(bytes(R(throttle_time_ms=0, groups=[bare]).encode(version=1)), 1).groups[0],
                      1, 3)
    assert (d.topology_epoch, d.protocol, d.members) == (None, None, ())


def test_the_described_event_carries_the_streams_fields_and_parses():
    """The broker poller's `group_described` event of the recorded description: the topology epoch, each member's
    process and tasks, as the core's parser reads them back."""
    from rebalance_monitor.broker_facts.poller import described_event
    from rebalance_monitor.core.event_model import GroupDescribed
    from rebalance_monitor.core.events import parse_event

    g = described(1)["gstreams"]
    event = described_event(g, 1234)
    assert event["topology_epoch"] == 0 and event["members"][2]["active_tasks"] == [["0", 0], ["0", 3]]
    parsed = parse_event(json.dumps(event).encode())
    assert isinstance(parsed, GroupDescribed), parsed
    assert (parsed.group_type, parsed.group_epoch, parsed.topology_epoch, parsed.protocol) == ("streams", 4, 0,
                                                                                              "sticky")
    by_id = {m.member_id: m for m in parsed.members}
    for m in g.members:
        p = by_id[m.member_id]
        assert (p.process_id, p.active_tasks, p.standby_tasks, p.target_active_tasks, p.assignment) == (
            m.process_id, m.active_tasks, (), m.target_active_tasks, None)
    consumer = dataclasses.replace(g, group_type="consumer", topology_epoch=None, members=tuple(
        dataclasses.replace(m, process_id=None, **dict.fromkeys(("active_tasks", "standby_tasks", "warmup_tasks",
                                                                 "target_active_tasks", "target_standby_tasks",
                                                                 "target_warmup_tasks")))
        for m in g.members))
    plain = described_event(consumer, 1234)  # another group type's event has none of these fields
    assert "topology_epoch" not in plain and all("process_id" not in m for m in plain["members"])
