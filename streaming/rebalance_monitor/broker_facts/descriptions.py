"""What the broker says of a group when asked: `GroupDescription` and its `MemberDescription`s, plain Python values
only (str, int, None, tuples of them), so a description turns into a canonical JSON event as it is
(`dataclasses.asdict`). Filled by `consumer_group_describe.py` (KIP-848 groups), `share_group_describe.py`,
`streams_group_describe.py` and `classic_describe.py`; a value the answering API does not carry is None, never a
guess.
"""
from __future__ import annotations

from dataclasses import dataclass

# (topic, partition) pairs, sorted
Partitions = tuple[tuple[str, int], ...]
# a streams group's tasks: (subtopology id, partition) pairs, sorted
Tasks = tuple[tuple[str, int], ...]

GROUP_TYPES = ("classic", "consumer", "streams", "share")  # ListGroups v5's group types (Kafka 4.x)


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    # the member's epoch (KIP-848 groups); None for a classic group's members: DescribeGroups does not carry it
    member_epoch: int | None
    # sorted; None where the member's subscription is not known (a classic group whose protocol type is not
    # "consumer", or whose metadata did not decode: `decode_error`)
    subscribed_topics: tuple[str, ...] | None
    # the partitions the member owns now, as the coordinator knows them; None as for subscribed_topics
    assignment: Partitions | None
    # the partitions the coordinator's target gives the member (KIP-848 groups); None for classic groups
    target_assignment: Partitions | None
    subscribed_topic_regex: str | None = None
    rack_id: str | None = None
    # ConsumerGroupDescribe v1+ (Kafka 4.0+): "consumer" or "classic" (a classic-protocol member of a KIP-848
    # group); None where the answer does not say
    member_type: str | None = None
    # a classic member whose metadata or assignment bytes did not decode as the consumer protocol: why
    decode_error: str | None = None
    # a streams group's member (StreamsGroupDescribe), else None: the Kafka Streams client (process) whose thread
    # it is, the topology epoch it runs, and its tasks now (active, standby, warm-up) and in the coordinator's
    # target; member_type "streams" (or "classic": a classic member not upgraded yet)
    process_id: str | None = None
    topology_epoch: int | None = None
    active_tasks: Tasks | None = None
    standby_tasks: Tasks | None = None
    warmup_tasks: Tasks | None = None
    target_active_tasks: Tasks | None = None
    target_standby_tasks: Tasks | None = None
    target_warmup_tasks: Tasks | None = None


@dataclass(frozen=True)
class GroupDescription:
    group: str
    # "classic", "consumer", "streams", "share" as ListGroups v5 names it; "consumer" for a group
    # ConsumerGroupDescribe described; None where the broker did not say (ListGroups before v5, a group it does
    # not list, an error before any answer)
    group_type: str | None
    state: str | None  # the broker's state name ("Stable", "PreparingRebalance", "Empty", "Dead", "Reconciling", ...)
    # DescribeGroups' protocol type ("consumer", "connect", ""); "consumer" for KIP-848, "share", "streams"
    protocol_type: str | None
    # the assignor: ConsumerGroupDescribe's AssignorName ("uniform", "range"), DescribeGroups' protocol
    # ("range", "cooperative-sticky", ...); "" while a classic group has none (Empty); StreamsGroupDescribe's
    # AssignorName (v1+: "sticky"), None from v0
    protocol: str | None
    group_epoch: int | None  # KIP-848 (consumer, share, streams) groups only
    assignment_epoch: int | None  # KIP-848 groups only (the epoch of the target assignment)
    # the group's generation: a KIP-848 (share, streams) group's group epoch; None for classic groups, whose generation id
    # DescribeGroups does not carry (JoinGroup, SyncGroup and __consumer_offsets' group metadata do)
    generation: int | None
    members: tuple[MemberDescription, ...]  # sorted by member id
    # None, or the Kafka error name of the answer for this group (GROUP_ID_NOT_FOUND, NOT_COORDINATOR,
    # COORDINATOR_NOT_AVAILABLE, GROUP_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION, ...)
    error: str | None
    error_message: str | None = None
    api: str | None = None  # the API whose answer this is: ConsumerGroupDescribe, DescribeGroups, FindCoordinator
    api_version: int | None = None
    coordinator: int | None = None  # the node id of the group's coordinator, where found
    # a streams group's (StreamsGroupDescribe): the epoch of the topology the coordinator initialised, None before
    # it has one (and for the other group types)
    topology_epoch: int | None = None


def sorted_partitions(pairs) -> Partitions:
    """(topic, partition) pairs as a sorted tuple of plain (str, int) tuples."""
    return tuple(sorted((str(t), int(p)) for t, p in pairs))


def error_name(code: int) -> str | None:
    """None for 0, else Kafka's name of the error code (kafka-python's table; ERROR_<code> for one it lacks)."""
    if not code:
        return None
    from kafka.errors import UnknownError, for_code

    err = for_code(code)
    if err is UnknownError:  # -1
        return "UNKNOWN_SERVER_ERROR"
    if issubclass(err, UnknownError):  # a code kafka-python's table does not name
        return f"ERROR_{code}"
    return err.message


def failed(group: str, error: str, message: str | None = None, *, api: str, api_version: int | None = None,
           coordinator: int | None = None, group_type: str | None = None) -> GroupDescription:
    """A description that is only an error: nothing of the group is known from this answer."""
    return GroupDescription(group=group, group_type=group_type, state=None, protocol_type=None, protocol=None,
                            group_epoch=None, assignment_epoch=None, generation=None, members=(), error=error,
                            error_message=message or None, api=api, api_version=api_version,
                            coordinator=coordinator)
