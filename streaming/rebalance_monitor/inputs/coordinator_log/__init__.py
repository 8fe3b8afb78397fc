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
  member M[ with group instance[ ]id I]` (2.2 / 2.3-2.4 / 2.5+) -> `join` of M (no protocols or topics); every
  rebalance reason's member (`[Ll]eader M re-joining`, `Updating metadata for member M`, `Removing member M on
  ...`, ...) -> `member_id` of `rebalance_started`. A classic member id is the client id (any characters:
  kafka-go's has spaces and parentheses) and a UUID: patterns anchor it on the words that follow it.
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
* The broker's start-up line `Kafka version: X` (logger AppInfoParser) -> `broker_release` with `group` ""
  (every group: the KIP-848 server assignors follow that release's rules; broker_info.py).
* KIP-848: `[GroupId G] Bumped group epoch to E[ with metadata hash H].` -> `rebalance_started` (generation
  E-1); `Computed a new target assignment for epoch E with 'A' assignor` -> `generation_completed` (protocol
  A); `Member M fenced from the group because ...` -> `member_removed` (`session_timeout`; `poll_timeout` for
  a failed epoch transition; `join_timeout` / `sync_timeout` for classic members); `Member M left the consumer group` -> `member_left`;
  `Member M joins the consumer group` -> `join` (protocols and topics unknown in the log: empty lists;
  `group_protocol` `consumer` unless the line says `using the classic protocol`). An epoch bumped `with
  metadata hash 0` -> `group_empty` (no subscribed topic has metadata: usually the last member left; the core
  takes it for a rebalance while a KIP-848 member is still in, whose topic does not exist yet).
* KIP-932 (share groups, 4.x): `Member M joins the share group using the share protocol` -> `join` with
  `group_protocol` `share` and `protocols` `["simple"]` (a share member, as `__consumer_offsets` gives it);
  `Member M new assignment state: epoch=E, ..., assignedPartitions=[T-p, ...]` (a share member's: a consumer
  member's also names revoked partitions, and is only counted) -> `sync` of epoch E, the partitions by topic id
  (in the offsets topic's form);
  `Member M left the share group` -> `member_left`. The epoch bump, the fence on session expiry and the target
  assignment are the consumer group's lines (events above: the core knows the group's type from its members);
  the target assignment names the share groups' assignor by its object (`...SimpleAssignor@h`): protocol `simple`.
* KIP-1071 (streams groups, 4.2-4.4; streams_lines.py): `[GroupId G][MemberId M] Member joins the streams group`
  -> `join` (`group_protocol` `streams`, `protocols` `["sticky"]`); `Member updated its member metadata to
  StreamsGroupMember[...]` -> the same `join` with client id, host, process, topology epoch, client tags;
  `Member initialized the topology` / `Assignment configurations changed to {...}` -> `rebalance_started` (cause
  `topology_change` naming M / `assignment_config_change`); `Bumped streams group epoch to E ...` ->
  `rebalance_started` (generation E-1); `Member's new assignment state: ... assignedTasks=(active=[...],
  standby=[...], warmup=[...]) ...` -> `sync` of epoch E with its tasks; `Streams member M fenced ... session
  expired` -> `session_timeout`; `Member M left the streams group` -> `member_left`.

The package: `line.py` (a line's anatomy, JSON wrappers), `fields.py` (what the messages print: optionals,
member sets, causes), `messages.py` (the catalogue of messages; a streams group's in `streams_lines.py`, with their events), `message_events.py` (the events of each message);
this module reads one line with them.
"""
from __future__ import annotations

from rebalance_monitor.decoding.decoded import Decoded

from .line import COORD_LOGGER_RE, IDENT_RE, LEVEL_RE, LOGGER_RE, line_ts, unwrap
from .message_events import events_for
from .fields import reason_member  # noqa: F401 (API)
from .messages import KNOWN_NO_EVENT, RULES
from .broker_info import APP_INFO_LOGGERS, broker_release_events

__all__ = ["UNPARSED", "decode_log_record", "reason_member"]

UNPARSED = "unparsed_coordinator_line"


def decode_log_record(value: bytes | str, record_ts_ms: int | None = None) -> Decoded:
    """Decode one broker log line (bare or JSON-wrapped) into canonical events. Never raises."""
    try:
        return _decode(value, record_ts_ms)
    except (ValueError, TypeError, OverflowError, RecursionError, AttributeError) as exc:
        return Decoded([], rejected_reason=UNPARSED, detail=f"{type(exc).__name__}: {exc}"[:300])


def _decode(value, record_ts_ms) -> Decoded:
    if value is None:
        return Decoded([], skipped=True)
    unwrapped = unwrap(value)
    if unwrapped is None:
        return Decoded([], skipped=True, detail="JSON without a message/log field")
    line, wrapper_ts = unwrapped
    if "\n" in line:
        line = line.splitlines()[0]

    ident = IDENT_RE.search(line)
    logger_m = LOGGER_RE.search(line)
    logger = logger_m["logger"] if logger_m else None
    if logger in APP_INFO_LOGGERS and ident is None:  # the broker's release, as it starts (broker_info.py)
        return _broker_info(line[:logger_m.start()], wrapper_ts, record_ts_ms)
    if ident is None and not (logger and COORD_LOGGER_RE.match(logger)):
        return Decoded([], skipped=True)
    if ident is not None and ident.group(0).startswith("[GroupCoordinator id=") and ident["topic"] \
            and ident["topic"] != "__consumer_offsets":
        return Decoded([], skipped=True)

    head = line[: ident.start()] if ident else line[:80]
    level_m = LEVEL_RE.search(head)
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

    for kind, pattern, handler in RULES:
        m = pattern.search(message)
        if m is None:
            continue
        ts = line_ts(wrapper_ts, head, record_ts_ms)
        if ts is None:
            return Decoded([], rejected_reason="no_timestamp", record_type=f"log:{kind}",
                           detail="no timestamp in the wrapper, the line or the record")
        part = int(ident["part"]) if ident is not None and ident["part"] else None
        events = events_for(handler, m, ts, broker, part)
        return Decoded(events, record_type=f"log:{kind}")

    for pattern in KNOWN_NO_EVENT:
        if pattern.search(message):
            return Decoded([], record_type="log:other")
    if level in ("DEBUG", "TRACE"):
        return Decoded([], skipped=True, detail="unrecognised DEBUG/TRACE coordinator line")
    return Decoded([], rejected_reason=UNPARSED, detail=message[:300])


def _broker_info(line: str, wrapper_ts, record_ts_ms) -> Decoded:
    events = broker_release_events(line, line[:80], wrapper_ts, record_ts_ms)
    if events is None:  # (the commit id, the start time, the app-info MBean lines: not the monitor's)
        return Decoded([], skipped=True)
    if not events:
        return Decoded([], rejected_reason="no_timestamp", record_type="log:broker_release",
                       detail="no timestamp in the wrapper, the line or the record")
    return Decoded(events, record_type="log:broker_release")
