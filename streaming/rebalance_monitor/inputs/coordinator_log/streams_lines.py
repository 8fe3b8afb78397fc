"""A streams group's coordinator lines (KIP-1071, Kafka Streams on `group.protocol=streams`; Apache Kafka 4.2 to
4.4's GroupMetadataManager and InternalTopicManager): their patterns and the events each means.

Most of them begin `[GroupId G][MemberId M] ` (the member whose heartbeat the coordinator was handling): every
pattern here reads that prefix itself, so that no consumer-group pattern (`[GroupId G] Member M ...`) takes
`G][MemberId M` for a group name. The lines a streams group shares word for word with a consumer group (the
target assignment, `'sticky'` assignor; the fence on a failed epoch transition within the rebalance timeout)
are the consumer group's rules: the core knows the group's type from its members' joins.

A task is printed `subtopology-partition` (4.4 adds `@epoch`, the epoch it was assigned at): the events carry it
as `[subtopology, partition]`, as the offsets topic's records give it."""
from __future__ import annotations

import re

from rebalance_monitor.core import causes as C
from rebalance_monitor.core.vocabulary import STREAMS_ASSIGNOR, EventType, GroupProtocol

from .fields import fence_cause, host_of, log_event, opt

STREAMS = GroupProtocol.STREAMS.value
GM = r"\[GroupId (?P<group>.+?)\]\[MemberId (?P<mid>[^\]]*)\] "
END = r"\.*\s*$"
TASKS = r"\(active=\[(?P<{k}a>[^\]]*)\], standby=\[(?P<{k}s>[^\]]*)\], warmup=\[(?P<{k}w>[^\]]*)\]\)"

# (kind, regex, handler name): tried before the consumer group's rules
STREAMS_RULES: list[tuple[str, re.Pattern, str]] = [(k, re.compile(p), h) for k, p, h in [
    ("member_joined", GM + rf"(?:Static member (?P<member>\S+) with instance id (?P<inst>\S+) joins|Member joins) "
                           rf"the streams group{END}", "streams_joined"),
    # (4.2 prints `member metdata`)
    ("member_metadata", GM + r"Member updated its member met(?:a)?data to StreamsGroupMember\[(?P<meta>.*)\]" + END,
     "streams_metadata"),
    ("member_left", GM + rf"(?:Static member (?P<member>\S+) with instance id (?P<inst>\S+)|Member (?P<left>\S+)) "
                         rf"left the streams group{END}", "streams_left"),
    ("static_member_replaced", GM + r"Static member with instance id (?P<inst>\S+) re-joins the streams group using "
                                    r"the streams protocol\. Created a new member (?P<new>\S+) to replace the "
                                    rf"existing member (?P<old>\S+?){END}", "streams_replaced"),
    ("member_fenced", r"\[GroupId (?P<group>.+?)\] Streams member (?P<member>\S+) fenced from the group because "
                      rf"(?P<reason>.*?){END}", "streams_fenced"),
    ("epoch_bumped", GM + r"Bumped streams group epoch to (?P<epoch>-?\d+) with metadata hash (?P<hash>-?\d+) and "
                          rf"validated topic epoch (?P<topo>-?\d+){END}", "streams_bumped"),
    ("topology_initialized", GM + rf"Member initialized the topology with epoch (?P<topo>-?\d+){END}",
     "streams_topology"),
    ("assignment_configs_changed", GM + r"Assignment configurations changed to (?P<configs>\{.*\})\. Triggering "
                                        rf"rebalance{END}", "streams_configs"),
    ("streams_member_assignment",
     GM + r"Member's new assignment state: epoch=(?P<epoch>-?\d+), previousEpoch=-?\d+, state=(?P<state>\w+), "
          rf"assignedTasks={TASKS.format(k='t')} and tasksPendingRevocation={TASKS.format(k='r')}{END}",
     "streams_assignment"),
    # counted, no event: a member on an older topology than the group's (its heartbeat answers STALE_TOPOLOGY; no
    # epoch is bumped), or on the group's; the topology's internal topics configured, validated or missing
    ("stale_topology", GM + rf"Member joined with stale topology epoch -?\d+{END}", "none"),
    # (4.2's InternalTopicManager and ChangelogTopics print no prefix)
    ("topology_configured", r"(?:^|\] )(?:Member joined with currently initialized topology |Configuring the topology "
                            r"|Valid topic configuration found |Topic configuration failed for topology epoch "
                            r"|Expecting state changelog topic partitions )", "none"),
    ("streams_state", GM + r"(?:Static member \S+ with instance id \S+ temporarily left the streams group"
                           r"|Shutdown requested for the streams application|Computed new metadata hash)", "none"),
    # the sticky task assignor (WARN) short of processes for the standby replicas asked for
    ("standby_capacity", r"Unable to assign \d+ of \d+ standby tasks for task \[[^\]]*\]\. There is not enough "
                         r"available capacity", "none"),
    ("streams_state", r"^(?:Loaded member \S+ in streams group |\[GroupId .+?\] (?:Clearing shutdown requested for "
                      r"the streams application|Requested topology description push|Could not fence streams member"
                      r"|Converted the empty (?:classic|streams) group to a (?:streams|classic) group))", "none"),
]]

# what a StreamsGroupMember record's `toString` prints (Java records: `name=value, `), read field by field
_META = {k: re.compile(p) for k, p in {
    "member": r"(?:^|, )memberId=(?P<v>[^,]*)",
    "inst": r", instanceId=(?P<v>Optional(?:\.empty|\[[^\]]*\]))",
    "rack": r", rackId=(?P<v>Optional(?:\.empty|\[[^\]]*\]))",
    "client": r", clientId=(?P<v>.*?), clientHost=",
    "host": r", clientHost=(?P<v>.*?), rebalanceTimeoutMs=",
    "rto": r", rebalanceTimeoutMs=(?P<v>-?\d+)",
    "topo": r", topologyEpoch=(?P<v>-?\d+)",
    "process": r", processId=(?P<v>[^,]*)",
    "tags": r", clientTags=\{(?P<v>[^}]*)\}",
}.items()}


def tasks(printed: str) -> list[list]:
    """`0-0@2, 0-1@2` (4.4) or `0-0, 0-1` -> [["0", 0], ["0", 1]]: a subtopology id and a partition."""
    out = []
    for task in printed.split(", "):
        if task:
            sub, part = task.split("@", 1)[0].rsplit("-", 1)
            out.append([sub, int(part)])
    return out


def _tags(printed: str) -> dict:
    """`{k1=v1, k2=v2}`'s inside -> {"k1": "v1", "k2": "v2"}."""
    return dict(kv.split("=", 1) for kv in printed.split(", ") if "=" in kv)


def _join(ts: int, group: str, member: str, reason: str, **fields) -> dict:
    """A streams member's join, as the offsets topic's member metadata gives it."""
    return log_event(EventType.JOIN, ts, group, member_id=member, protocols=[STREAMS_ASSIGNOR], topics=[],
                     group_protocol=STREAMS, reason=reason, **fields)


def streams_events(handler: str, m: re.Match, ts: int) -> list[dict]:
    d = m.groupdict()
    group = d["group"]
    if handler == "streams_joined":
        inst = opt(d.get("inst"))
        return [_join(ts, group, d.get("member") or d["mid"], "joined the streams group", group_instance_id=inst)]
    if handler == "streams_metadata":
        # the member's metadata as the coordinator keeps it (after its join line, and whenever it changes): who
        # it is (client id, host, process, topology epoch, client tags); the same join, told in full
        meta = d["meta"]
        got = {k: found["v"] if (found := p.search(meta)) else None for k, p in _META.items()}
        ev = _join(ts, group, got["member"] or d["mid"], "member metadata updated",
                   group_instance_id=opt(got["inst"]) if got["inst"] else None, client_id=got["client"] or None,
                   host=host_of(got["host"]) or None, process_id=got["process"] or None,
                   rebalance_timeout_ms=int(got["rto"]) if got["rto"] else None,
                   topology_epoch=int(got["topo"]) if got["topo"] else None,
                   client_tags=_tags(got["tags"]) if got["tags"] is not None else None)
        rack = opt(got["rack"]) if got["rack"] else None
        if rack is not None:
            ev["rack"] = rack
        return [ev]
    if handler == "streams_left":
        return [log_event(EventType.MEMBER_REMOVED, ts, group, member_id=d.get("member") or d.get("left") or d["mid"],
                          cause=C.MEMBER_LEFT, reason=None, group_instance_id=opt(d.get("inst")))]
    if handler == "streams_replaced":
        return [log_event(EventType.MEMBER_REMOVED, ts, group, member_id=d["old"], cause=C.STATIC_MEMBER_REPLACED,
                          reason=f"replaced by {d['new']}", group_instance_id=opt(d["inst"]))]
    if handler == "streams_fenced":
        reason = d["reason"]
        return [log_event(EventType.MEMBER_REMOVED, ts, group, member_id=d["member"], cause=fence_cause(reason),
                          reason=reason)]
    if handler == "streams_bumped":
        # the epoch's bump; why (a join, a metadata or topology change, a configuration change) is the line before
        epoch = int(d["epoch"])
        return [log_event(EventType.REBALANCE_STARTED, ts, group, generation=max(epoch - 1, 0),
                          reason=f"streams group epoch bumped to {epoch}", metadata_hash=int(d["hash"]),
                          topology_epoch=int(d["topo"]))]
    if handler == "streams_topology":
        # the group's topology set by this member's heartbeat: the epoch bumped next is its doing
        return [log_event(EventType.REBALANCE_STARTED, ts, group, generation=-1, member_id=d["mid"],
                          reason=f"member initialized the topology with epoch {d['topo']}")]
    if handler == "streams_configs":
        # the group's assignment configurations (`streams.num.standby.replicas`, ...) changed: an operator's
        # doing, which the member whose heartbeat noticed it did not cause (it is named in the reason only)
        out = [log_event(EventType.REBALANCE_STARTED, ts, group, generation=-1,
                         reason=f"assignment configurations changed to {d['configs']} "
                                f"(seen on member {d['mid']}'s heartbeat)")]
        standbys = re.search(r"(?:^|[{,\s])num\.standby\.replicas=(\d+)(?=[,}])", d["configs"])
        if standbys:  # what the task assignor is handed from now on, as the group metadata record says it
            out.insert(0, log_event(EventType.STREAMS_TOPOLOGY, ts, group, num_standby_replicas=int(standbys[1])))
        return out
    if handler == "streams_assignment":
        return [log_event(EventType.SYNC, ts, group, member_id=d["mid"], generation=int(d["epoch"]),
                          protocol=STREAMS_ASSIGNOR, leader=None, assignment=[], member_state=d["state"].lower(),
                          active_tasks=tasks(d["ta"]), standby_tasks=tasks(d["ts"]), warmup_tasks=tasks(d["tw"]))]
    raise AssertionError(handler)
