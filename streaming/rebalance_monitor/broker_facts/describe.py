"""`describe_groups`: what the brokers say of each group now, through the describe API of the group's type.

For a list of groups, through a kafka-python (3.0+) `KafkaAdminClient` (the base install's client; its connection
settings are the caller's, e.g. `KafkaConnection.kafka_python()`):

1. FindCoordinator (batched from v4, Kafka 3.0+; one request per group before) finds each group's coordinator;
   a group whose coordinator is not found gets that error (COORDINATOR_NOT_AVAILABLE, ...).
2. ListGroups v5 (KIP-848; Kafka 3.8+) at each coordinator names the type of each group it holds (classic,
   consumer, streams, share). A coordinator without v5, or whose listing fails, names none.
3. ShareGroupDescribe (API 77, version 1: Kafka 4.1+) asks for the "share" groups; StreamsGroupDescribe (API 89,
   versions 0-1: Kafka 4.1+) for the "streams" groups; ConsumerGroupDescribe (API 69) for the "consumer" groups,
   and for every group whose type is not known when the broker has API 69; DescribeGroups (API 15) asks for the
   others (classic, a share or streams group of a broker without their API, a group the coordinator does not
   list), and for the groups API 69 answered with GROUP_ID_NOT_FOUND (a classic group: the KIP-848 coordinator
   says "not a consumer group") or UNSUPPORTED_VERSION. DescribeGroups names a share or streams group's type only.
4. Topics are named by API 69's and 77's own answers; a topic id given without a name is looked up once with
   Metadata. API 89 names tasks (a subtopology id and a partition), no topics.

Each group's answer, error or not, is its GroupDescription (descriptions.py): an error code of the broker for one
group is that description's `error` (its Kafka name), never an exception. A request that cannot be sent or is not
answered (connection refused or lost, the client's request timeout) raises `BrokerUnreachable`; an answer that does
not decode raises `DecodeError`. Nothing is retried and nothing is concluded: the descriptions are the answers.
"""
from __future__ import annotations

from collections import defaultdict

from . import classic_describe, consumer_group_describe as cgd, share_group_describe as sgd
from . import streams_group_describe as stgd
from .consumer_group_describe import DecodeError
from .descriptions import GroupDescription, error_name, failed

FIND_COORDINATOR = "FindCoordinator"
# API 69's answers for a group after which DescribeGroups is asked instead
CLASSIC_FALLBACK = frozenset({"GROUP_ID_NOT_FOUND", "UNSUPPORTED_VERSION"})

__all__ = ["BrokerUnreachable", "DecodeError", "describe_groups"]


class BrokerUnreachable(ConnectionError):
    """A request to a broker could not be sent, or was not answered (refused, closed, timed out)."""


def describe_groups(client, groups: list[str]) -> dict[str, GroupDescription]:
    """{group: GroupDescription} for each of `groups` (duplicates asked once), through `client`, a kafka-python
    KafkaAdminClient. Raises BrokerUnreachable (a broker not reached or not answering) and DecodeError (an answer
    that is not the protocol's); a broker's error for one group is that group's description."""
    manager = _manager_of(client)
    wanted = list(dict.fromkeys(groups))
    out: dict[str, GroupDescription] = {}
    if not wanted:
        return out
    by_node: dict[int, list[str]] = defaultdict(list)
    for group, found in _find_coordinators(manager, wanted).items():
        if isinstance(found, GroupDescription):
            out[group] = found
        else:
            by_node[found].append(group)
    has_69 = _supports(manager, cgd.ConsumerGroupDescribeRequest)
    has_77 = _supports(manager, sgd.ShareGroupDescribeRequest, 1)
    has_89 = _supports(manager, stgd.StreamsGroupDescribeRequest)
    for node, node_groups in by_node.items():
        types = _group_types(manager, node)
        by_77 = [g for g in node_groups if has_77 and types is not None and types.get(g) == "share"]
        by_89 = [g for g in node_groups if has_89 and types is not None and types.get(g) == "streams"]
        by_69 = [g for g in node_groups if g not in by_77 and g not in by_89 and has_69
                 and (types is None or types.get(g) == "consumer")]
        by_15 = [g for g in node_groups if g not in by_69 and g not in by_77 and g not in by_89]
        if by_77:
            for d in _share_groups(manager, node, by_77):
                out[d.group] = d
        if by_89:
            for d in _streams_groups(manager, node, by_89):
                out[d.group] = d
        if by_69:
            for d in _consumer_groups(manager, node, by_69):
                if d.error in CLASSIC_FALLBACK:
                    by_15.append(d.group)
                else:
                    out[d.group] = d
        if by_15:
            for d in _classic_groups(manager, node, by_15, types or {}):
                out[d.group] = d
    for group in wanted:  # a group the broker's answer left out
        if group not in out:
            out[group] = failed(group, "UNKNOWN_SERVER_ERROR", "the broker's answer did not name the group",
                                api=None)
    return {g: out[g] for g in wanted}


def _manager_of(client):
    manager = getattr(client, "_manager", None) or getattr(getattr(client, "_client", None), "_manager", None)
    if manager is None or not hasattr(manager, "send"):
        raise TypeError(f"describe_groups needs a kafka-python (3.0+) KafkaAdminClient, not {type(client).__name__}")
    return manager


def _send(manager, request, node):
    """The answer of `node` (None: any broker) to `request`; the connection picks the highest version both
    sides have."""
    import kafka.errors as Errors

    async def ask():
        return await manager.send(request, node_id=node)

    where = "a broker" if node is None else f"node {node}"
    try:
        return manager.run(ask)
    except Errors.KafkaProtocolError as exc:
        raise DecodeError(f"{request.name} v{request.API_VERSION}: the answer of {where} does not decode "
                          f"({exc}; kafka-python logs the bytes)") from exc
    except (Errors.KafkaError, OSError) as exc:
        detail = str(exc)  # kafka-python's errors start with their class name
        if not detail.startswith(type(exc).__name__):
            detail = f"{type(exc).__name__}: {detail}"
        raise BrokerUnreachable(f"{request.name} to {where}: {detail}") from exc


def _supports(manager, request_class, min_version: int = 0) -> bool:
    """Whether the brokers (the bootstrap broker's ApiVersions, as kafka-python keeps them) answer
    `request_class` at `min_version` or later."""
    import kafka.errors as Errors

    try:
        return manager.broker_version_data.api_version(request_class) >= min_version
    except Errors.IncompatibleBrokerVersion:
        return False


def _find_coordinators(manager, groups: list[str]) -> dict[str, int | GroupDescription]:
    """{group: the coordinator's node id, or a description of FindCoordinator's error}."""
    from kafka.protocol.metadata import CoordinatorType, FindCoordinatorRequest

    if _supports(manager, FindCoordinatorRequest, 4):
        request = FindCoordinatorRequest(key_type=CoordinatorType.GROUP.value, coordinator_keys=groups,
                                         min_version=4)
        rows = [(row.key, row) for row in _send(manager, request, None).coordinators]
        version = request.API_VERSION
    else:
        rows, version = [], None
        for group in groups:
            request = FindCoordinatorRequest(key=group, key_type=CoordinatorType.GROUP.value, max_version=3)
            rows.append((group, _send(manager, request, None)))
            version = request.API_VERSION
    out: dict[str, int | GroupDescription] = {}
    for group, row in rows:
        error = error_name(row.error_code)
        if error is not None:
            out[group] = failed(group, error, getattr(row, "error_message", None), api=FIND_COORDINATOR,
                                api_version=version)
        else:  # known to kafka-python's cluster view, so its connections can reach a coordinator not yet in it
            out[group] = manager.cluster.add_coordinator(row, CoordinatorType.GROUP, group, synthesize_node_id=False)
    return out


def _group_types(manager, node) -> dict[str, str] | None:
    """{group: type} of the groups `node` coordinates (ListGroups v5), or None where it cannot say."""
    from kafka.protocol.admin import ListGroupsRequest

    if not _supports(manager, ListGroupsRequest, 5):
        return None
    response = _send(manager, ListGroupsRequest(states_filter=[], types_filter=[], min_version=5), node)
    if response.error_code:
        return None
    return {g.group_id: g.group_type for g in response.groups}


def _consumer_groups(manager, node, groups: list[str]) -> list[GroupDescription]:
    request = cgd.request(groups)
    response = _send(manager, request, node)
    names = _topic_names(manager) if cgd.unnamed_topic_ids(response) else {}
    return [cgd.described(g, request.API_VERSION, node, names) for g in response.groups]


def _share_groups(manager, node, groups: list[str]) -> list[GroupDescription]:
    request = sgd.request(groups)
    response = _send(manager, request, node)
    names = _topic_names(manager) if sgd.unnamed_topic_ids(response) else {}
    return [sgd.described(g, request.API_VERSION, node, names) for g in response.groups]


def _streams_groups(manager, node, groups: list[str]) -> list[GroupDescription]:
    request = stgd.request(groups)
    response = _send(manager, request, node)
    return [stgd.described(g, request.API_VERSION, node) for g in response.groups]


def _classic_groups(manager, node, groups: list[str], types: dict[str, str]) -> list[GroupDescription]:
    request = classic_describe.request(groups)
    response = _send(manager, request, node)
    return [classic_describe.described(g, request.API_VERSION, node, types.get(g.group_id)) for g in response.groups]


def _topic_names(manager) -> dict[str, str]:
    """{topic id string: name} of every topic of the cluster (Metadata v10+ carries the ids)."""
    from kafka.protocol.metadata import MetadataRequest

    request = MetadataRequest(topics=None, allow_auto_topic_creation=False, min_version=10)
    response = _send(manager, request, None)
    return {str(t.topic_id): t.name for t in response.topics if t.name and not t.error_code}
