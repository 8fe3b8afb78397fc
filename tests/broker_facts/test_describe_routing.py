"""describe_groups' choices without a broker: which API asks for which group at which coordinator, what it falls
back to, and how errors come out. The brokers are a fake kafka-python connection manager that answers with
kafka-python's own response classes, encoded and decoded at the version the connection would pick (so each answer
has the fields of its version). What real brokers answer is tests/broker_facts/test_describe.py's."""
from __future__ import annotations

import uuid

import kafka.errors as Errors
import pytest
from kafka.protocol.admin import DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS, BrokerVersionData
from kafka.protocol.metadata import FindCoordinatorResponse, MetadataResponse

from rebalance_monitor.broker_facts import consumer_group_describe as cgd
from rebalance_monitor.broker_facts import streams_group_describe as stgd
from rebalance_monitor.broker_facts.describe import BrokerUnreachable, DecodeError, describe_groups

KAFKA_4 = BROKER_API_VERSIONS[(4, 3)]


class Answer:
    """An awaitable that is already done, as a kafka-python Future the IO thread completed."""

    def __init__(self, value):
        self.value = value

    def __await__(self):
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value
        yield  # noqa: unreachable - makes this a generator


class FakeBrokers:
    """Coordinators holding groups ({node: {group: "consumer" | "classic" | "streams"}}), answering like Kafka 4.x
    unless told otherwise. `fail` is {(api name, node): exception} of requests that do not get an answer."""

    def __init__(self, groups_by_node, api_versions=KAFKA_4, fail=None, coordinator_errors=None,
                 answer_69=None, leave_out=(), topic_ids=None, answer_89=None):
        self.groups_by_node = groups_by_node
        self.broker_version_data = BrokerVersionData(broker_version=(4, 3), api_versions=dict(api_versions))
        self.fail = fail or {}
        self.coordinator_errors = coordinator_errors or {}
        self.answer_69 = answer_69 or {}  # {group: error code} API 69 answers instead of describing
        self.answer_89 = answer_89 or {}  # {group: error code} API 89 answers instead of describing
        self.leave_out = set(leave_out)
        self.topic_ids = topic_ids or {}  # {topic: id} of topics API 69 names by id only
        self.sent = []
        self.cluster = self

    # kafka-python's ClusterMetadata, the one call describe makes
    def add_coordinator(self, row, key_type, key, synthesize_node_id=True):
        return row.node_id

    def run(self, fn):
        coro = fn()
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value
        raise AssertionError("the fake's answers never wait")

    def send(self, request, node_id=None):
        request.API_VERSION = self.broker_version_data.api_version(request)
        self.sent.append((request.name.removesuffix("Request"), request.API_VERSION, node_id))
        failure = self.fail.get((request.name.removesuffix("Request"), node_id))
        if failure is not None:
            return Answer(failure)
        response = getattr(self, "_" + request.name.removesuffix("Request"))(request, node_id)
        v = request.API_VERSION
        return Answer(type(response).decode(response.encode(version=v), version=v))  # the version's fields only

    def node_of(self, group):
        return next((n for n, gs in self.groups_by_node.items() if group in gs), min(self.groups_by_node))

    def kind(self, group):
        return self.groups_by_node.get(self.node_of(group), {}).get(group)

    def _FindCoordinator(self, request, node):
        R = FindCoordinatorResponse
        if request.API_VERSION < 4:
            code = self.coordinator_errors.get(request.key, 0)
            n = self.node_of(request.key)
            return R(throttle_time_ms=0, error_code=code, error_message=None, node_id=n, host="h", port=9092)
        return R(throttle_time_ms=0, coordinators=[
            R.Coordinator(key=k, node_id=self.node_of(k), host="h", port=9092,
                          error_code=self.coordinator_errors.get(k, 0), error_message=None)
            for k in request.coordinator_keys])

    def _ListGroups(self, request, node):
        R = ListGroupsResponse
        return R(throttle_time_ms=0, error_code=0, groups=[
            R.ListedGroup(group_id=g, protocol_type="consumer", group_state="Stable", group_type=kind)
            for g, kind in self.groups_by_node.get(node, {}).items()])

    def _ConsumerGroupDescribe(self, request, node):
        R = cgd.ConsumerGroupDescribeResponse
        G = R.DescribedGroup
        out = []
        for g in request.group_ids:
            if g in self.leave_out:
                continue
            code = self.answer_69.get(g, 0 if self.kind(g) == "consumer" else 69)
            part = G.Member.Assignment.TopicPartitions(
                topic_id=self.topic_ids.get("t", uuid.UUID(int=7)), topic_name="" if "t" in self.topic_ids else "t",
                partitions=[0])
            members = [] if code else [G.Member(
                member_id="m1", instance_id=None, rack_id=None, member_epoch=4, client_id="c", client_host="/h",
                subscribed_topic_names=["t"], subscribed_topic_regex=None,
                assignment=G.Member.Assignment(topic_partitions=[part]),
                target_assignment=G.Member.Assignment(topic_partitions=[part]), member_type=1)]
            out.append(G(error_code=code, error_message=None, group_id=g, group_state="" if code else "Stable",
                         group_epoch=0 if code else 4, assignment_epoch=0 if code else 4,
                         assignor_name="" if code else "uniform", members=members, authorized_operations=0))
        return R(throttle_time_ms=0, groups=out)

    def _StreamsGroupDescribe(self, request, node):
        R = stgd.StreamsGroupDescribeResponse
        G = R.DescribedGroup
        A = G.Member.Assignment
        out = []
        for g in request.group_ids:
            code = self.answer_89.get(g, 0 if self.kind(g) == "streams" else 69)
            tasks = A(active_tasks=[A.TaskIds(subtopology_id="0", partitions=[1, 0])], standby_tasks=[],
                      warmup_tasks=[])
            members = [] if code else [G.Member(
                member_id="s1", member_epoch=5, instance_id=None, rack_id=None, client_id="c", client_host="/h",
                topology_epoch=0, process_id="p1", user_endpoint=None, client_tags=[], task_offsets=[],
                task_end_offsets=[], assignment=tasks, target_assignment=tasks, is_classic=False)]
            out.append(G(error_code=code, error_message=None, group_id=g, group_state="" if code else "Stable",
                         group_epoch=0 if code else 5, assignment_epoch=0 if code else 5,
                         topology=None if code else G.Topology(epoch=0, subtopologies=None), members=members,
                         authorized_operations=0, topology_description=None, topology_description_status=0,
                         assignor_name=None if code else "sticky"))
        return R(throttle_time_ms=0, groups=out)

    def _DescribeGroups(self, request, node):
        G = DescribeGroupsResponse.DescribedGroup
        v6 = request.API_VERSION >= 6
        out = []
        for g in request.groups:
            if g in self.leave_out:
                continue
            kind = self.kind(g)
            code = 0 if kind == "classic" or (kind is None and not v6) else 69
            out.append(G(error_code=code, error_message=None, group_id=g,
                         group_state="Stable" if kind == "classic" else "Dead",
                         protocol_type="consumer" if kind == "classic" else "",
                         protocol_data="range" if kind == "classic" else "", members=[], authorized_operations=None))
        return DescribeGroupsResponse(throttle_time_ms=0, groups=out)

    def _Metadata(self, request, node):
        T = MetadataResponse.MetadataResponseTopic
        return MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id="c", controller_id=1, topics=[
            T(error_code=0, name=name, topic_id=tid, is_internal=False, partitions=[])
            for name, tid in self.topic_ids.items()])


class Client:
    """What describe_groups needs of a KafkaAdminClient: its connection manager."""

    def __init__(self, manager):
        self._manager = manager


def without(versions, *keys, **caps):
    out = {k: v for k, v in versions.items() if k not in keys}
    for key, top in caps.items():
        k = int(key.removeprefix("k"))
        out[k] = (out[k][0], top)
    return out


def with_api(versions, key, top):
    return {**versions, key: (0, top)}


def test_each_group_goes_to_its_coordinator_through_the_api_of_its_type():
    brokers = FakeBrokers({1: {"a": "consumer", "b": "classic"}, 2: {"c": "consumer", "d": "classic"}})
    got = describe_groups(Client(brokers), ["a", "b", "c", "d", "a"])
    assert list(got) == ["a", "b", "c", "d"]
    assert {g: (d.api, d.group_type, d.coordinator, d.error) for g, d in got.items()} == {
        "a": ("ConsumerGroupDescribe", "consumer", 1, None), "b": ("DescribeGroups", "classic", 1, None),
        "c": ("ConsumerGroupDescribe", "consumer", 2, None), "d": ("DescribeGroups", "classic", 2, None)}
    assert brokers.sent == [("FindCoordinator", 6, None),
                            ("ListGroups", 5, 1), ("ConsumerGroupDescribe", 1, 1), ("DescribeGroups", 6, 1),
                            ("ListGroups", 5, 2), ("ConsumerGroupDescribe", 1, 2), ("DescribeGroups", 6, 2)]
    a = got["a"]
    assert (a.state, a.protocol, a.group_epoch, a.generation, a.members[0].assignment) == (
        "Stable", "uniform", 4, 4, (("t", 0),))


@pytest.mark.parametrize("top", [0, 1])
def test_a_streams_group_is_asked_with_streams_group_describe(top):
    brokers = FakeBrokers({1: {"s": "streams", "a": "consumer"}}, api_versions=with_api(KAFKA_4, 89, top))
    got = describe_groups(Client(brokers), ["s", "a"])
    s = got["s"]
    assert (s.api, s.api_version, s.group_type, s.state, s.group_epoch, s.topology_epoch, s.error) == (
        "StreamsGroupDescribe", top, "streams", "Stable", 5, 0, None)
    assert s.protocol == ("sticky" if top >= 1 else None)  # AssignorName is v1+
    assert [(m.member_id, m.process_id, m.active_tasks, m.assignment) for m in s.members] == [
        ("s1", "p1", (("0", 0), ("0", 1)), None)]
    assert got["a"].api == "ConsumerGroupDescribe"
    assert brokers.sent == [("FindCoordinator", 6, None), ("ListGroups", 5, 1), ("StreamsGroupDescribe", top, 1),
                            ("ConsumerGroupDescribe", 1, 1)]


def test_a_streams_group_of_a_broker_without_api_89_is_asked_with_describe_groups():
    brokers = FakeBrokers({1: {"s": "streams"}}, api_versions=without(KAFKA_4, 89))
    got = describe_groups(Client(brokers), ["s"])
    assert (got["s"].api, got["s"].group_type) == ("DescribeGroups", "streams")
    assert [s[0] for s in brokers.sent] == ["FindCoordinator", "ListGroups", "DescribeGroups"]


def test_without_listgroups_v5_a_streams_group_is_not_asked_with_api_89():
    """Without the group's type, API 69 is tried first: it answers GROUP_ID_NOT_FOUND for a streams group, and
    DescribeGroups is asked."""
    brokers = FakeBrokers({1: {"s": "streams"}}, api_versions=without(KAFKA_4, k16=4))
    got = describe_groups(Client(brokers), ["s"])
    assert got["s"].api == "DescribeGroups"
    assert "StreamsGroupDescribe" not in [s[0] for s in brokers.sent]


@pytest.mark.parametrize("code,name", [(16, "NOT_COORDINATOR"), (69, "GROUP_ID_NOT_FOUND"),
                                       (30, "GROUP_AUTHORIZATION_FAILED")])
def test_an_error_of_api_89_for_a_group_is_its_error_not_retried(code, name):
    """A streams group deleted between ListGroups and API 89 is not found: said so, not asked again another way."""
    brokers = FakeBrokers({1: {"s": "streams"}}, answer_89={"s": code})
    got = describe_groups(Client(brokers), ["s"])
    assert (got["s"].error, got["s"].api, got["s"].group_type, got["s"].members) == (name, "StreamsGroupDescribe",
                                                                                     "streams", ())
    assert [s[0] for s in brokers.sent] == ["FindCoordinator", "ListGroups", "StreamsGroupDescribe"]


def test_a_group_not_listed_is_asked_with_describe_groups():
    brokers = FakeBrokers({1: {"a": "consumer"}})
    got = describe_groups(Client(brokers), ["gone"])
    assert (got["gone"].error, got["gone"].api, got["gone"].group_type) == ("GROUP_ID_NOT_FOUND", "DescribeGroups",
                                                                            None)
    assert [s[0] for s in brokers.sent] == ["FindCoordinator", "ListGroups", "DescribeGroups"]


def test_without_listgroups_v5_api_69_is_tried_first_and_a_classic_group_falls_back():
    brokers = FakeBrokers({1: {"a": "consumer", "b": "classic"}}, api_versions=without(KAFKA_4, k16=4))
    got = describe_groups(Client(brokers), ["a", "b"])
    assert (got["a"].api, got["a"].group_type) == ("ConsumerGroupDescribe", "consumer")
    assert (got["b"].api, got["b"].group_type, got["b"].state, got["b"].error) == ("DescribeGroups", None, "Stable",
                                                                                   None)
    assert [s[0] for s in brokers.sent] == ["FindCoordinator", "ConsumerGroupDescribe", "DescribeGroups"]


def test_without_api_69_every_group_is_asked_with_describe_groups():
    brokers = FakeBrokers({1: {"b": "classic"}}, api_versions=without(BROKER_API_VERSIONS[(3, 6)], 69))
    got = describe_groups(Client(brokers), ["b", "gone"])
    assert [s[:2] for s in brokers.sent] == [("FindCoordinator", 4), ("DescribeGroups", 5)]
    assert (got["b"].state, got["gone"].state, got["gone"].error) == ("Stable", "Dead", None)  # v5: Dead, no error


def test_api_69_unsupported_for_a_group_falls_back_to_describe_groups():
    """Kafka 3.9 without its new coordinator: API 69 in ApiVersions, UNSUPPORTED_VERSION for every group."""
    brokers = FakeBrokers({1: {"b": "classic"}}, api_versions=without(KAFKA_4, k16=4), answer_69={"b": 35})
    got = describe_groups(Client(brokers), ["b"])
    assert (got["b"].api, got["b"].state, got["b"].error) == ("DescribeGroups", "Stable", None)


def test_old_brokers_find_coordinators_one_group_at_a_time():
    brokers = FakeBrokers({1: {"a": "classic", "b": "classic"}}, api_versions=without(KAFKA_4, 69, k10=3, k16=4))
    got = describe_groups(Client(brokers), ["a", "b"])
    assert [s[:2] for s in brokers.sent] == [("FindCoordinator", 3), ("FindCoordinator", 3), ("DescribeGroups", 6)]
    assert [d.state for d in got.values()] == ["Stable", "Stable"]


@pytest.mark.parametrize("code,name", [(15, "COORDINATOR_NOT_AVAILABLE"), (30, "GROUP_AUTHORIZATION_FAILED")])
def test_a_coordinator_not_found_is_that_groups_error(code, name):
    brokers = FakeBrokers({1: {"a": "consumer", "b": "classic"}}, coordinator_errors={"a": code})
    got = describe_groups(Client(brokers), ["a", "b"])
    assert (got["a"].error, got["a"].api, got["a"].coordinator, got["a"].members) == (name, "FindCoordinator", None,
                                                                                      ())
    assert got["b"].error is None


@pytest.mark.parametrize("code,name", [(16, "NOT_COORDINATOR"), (14, "COORDINATOR_LOAD_IN_PROGRESS"),
                                       (30, "GROUP_AUTHORIZATION_FAILED")])
def test_an_error_of_api_69_for_a_group_is_its_error_not_retried(code, name):
    brokers = FakeBrokers({1: {"a": "consumer"}}, answer_69={"a": code})
    got = describe_groups(Client(brokers), ["a"])
    assert (got["a"].error, got["a"].api) == (name, "ConsumerGroupDescribe")
    assert [s[0] for s in brokers.sent].count("ConsumerGroupDescribe") == 1


@pytest.mark.parametrize("exc", [Errors.KafkaConnectionError("Node not connected"), Errors.NodeNotReadyError(2),
                                 Errors.KafkaTimeoutError("Timed out after 30000 ms")])
def test_a_request_without_an_answer_raises_broker_unreachable(exc):
    brokers = FakeBrokers({1: {"a": "consumer"}, 2: {"b": "classic"}}, fail={("DescribeGroups", 2): exc})
    with pytest.raises(BrokerUnreachable, match=f"DescribeGroupsRequest to node 2: {type(exc).__name__}"):
        describe_groups(Client(brokers), ["a", "b"])


def test_an_answer_that_does_not_decode_raises_decode_error():
    brokers = FakeBrokers({1: {"a": "consumer"}},
                          fail={("ConsumerGroupDescribe", 1): Errors.KafkaProtocolError("Unable to decode response")})
    with pytest.raises(DecodeError, match="ConsumerGroupDescribeRequest v1: the answer of node 1 does not decode"):
        describe_groups(Client(brokers), ["a"])


def test_a_group_left_out_of_the_answer_is_said_so():
    got = describe_groups(Client(FakeBrokers({1: {"a": "consumer"}}, leave_out={"a"})), ["a"])
    assert (got["a"].error, got["a"].error_message) == ("UNKNOWN_SERVER_ERROR",
                                                        "the broker's answer did not name the group")


def test_topics_named_by_id_only_are_named_with_metadata():
    tid = uuid.uuid4()
    brokers = FakeBrokers({1: {"a": "consumer"}}, topic_ids={"t": tid})
    got = describe_groups(Client(brokers), ["a"])
    assert got["a"].members[0].assignment == got["a"].members[0].target_assignment == (("t", 0),)
    assert [s[0] for s in brokers.sent] == ["FindCoordinator", "ListGroups", "ConsumerGroupDescribe", "Metadata"]


def test_nothing_asked_for_no_groups_and_a_client_that_is_not_kafka_pythons_is_refused():
    brokers = FakeBrokers({1: {}})
    assert describe_groups(Client(brokers), []) == {} and brokers.sent == []
    with pytest.raises(TypeError, match="KafkaAdminClient"):
        describe_groups(object(), ["a"])
