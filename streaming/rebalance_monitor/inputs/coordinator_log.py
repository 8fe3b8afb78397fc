"""Decoder for Kafka broker group-coordinator log lines (every release from 0.9 to 4.x).

Input: one log line, bare or wrapped in a JSON object by a log shipper (Filebeat, Fluent Bit, Vector...):
the line is taken from `message` (else `log`, `msg`) and the time from `@timestamp`, `timestamp`, `time` or
`ts` (ISO-8601, or epoch milliseconds; a number below 10^11 is taken as epoch seconds).

Event time, first that applies: the wrapper's timestamp; the log4j timestamp at the start of the line
(`[2024-01-02 03:04:05,678]`, also without brackets or with `T`/`.`); the record timestamp passed in.
Kafka's default log4j layout (`[%d] %p %m (%c)%n`) prints the broker's local time without a zone: it is read
as UTC unless the line carries an explicit offset (`Z`, `+02:00`). Run brokers in UTC, or ship logs with a
zoned timestamp, to get exact times.

Coordinator lines are those of the classic coordinator (`[GroupCoordinator 1]: ...`,
`[GroupMetadataManager brokerId=1] ...`, loggers `kafka.coordinator.group.*`) and of the new one
(`[GroupCoordinator id=1 topic=__consumer_offsets partition=7] ...`, loggers
`org.apache.kafka.coordinator.group.*`). Any other line gives `skipped=True`. A coordinator line that matches
no known message gives `rejected_reason="unparsed_coordinator_line"`, except DEBUG/TRACE lines, which are
skipped. Known messages that carry no rebalance event (start-up, loading progress, ...) give no events and
a `record_type` for counting.

Message -> event mapping (wording of every release accepted; see docs/inputs.md):

* `Preparing to restabilize|rebalance group G [in state S] with old generation N [(__consumer_offsets-P)]
  [(reason: R)]` -> `rebalance_started` (generation N, reason R).
* `Assignment received from leader [L] for group G for generation N[. The group has K members, ...]` ->
  `generation_completed` (the moment the generation becomes Stable and is written to __consumer_offsets);
  `Stabilized group G generation N ...` (the end of the join phase) -> `generation_completed` without a
  leader too, so that a log without the first line still shows the generation (the core takes the second
  proof of one generation as a duplicate).
* `Pending dynamic member with id M joins group G ... Adding to the group now`, the static member's
  `Created a new member id M for this member and added to the group`, and a rebalance reason `Adding new
  member M with group instance id I` -> `join` of M (no protocols or topics); every rebalance reason's member
  (`Leader M re-joining`, `Removing member M on ...`, ...) -> `member_id` of `rebalance_started`.
* `Member M in group G has failed, removing it from the group` -> `member_removed` cause `session_timeout`.
* `Pending member M in group G has been removed after session timeout expiration` -> `join_timeout`.
* LeaveGroup (all wordings, incl. `MemberMetadata(...)` and `client reason: R`) -> `member_removed`, cause
  `member_left` unless the client reason names a poll timeout / admin removal.
* Static member replaced -> `member_removed` cause `static_member_replaced` for the old member id.
* `Group G removed dynamic members who haven't joined: Set(...)` -> `join_timeout` per member;
  `... haven't sent their sync request(s): ...` and the reason `Removing Set(...) on pending sync request
  expiration` -> `sync_timeout` per member.
* `Group G with generation N is now empty` -> `group_empty`; `Group G generation N is dead and removed`,
  `Group G transitioned to Dead in generation N`, `The following groups were deleted: ...` -> `group_deleted`.
* `Elected as / Resigned as the group coordinator for partition P [in epoch E]`, the loading / unloading of
  offsets partitions (`Scheduling loading of offsets and group metadata from __consumer_offsets-P`, ...) ->
  `coordinator_change` with `group` "" (every group of that partition).
* KIP-848: `[GroupId G] Bumped group epoch to E[ with metadata hash H].` -> `rebalance_started` (generation
  E-1); `Computed a new target assignment for epoch E with 'A' assignor` -> `generation_completed` (protocol
  A); `Member M fenced from the group because ...` -> `member_removed` (`session_timeout`; `poll_timeout` for
  a failed epoch transition; `join_timeout` / `sync_timeout` for classic members); `Member M left the consumer group` -> `member_left`;
  `Member M joins the consumer group` -> `join` (protocols and topics unknown in the log: empty lists;
  `group_protocol` `consumer` unless the line says `using the classic protocol`). An epoch bumped `with
  metadata hash 0` -> `group_empty` (no subscribed topic has metadata: usually the last member left; the core
  takes it for a rebalance while a KIP-848 member is still in, whose topic does not exist yet).
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from rebalance_monitor.core import causes as C
from rebalance_monitor.core.causes import classify_reason
from rebalance_monitor.core.vocabulary import EventType
from rebalance_monitor.inputs.decoded import Decoded

UNPARSED = "unparsed_coordinator_line"
_MAX_TS = 1 << 53

# --- line anatomy -----------------------------------------------------------------------------------------
_TS_RE = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})(?:[,.](?P<frac>\d{1,9}))?"
    r"(?:\s?(?P<zone>Z|[+-]\d{2}:?\d{2})(?![\d:]))?")
_LEVEL_RE = re.compile(r"(?:^|[\s\]|])(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b")
_IDENT_RE = re.compile(
    r"\[(?:GroupCoordinator(?: id=(?P<b1>\d+)| (?P<b2>\d+))?(?: topic=(?P<topic>\S+) partition=(?P<part>\d+))?"
    r"|GroupMetadataManager brokerId=(?P<b3>\d+)|Group Metadata Manager on Broker (?P<b4>\d+))\]:?\s*")
_LOGGER_RE = re.compile(r"\s*\((?P<logger>(?:kafka|org\.apache\.kafka)(?:\.[\w$]+)+)(?::\d+)?\)(?:\s*\[[^\]]*\])?\s*$")
_COORD_LOGGER_RE = re.compile(r"^(?:kafka\.coordinator\.(?:group\.|GroupCoordinator|GroupMetadataManager)"
                              r"|org\.apache\.kafka\.coordinator\.group\.)")


def _parse_iso_ms(text: str) -> int | None:
    m = _TS_RE.search(text)
    if m is None:
        return None
    return _match_ms(m)


def _match_ms(m: re.Match) -> int | None:
    try:
        dt = datetime.strptime(f"{m['date']} {m['time']}", "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    frac = m["frac"] or "0"
    micros = int((frac + "000000")[:6])
    zone = m["zone"]
    if zone is None or zone == "Z":
        tz = timezone.utc
    else:
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        from datetime import timedelta
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))
    ms = int(dt.replace(microsecond=micros, tzinfo=tz).timestamp() * 1000)
    return ms if 0 <= ms < _MAX_TS else None


def _wrapper_ts(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        ms = int(value * 1000) if abs(value) < 1e11 else int(value)
        return ms if 0 <= ms < _MAX_TS else None
    if isinstance(value, str):
        s = value.strip()
        if re.fullmatch(r"\d+(\.\d+)?", s):
            return _wrapper_ts(float(s) if "." in s else int(s))
        return _parse_iso_ms(s)
    return None


def _unwrap(value) -> tuple[str, int | None] | None:
    """(line, wrapper timestamp) — None when the value is a JSON object without a log line in it."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8", errors="replace")
    text = value.strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            return text, None
        if not isinstance(obj, dict):
            return text, None
        line = next((obj[k] for k in ("message", "log", "msg") if isinstance(obj.get(k), str)), None)
        if line is None:
            return None
        ts = None
        for k in ("@timestamp", "timestamp", "time", "ts"):
            if k in obj:
                ts = _wrapper_ts(obj[k])
                if ts is not None:
                    break
        return line.strip(), ts
    return text, None


# --- small parsers ----------------------------------------------------------------------------------------
def _opt(value: str | None) -> str | None:
    """Scala Option / Java Optional printing: `Some(x)` / `Optional[x]` -> x; `None`, `null`,
    `Optional.empty` -> None; anything else as is."""
    if value is None:
        return None
    v = value.strip()
    if v in ("None", "null", "Optional.empty", "OptionalInt.empty", ""):
        return None
    if v.startswith("Some(") and v.endswith(")"):
        return v[5:-1]
    m = re.fullmatch(r"Optional(?:Int)?\[(.*)\]", v)
    return m.group(1) if m else v


def _id_set(text: str) -> list[str]:
    """`Set(a, b)`, `HashSet(a)`, `[a, b]`, `{a, b}` -> [a, b]."""
    t = text.strip().rstrip(".")
    m = re.fullmatch(r"(?:\w*Set)?[(\[{](.*)[)\]}]", t)
    inner = m.group(1) if m else t
    return [x.strip() for x in inner.split(",") if x.strip()]


_MEMBER_METADATA_RE = re.compile(
    r"MemberMetadata\(memberId=(?P<member>.*?), groupInstanceId=(?P<inst>.*?), clientId=(?P<client>.*?), "
    r"clientHost=(?P<host>.*?), sessionTimeoutMs=(?P<st>-?\d+), rebalanceTimeoutMs=(?P<rt>-?\d+), "
    r"supportedProtocols=(?P<protos>.*?)\)")


def _host(h: str | None) -> str | None:
    if h is None:
        return None
    return h[1:] if h.startswith("/") else h


# Who a coordinator's rebalance reason names (the member id may hold spaces, quotes, slashes, parentheses:
# each pattern is anchored on the words after the id, not on the id's characters). First match wins.
_REASON_MEMBER_RES = [re.compile(p, re.S) for p in [
    r"^Adding new (?:static )?member (?P<m>.+?) with group instance id ",
    r"^Leader (?P<m>.+?) re-joining group during ",
    r"^Updating metadata for (?:static )?member (?P<m>.+?)(?: with instance id .+?)? during ",
    r"^Removing member (?P<m>.+?) on (?:LeaveGroup|heartbeat expiration|pending join)",
    r"^removing member (?P<m>.+?) on (?:LeaveGroup|heartbeat expiration|pending join)",
    r"^explicit `LeaveGroup` request for \((?P<m>.+)\) members\.?",
    r"^(?:Static member|member) (?P<m>.+?) (?:has been removed|failed|left)",
    r"^Removing member (?P<m>.+?) (?:with group instance id .+? )?on ",
    r"^Removing (?P<m>(?:\w*Set)?[(\[{].*?[)\]}]) on pending sync request expiration",
]]


def reason_member(reason: str | None) -> str | None:
    """The member a coordinator's rebalance reason names: `Adding new member M with group instance id I`,
    `Leader M re-joining group during Stable`, `Updating metadata for member M during S`, `Removing member M on
    LeaveGroup`, `explicit `LeaveGroup` request for (M) members` (the first when several), ... — None when the
    reason names no member. The client's part (`; client reason: ...`) is never searched."""
    if not reason:
        return None
    own = reason.split("; client reason: ", 1)[0]
    for pattern in _REASON_MEMBER_RES:
        m = pattern.search(own)
        if m is None:
            continue
        found = m["m"].strip()
        if found[:1] in "[({" and found[-1:] in "])}" or found.startswith(("Set(", "HashSet(")):
            ids = _id_set(found)
            return ids[0] if ids else None
        if ", " in found and pattern.pattern.startswith("^explicit"):
            return found.split(", ")[0]
        return found or None
    return None


def _leave_cause(reason: str | None) -> str:
    c = classify_reason(reason)
    return c if c in (C.POLL_TIMEOUT, C.ADMIN_REMOVAL, C.SESSION_TIMEOUT, C.STATIC_MEMBER_REPLACED) else C.MEMBER_LEFT


def _fence_cause(reason: str) -> str:
    r = reason.lower()
    if "transition from epoch" in r:
        # KIP-848: the member did not revoke / acknowledge within the rebalance timeout, which the Java
        # consumer sets to max.poll.interval.ms (revocation runs inside poll()): a poll timeout.
        return C.POLL_TIMEOUT
    c = classify_reason(reason)
    return c if c != C.UNKNOWN else C.SESSION_TIMEOUT if "session" in r else C.UNKNOWN


# --- message catalogue --------------------------------------------------------------------------------
G = r"(?P<group>.+?)"
GEN = r"(?P<gen>-?\d+)"
TP = r"(?: \((?:__consumer_offsets)-(?P<p>\d+)\))?"
PARTITION = r"(?:\[__consumer_offsets,(?P<pa>\d+)\]|__consumer_offsets-(?P<pb>\d+))"
END = r"\.*\s*$"

# (kind, regex, handler name) — handlers below turn a match into events
_RULES: list[tuple[str, re.Pattern, str]] = [(k, re.compile(p), h) for k, p, h in [
    ("rebalance_started",
     rf"Preparing to (?:rebalance|restabilize) group {G}(?: in state (?P<state>\w+))? with old generation {GEN}"
     rf"{TP}(?: \(reason: (?P<reason>.*)\))?{END}", "rebalance"),
    ("assignment_received",
     rf"Assignment received from leader(?: (?P<leader>\S+))? for group {G} for generation {GEN}"
     r"(?:\. The group has (?P<n>\d+) members, (?P<static>\d+) of which are static)?" + END, "completed"),
    ("stabilized", rf"Stabilized group {G} generation {GEN}{TP}(?: with (?P<n>\d+) members)?{END}", "stabilized"),
    ("member_added", rf"Pending dynamic member with id (?P<member>.+?) joins group {G} in (?P<state>\w+) state\. "
                     rf"Adding to the group now{END}", "added"),
    ("member_added", rf"Static member with groupInstanceId=(?P<inst>.+?) and unknown member id joins group {G} in "
                     rf"(?P<state>\w+) state\. Created a new member id (?P<member>.+?) for this member and "
                     rf"add(?:ed)? to the group{END}", "added"),
    ("member_failed", rf"Member (?P<member>\S+) in group {G} has failed, removing it from the group{END}",
     "member_failed"),
    ("pending_member_expired",
     rf"Pending member (?P<member>\S+) in group {G} has been removed after session timeout expiration{END}",
     "pending_expired"),
    ("member_left", rf"Member (?P<mm>MemberMetadata\(.*\)) has left group {G} through explicit `LeaveGroup`"
                    rf"(?: request|; client reason: (?P<reason>.*?))?\s*$", "left_metadata"),
    ("member_left", r"Member\[group\.instance\.id (?P<inst>.*?), member\.id (?P<member>\S+)\] in group "
                    rf"{G} has left, removing it from the group{END}", "left"),
    ("member_left", rf"Member (?P<member>\S+) in group {G} has left, removing it from the group{END}", "left"),
    ("member_left", rf"Pending member (?P<member>\S+) is leaving group {G}{END}", "left"),
    ("member_left", rf"Pending member with memberId=(?P<member>\S+) has left group {G} through explicit "
                    rf"`LeaveGroup` request{END}", "left"),
    ("member_left", r"\[Group (?P<group>.+?)\] (?:Dynamic |Pending )?[Mm]ember (?P<member>\S+) has left group "
                    rf"through explicit `LeaveGroup` request(?:; client reason: (?P<reason>.*?))?\s*$", "left"),
    ("member_left", r"\[Group (?P<group>.+?)\] Static [Mm]ember (?P<member>\S+) with instance id (?P<inst>\S+) "
                    rf"has left group through explicit `LeaveGroup` request(?:; client reason: (?P<reason>.*?))?\s*$",
     "left"),
    ("static_member_replaced",
     rf"Static member (?P<inst>\S+) of group {G} with unknown member id rejoins, assigning new member id "
     rf"(?P<new>\S+), while old member id (?P<old>\S+) will be removed{END}", "static_replaced"),
    ("static_member_replaced",
     rf"Static member with groupInstanceId=(?P<inst>\S+) and unknown member id joins group {G} in "
     rf"(?P<state>\w+) state\. Replacing previously mapped member (?P<old>\S+) with this groupInstanceId{END}",
     "static_replaced"),
    ("static_member_replaced",
     r"\[GroupId (?P<group>.+?)\] Static member with instance id (?P<inst>\S+) re-joins the (?:consumer|streams) "
     r"group(?: using the \w+ protocol)?\. Created a new member (?P<new>\S+) to replace the existing member "
     rf"(?P<old>\S+?){END}", "static_replaced"),
    ("static_member_replaced_no_group",
     r"Static member (?P<inst>\S+) with unknown member id rejoins, assigning new member id (?P<new>\S+), "
     rf"while old member (?P<old>\S+) will be removed{END}", "none"),
    ("join_timeout", rf"Group {G} removed dynamic members who haven't joined: (?P<set>.*?){END}", "join_timeout"),
    ("sync_timeout", rf"Group {G} removed members who haven't sent their sync requests?: (?P<set>.*?){END}",
     "sync_timeout"),
    ("group_empty", rf"Group {G} with generation {GEN} is now empty{TP}{END}", "empty"),
    ("group_dead", rf"Group {G} generation {GEN} is dead and removed{END}", "deleted"),
    ("group_dead", rf"Group {G} transitioned to Dead in generation {GEN}{END}", "deleted"),
    ("groups_deleted", r"The following groups were deleted: (?P<groups>.*?)\. A total of \d+ offsets were removed"
                       + END, "groups_deleted"),
    ("groups_deleted", rf"The following groups were deleted: (?P<groups>.*?){END}", "groups_deleted"),
    ("coordinator_elected", r"Elected as the group coordinator for partition (?P<p>\d+)(?: in epoch (?P<e>-?\d+))?"
                            + END, "elected"),
    ("coordinator_resigned", r"Resign(?:ed|ing) as the group coordinator for partition (?P<p>\d+)"
                             rf"(?: in epoch (?P<e>-?\d+|\S+))?{END}", "resigned"),
    ("partition_loading", rf"Scheduling loading of (?:offsets and group )?metadata from {PARTITION}"
                          rf"(?: (?:for|with) epoch (?P<e>-?\d+))?{END}", "elected"),
    ("partition_loading", rf"^Loading offsets and group metadata from {PARTITION}{END}", "elected"),
    # 4.x: the new coordinator logs no election or loading line at INFO; a group loaded from its
    # __consumer_offsets partition (the line's prefix names it) proves this broker took the partition over
    ("group_loaded", rf"^Loaded (?:consumer|classic|share|streams) group {G} with -?\d+ members{END}", "loaded"),
    ("partition_unloading", rf"Scheduling unloading of (?:offsets and group )?metadata (?:from|for) {PARTITION}"
                            rf"(?: (?:for|with) epoch (?P<e>.*?))?{END}", "resigned"),
    ("partition_unloading", rf"Removed \d+ cached groups for {PARTITION} on follower transition{END}", "resigned"),
    # KIP-848 (consumer / share / streams groups)
    ("epoch_bumped", r"\[GroupId (?P<group>.+?)\] Bumped group epoch to (?P<epoch>-?\d+)"
                     rf"(?: with metadata hash (?P<hash>-?\d+))?{END}", "epoch_bumped"),
    ("target_assignment", r"\[GroupId (?P<group>.+?)\] Computed a new target assignment for epoch (?P<epoch>-?\d+) "
                          r"with '(?P<assignor>[^']*)' assignor in (?P<ms>\d+) ?ms(?::.*)?" + END, "target"),
    ("member_fenced", r"\[GroupId (?P<group>.+?)\] Member (?P<member>\S+) fenced from the group because "
                      rf"(?P<reason>.*?){END}", "fenced"),
    ("member_left", r"\[GroupId (?P<group>.+?)\] Member (?P<member>\S+) left the (?:consumer|share|streams) group"
                    + END, "left"),
    ("member_left", r"\[GroupId (?P<group>.+?)\] Static [Mm]ember (?P<member>\S+) with instance id (?P<inst>\S+) "
                    rf"left the (?:consumer|streams) group{END}", "left"),
    ("member_joined", r"\[GroupId (?P<group>.+?)\] (?:Static )?[Mm]ember (?P<member>\S+)(?: with instance id "
                      r"(?P<inst>\S+))? joins the (?:consumer|share|streams) group(?: using the (?P<proto>\w+) "
                      rf"protocol)?{END}", "joined"),
]]

# Coordinator messages that carry no rebalance event: recognised and counted only.
_KNOWN_NO_EVENT = [re.compile(p) for p in [
    r"^(?:Starting up|Startup complete|Shutting down|Shutdown complete)\.?$",
    r"(?:Dynamic|Static) [Mm]ember (?:with )?.*unknown member id (?:joins|rejoins)",
    r"Adding new static member \S+ to group",
    r"Static member .*(?:will not trigger|joins during)",
    r"Request memberId=\S+ for static member with groupInstanceId=.* is fenced by",
    r"(?:Un)?[Ll]oading group metadata for .* with generation -?\d+",
    r"\[GroupId=.*\] Unload(?:ed|ing) group metadata for (?:group epoch|generation)",
    r"Finished (?:un)?loading ",
    r"(?:Already loading|Not loading|Not removing|Offset load from|Attempted to load) ",
    r"Removed -?\d+ (?:expired offsets|offsets associated|cached offsets)",
    r"The following offsets of the group .* were deleted",
    r"could not complete rebalance because no members rejoined",
    r"Attempt to add rejoining member",
    r"(?:Setting|Sending) empty assignments? ",
    r"Failed to (?:write empty metadata|persist metadata)",
    r"Received (?:unexpected )?notification of (?:heartbeat|sync) expiration",
    r"Member id \S+ was not found in .* during heartbeat",
    r"Member \S+ has already been removed from the group",
    r"Group leader \[memberId: .*\] failed to join before the rebalance timeout",
    r"Group .* is dead, skipping rebalance stage",
    r"\[GroupId .*\] (?:Computed new subscription metadata|Member \S+ updated its subscribed topics"
    r"|Member \S+ new assignment state|Member \S+ transitioned from|Dynamic member with unknown member id"
    r"|Static member \S+ with instance id \S+ (?:cannot join|is fenced)"
    r"|Static Member \S+ with instance id \S+ temporarily left|Creating a simple consumer group"
    r"|Could not fence|Received .*)",
    r"Cannot (?:downgrade|upgrade) ",
    r"Generated \d+ tombstone records",
    r"Skipped the materialization",
    r"has received offset commits from consumers as well as transactional producers",
    r"Loaded (?:offsets and group )?metadata from .* with buffer larger",
    r"Unknown (?:message key|record type)",
    r"is no longer a coordinator for the group",
    r"has moved away from \d+ after transaction marker",
    r"(?:Started unloading|Ignored (?:load completion|loading|unloading)|The coordinator .* is already"
    r"|Closing coordinator runtime|Coordinator runtime (?:closed|is already)|The write event |Failed to enqueue)",
    r"Group coordinator is already ",
    r"Static member .* loaded with member id \S+ at generation -?\d+",
    r"Loading group metadata for .* with generation|Group .* is over capacity",
]]


def _ev(etype: str, ts: int, group: str, **fields) -> dict:
    ev = {"v": 1, "type": etype, "ts": ts, "group": group}
    ev.update({k: v for k, v in fields.items() if v is not None or k in ("protocol", "leader", "reason")})
    return ev


def _partition_of(m: re.Match) -> int:
    d = m.groupdict()
    return int(d.get("p") or d.get("pa") or d.get("pb"))


def _epoch_of(m: re.Match) -> int | None:
    e = m.groupdict().get("e")
    if e is None:
        return None
    e = _opt(e)
    return int(e) if e and re.fullmatch(r"-?\d+", e) else None


def _events_for(handler: str, m: re.Match, ts: int, broker: int | None,
                ident_partition: int | None = None) -> list[dict]:
    d = m.groupdict()
    group = d.get("group")
    if handler == "none":
        return []
    if handler == "rebalance":
        reason = d.get("reason") or ""
        events = [_ev(EventType.REBALANCE_STARTED, ts, group, generation=int(d["gen"]), reason=d.get("reason"),
                      member_id=reason_member(reason))]
        added = re.match(r"Adding new (?:static )?member (?P<m>.+?) with group instance id (?P<inst>.+?)(?:;|$)",
                         reason, re.S)
        if added:
            # the member the coordinator just added (3.x logs no separate line for it)
            events.append(_ev(EventType.JOIN, ts, group, member_id=added["m"], group_instance_id=_opt(added["inst"]),
                                 protocols=[], topics=[], reason="added to the group by the coordinator"))
        reason = d.get("reason") or ""
        sync = re.search(r"Removing (?P<set>.*) on pending sync request expiration", reason)
        if sync:
            events += [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=mid, cause=C.SYNC_TIMEOUT,
                           reason="did not send SyncGroup in time") for mid in _id_set(sync["set"])]
        return events
    if handler == "stabilized":
        # the join phase ended: generation N exists with K members. Reported as completed so that a log without
        # the `Assignment received` line (sampled, grep'd, rotated) still shows the generation; the core takes
        # the second proof of the same generation as a duplicate.
        return [_ev(EventType.GENERATION_COMPLETED, ts, group, generation=int(d["gen"]), protocol=None, leader=None)]
    if handler == "added":
        return [_ev(EventType.JOIN, ts, group, member_id=d["member"], group_instance_id=_opt(d.get("inst")),
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
        mm = _MEMBER_METADATA_RE.search(d["mm"])
        if mm is None:
            raise ValueError("MemberMetadata not parsed")
        reason = d.get("reason")
        ev = _ev(EventType.MEMBER_REMOVED, ts, group, member_id=mm["member"], cause=_leave_cause(reason),
                 reason=reason, client_id=mm["client"], host=_host(mm["host"]))
        ev["group_instance_id"] = _opt(mm["inst"])  # known: None means a dynamic member
        return [ev]
    if handler == "left":
        reason = d.get("reason")
        return [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=d["member"], cause=_leave_cause(reason),
                    reason=reason, group_instance_id=_opt(d.get("inst")))]
    if handler == "static_replaced":
        return [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=d["old"], cause=C.STATIC_MEMBER_REPLACED,
                    reason=f"replaced by {d['new']}" if d.get("new") else "replaced by a new member id",
                    group_instance_id=_opt(d["inst"]))]
    if handler in ("join_timeout", "sync_timeout"):
        cause = C.JOIN_TIMEOUT if handler == "join_timeout" else C.SYNC_TIMEOUT
        text = "did not rejoin in time" if handler == "join_timeout" else "did not send SyncGroup in time"
        return [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=mid, cause=cause, reason=text)
                for mid in _id_set(d["set"])]
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
        return [_ev(EventType.GENERATION_COMPLETED, ts, group, generation=int(d["epoch"]), protocol=d["assignor"],
                    leader=None)]
    if handler == "fenced":
        reason = d["reason"]
        return [_ev(EventType.MEMBER_REMOVED, ts, group, member_id=d["member"], cause=_fence_cause(reason), reason=reason)]
    if handler == "joined":
        reason = f"joined using the {d['proto']} protocol" if d.get("proto") else "joined"
        ev = _ev(EventType.JOIN, ts, group, member_id=d["member"], group_instance_id=_opt(d.get("inst")),
                 protocols=[], topics=[], reason=reason)
        if d.get("proto") != "classic":
            # a member of the broker-managed protocol (4.x says `using the consumer protocol`, 3.7-3.9 nothing):
            # it never rejoins, and stays in every new group epoch (one bumped by a metadata change alone
            # names no member) until it leaves or is fenced
            ev["group_protocol"] = "consumer"
        return [ev]
    raise AssertionError(handler)


def decode_log_record(value: bytes | str, record_ts_ms: int | None = None) -> Decoded:
    """Decode one broker log line (bare or JSON-wrapped) into canonical events. Never raises."""
    try:
        return _decode(value, record_ts_ms)
    except (ValueError, TypeError, OverflowError, RecursionError, AttributeError) as exc:
        return Decoded([], rejected_reason=UNPARSED, detail=f"{type(exc).__name__}: {exc}"[:300])


def _decode(value, record_ts_ms) -> Decoded:
    if value is None:
        return Decoded([], skipped=True)
    unwrapped = _unwrap(value)
    if unwrapped is None:
        return Decoded([], skipped=True, detail="JSON without a message/log field")
    line, wrapper_ts = unwrapped
    if "\n" in line:
        line = line.splitlines()[0]

    ident = _IDENT_RE.search(line)
    logger_m = _LOGGER_RE.search(line)
    logger = logger_m["logger"] if logger_m else None
    if ident is None and not (logger and _COORD_LOGGER_RE.match(logger)):
        return Decoded([], skipped=True)
    if ident is not None and ident.group(0).startswith("[GroupCoordinator id=") and ident["topic"] \
            and ident["topic"] != "__consumer_offsets":
        return Decoded([], skipped=True)

    head = line[: ident.start()] if ident else line[:80]
    level_m = _LEVEL_RE.search(head)
    level = level_m["level"] if level_m else None
    message = line[ident.end():] if ident else line
    if logger_m is not None:
        end = logger_m.start() - (ident.end() if ident else 0)
        message = message[: max(end, 0)]
    message = message.strip()

    broker = None
    if ident is not None:
        b = ident["b1"] or ident["b2"] or ident["b3"] or ident["b4"]
        broker = int(b) if b else None

    for kind, pattern, handler in _RULES:
        m = pattern.search(message)
        if m is None:
            continue
        ts = wrapper_ts
        if ts is None:
            tm = _TS_RE.search(head)
            ts = _match_ms(tm) if tm else None
        if ts is None:
            ts = record_ts_ms if isinstance(record_ts_ms, int) and 0 <= record_ts_ms < _MAX_TS else None
        if ts is None:
            return Decoded([], rejected_reason="no_timestamp", record_type=f"log:{kind}",
                           detail="no timestamp in the wrapper, the line or the record")
        part = int(ident["part"]) if ident is not None and ident["part"] else None
        events = _events_for(handler, m, ts, broker, part)
        return Decoded(events, record_type=f"log:{kind}")

    for pattern in _KNOWN_NO_EVENT:
        if pattern.search(message):
            return Decoded([], record_type="log:other")
    if level in ("DEBUG", "TRACE"):
        return Decoded([], skipped=True, detail="unrecognised DEBUG/TRACE coordinator line")
    return Decoded([], rejected_reason=UNPARSED, detail=message[:300])
