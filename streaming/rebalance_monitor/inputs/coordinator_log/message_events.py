"""The events each catalogued coordinator message means (`events_for(handler, match, ...)`)."""
from __future__ import annotations

import base64
import re
import uuid

from rebalance_monitor.core import causes as C
from rebalance_monitor.core.vocabulary import SHARE_ASSIGNOR, EventType, GroupProtocol

from .fields import MEMBER_METADATA_RE, added_member, fence_cause, host_of, id_set, leave_cause, opt, reason_member
from .fields import log_event as _ev
from .streams_lines import streams_events


def _partition_of(m: re.Match) -> int:
    d = m.groupdict()
    return int(d.get("p") or d.get("pa") or d.get("pb"))


def _epoch_of(m: re.Match) -> int | None:
    e = m.groupdict().get("e")
    if e is None:
        return None
    e = opt(e)
    return int(e) if e and re.fullmatch(r"-?\d+", e) else None


# a share group's target assignment names its assignor by the object's `toString` (4.x:
# `org.apache.kafka.coordinator.group.assignor.SimpleAssignor@593a38a1`), a consumer group's by its name (`uniform`)
_SIMPLE_ASSIGNOR_RE = re.compile(r"(?:[\w$]+\.)*SimpleAssignor@[0-9a-f]+")


def assignor_name(printed: str) -> str:
    """The assignor's name (`ConsumerGroupPartitionAssignor.name()`) of a printed assignor: Kafka's SimpleAssignor,
    the share groups' own, is `simple` (the name the offsets topic's share records give it)."""
    return SHARE_ASSIGNOR if _SIMPLE_ASSIGNOR_RE.fullmatch(printed) else printed


def topic_id(printed: str) -> str:
    """A topic id as the offsets topic's records give it (`str(uuid.UUID)`), from the log's `Uuid.toString()`
    (22 characters of URL-safe base64); anything else as printed."""
    if re.fullmatch(r"[A-Za-z0-9_-]{22}", printed):
        return str(uuid.UUID(bytes=base64.urlsafe_b64decode(printed + "==")))
    return printed


def events_for(handler: str, m: re.Match, ts: int, broker: int | None,
                ident_partition: int | None = None) -> list[dict]:
    d = m.groupdict()
    group = d.get("group")
    if handler == "none":
        return []
    if handler.startswith("streams_"):
        return streams_events(handler, m, ts)
    if handler == "rebalance":
        reason = d.get("reason") or ""
        events = [_ev(EventType.REBALANCE_STARTED, ts, group, generation=int(d["gen"]), reason=d.get("reason"),
                      member_id=reason_member(reason))]
        added = added_member(reason)
        if added:
            # the member the coordinator just added (2.2-3.x log no separate line for it)
            events.append(_ev(EventType.JOIN, ts, group, member_id=added[0], group_instance_id=opt(added[1]),
                              protocols=[], topics=[], reason="added to the group by the coordinator"))
        reason = d.get("reason") or ""
        sync = re.match(r"Removing (?P<set>.*) on pending sync request expiration", reason, re.S)
        if sync:
            events += [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=mid, cause=C.SYNC_TIMEOUT,
                           reason="did not send SyncGroup in time") for mid in id_set(sync["set"])]
        return events
    if handler == "stabilized":
        # the join phase ended: generation N exists with K members. Reported as completed so that a log without
        # the `Assignment received` line (sampled, grep'd, rotated) still shows the generation; the core takes
        # the second proof of the same generation as a duplicate.
        return [_ev(EventType.GENERATION_COMPLETED, ts, group, generation=int(d["gen"]), protocol=None, leader=None)]
    if handler == "added":
        return [_ev(EventType.JOIN, ts, group, member_id=d["member"], group_instance_id=opt(d.get("inst")),
                    protocols=[], topics=[], reason="added to the group by the coordinator")]
    if handler == "completed":
        return [_ev(EventType.GENERATION_COMPLETED, ts, group, generation=int(d["gen"]), protocol=None,
                    leader=d.get("leader"))]
    if handler == "member_failed":
        return [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=d["member"], cause=C.SESSION_TIMEOUT,
                    reason="heartbeat expiration")]
    if handler == "pending_expired":
        return [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=d["member"], cause=C.JOIN_TIMEOUT,
                    reason="pending member expired before rejoining")]
    if handler == "left_metadata":
        mm = MEMBER_METADATA_RE.search(d["mm"])
        if mm is None:
            raise ValueError("MemberMetadata not parsed")
        reason = d.get("reason")
        ev = _ev(EventType.MEMBER_REMOVED, ts, group, member_id=mm["member"], cause=leave_cause(reason),
                 reason=reason, client_id=mm["client"], host=host_of(mm["host"]))
        ev["group_instance_id"] = opt(mm["inst"])  # known: None means a dynamic member
        return [ev]
    if handler == "left":
        reason = d.get("reason")
        return [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=d["member"], cause=leave_cause(reason),
                    reason=reason, group_instance_id=opt(d.get("inst")))]
    if handler == "static_replaced":
        return [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=d["old"], cause=C.STATIC_MEMBER_REPLACED,
                    reason=f"replaced by {d['new']}" if d.get("new") else "replaced by a new member id",
                    group_instance_id=opt(d["inst"]))]
    if handler in ("join_timeout", "sync_timeout"):
        cause = C.JOIN_TIMEOUT if handler == "join_timeout" else C.SYNC_TIMEOUT
        text = "did not rejoin in time" if handler == "join_timeout" else "did not send SyncGroup in time"
        return [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=mid, cause=cause, reason=text)
                for mid in id_set(d["set"])]
    if handler == "empty":
        return [_ev(EventType.GROUP_EMPTY, ts, group, generation=int(d["gen"]))]
    if handler == "deleted":
        return [_ev(EventType.GROUP_DELETED, ts, group)]
    if handler == "groups_deleted":
        return [_ev(EventType.GROUP_DELETED, ts, g.strip()) for g in d["groups"].split(", ") if g.strip()]
    if handler == "loaded":
        if ident_partition is None:
            return []
        return [_ev(EventType.COORDINATOR_CHANGE, ts, "", partition=ident_partition, action="elected", broker=broker,
                    epoch=None)]
    if handler in ("elected", "resigned"):
        return [_ev(EventType.COORDINATOR_CHANGE, ts, "", partition=_partition_of(m), action=handler, broker=broker,
                    epoch=_epoch_of(m))]
    if handler == "epoch_bumped":
        epoch = int(d["epoch"])
        if d.get("hash") == "0":
            # no subscribed topic has metadata: the last member is gone and the group is empty at this epoch, or
            # (the core tells them apart by its members) a member subscribed to a topic that does not exist yet
            return [_ev(EventType.GROUP_EMPTY, ts, group, generation=epoch)]
        return [_ev(EventType.REBALANCE_STARTED, ts, group, generation=max(epoch - 1, 0),
                    reason=f"group epoch bumped to {epoch}")]
    if handler == "target":
        return [_ev(EventType.GENERATION_COMPLETED, ts, group, generation=int(d["epoch"]),
                    protocol=assignor_name(d["assignor"]), leader=None)]
    if handler == "fenced":
        reason = d["reason"]
        return [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=d["member"], cause=fence_cause(reason), reason=reason)]
    if handler == "share_assignment":
        # `Uuid-partition`: the log names no topic, only its id (as the offsets topic's records whose topic's name
        # is not known yet give it)
        parts = [p.rsplit("-", 1) for p in d["parts"].split(", ") if p]
        return [_ev(EventType.SYNC, ts, group, member_id=d["member"], generation=int(d["epoch"]),
                    protocol=SHARE_ASSIGNOR, leader=None, assignment=[[topic_id(t), int(p)] for t, p in parts],
                    member_state=d["state"].lower())]
    if handler == "joined":
        reason = f"joined using the {d['proto']} protocol" if d.get("proto") else "joined"
        ev = _ev(EventType.JOIN, ts, group, member_id=d["member"], group_instance_id=opt(d.get("inst")),
                 protocols=[], topics=[], reason=reason)
        if d.get("kind") == "share":
            # a share group's member (KIP-932, 4.x `joins the share group using the share protocol`): as the
            # offsets topic gives it, `group_protocol` share and the share groups' assignor, so that the core
            # never judges its generations with a consumer assignor
            ev["group_protocol"] = GroupProtocol.SHARE.value
            ev["protocols"] = [SHARE_ASSIGNOR]
        elif d.get("proto") != "classic":
            # a member of the broker-managed protocol (4.x says `using the consumer protocol`, 3.7-3.9 nothing):
            # it never rejoins, and stays in every new group epoch (one bumped by a metadata change alone
            # names no member) until it leaves or is fenced
            ev["group_protocol"] = GroupProtocol.CONSUMER.value
        return [ev]
    raise AssertionError(handler)
