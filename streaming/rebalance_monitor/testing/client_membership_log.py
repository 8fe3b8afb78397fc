"""What a Kafka 4.4 Java client says of its own membership of a streams group (KIP-1071) or a share group (KIP-932),
read from its log4j2 INFO lines: the clients' own witness of the new group types (scripts/capture_new_group_types.py
captures these lines; tests/witnesses/test_witnesses_new_group_types.py holds them against the broker and the
monitor). Neither client has a rebalance callback the project could instrument without changing it: Kafka Streams'
StreamsRebalanceListener is internal, and the share consumer has none (KIP-932: no assignment callbacks).

The lines (kafka-clients 4.4, logged with the layout `CLIENT_LOG_PATTERN`, the time in epoch milliseconds):

- `[Consumer clientId=C, groupId=G] Member M with epoch E transitioned from S to T.` (StreamsMembershipManager),
  `[ShareConsumer clientId=C, groupId=G] Member M with epoch E transitioned from S to T.` (ShareMembershipManager):
  the member id the coordinator gave the client, and its epoch at each state change; the member is at epoch E
  with its assignment reconciled when it reaches STABLE;
- `[Consumer ...] Assigning active tasks {0_0, 0_1}, standby tasks {}, and warm-up tasks {} to the member.`
  (StreamsMembershipManager, reconciling a streams member's new tasks: `<subtopology>_<partition>`);
- `[ShareConsumer ...] Reconciling assignment with local epoch N` followed by its continuation lines, among them
  `Assigned partitions: [topic-0, topic-1]` (ShareMembershipManager);
- `Created new process id: P` / `Reading process id P from the state directory` (Kafka Streams' StateDirectory):
  the process id every member of the instance reports (one log file per instance).

A member's epoch bump that changes nothing it owns is not logged at INFO: its view keeps the epoch it reached
STABLE at (`client_view` reports that epoch; a witness comparing epochs says so).
"""
from __future__ import annotations

import re

# the log4j2 layout the capture gives the clients: the time in epoch milliseconds, the level, the message, the logger
CLIENT_LOG_PATTERN = "[%d{UNIX_MILLIS}] %p %m (%c)%n"
LOG4J2_PROPERTIES = "\n".join((
    "status = error", "appender.out.type = Console", "appender.out.name = OUT",
    "appender.out.layout.type = PatternLayout", f"appender.out.layout.pattern = {CLIENT_LOG_PATTERN}",
    "rootLogger.level = WARN", "rootLogger.appenderRef.out.ref = OUT",
    "logger.streams.name = org.apache.kafka.clients.consumer.internals.StreamsMembershipManager",
    "logger.streams.level = INFO",
    "logger.share.name = org.apache.kafka.clients.consumer.internals.ShareMembershipManager",
    "logger.share.level = INFO",
    "logger.state.name = org.apache.kafka.streams.processor.internals.StateDirectory",
    "logger.state.level = INFO", ""))

_LINE = re.compile(r"^\[(?P<ts>\d{10,})\] (?P<level>[A-Z]+) (?P<msg>.*)$")
_CLIENT = re.compile(r"^\[(?:Share)?Consumer clientId=(?P<client>[^,\]]+), groupId=(?P<group>[^\]]+)\] (?P<rest>.*)$")
_TRANSITION = re.compile(r"^Member (?P<member>\S+) with epoch (?P<epoch>-?\d+) transitioned from (?P<src>[A-Z_]+) "
                         r"to (?P<dst>[A-Z_]+)\.")
_TASKS = re.compile(r"^Assigning active tasks \{(?P<active>[^}]*)\}, standby tasks \{(?P<standby>[^}]*)\}, and "
                    r"warm-up tasks \{(?P<warmup>[^}]*)\} to the member")
_SHARE_RECONCILING = re.compile(r"^Reconciling assignment with local epoch (?P<epoch>\d+)")
_SHARE_ASSIGNED = re.compile(r"^\s*Assigned partitions:\s*\[(?P<parts>[^\]]*)\]")
_PROCESS = re.compile(r"(?:Created new process id: |Reading process id )(?P<pid>[0-9a-f-]{36})")


def membership_lines(text: str) -> list[str]:
    """The lines of a client's log this module reads (the rest dropped: what the capture keeps)."""
    out, continuing = [], False
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            msg = m["msg"]
            c = _CLIENT.match(msg)
            rest = c["rest"] if c else ""
            continuing = bool(c and _SHARE_RECONCILING.match(rest))
            if _PROCESS.search(msg) or (c and (_TRANSITION.match(rest) or _TASKS.match(rest) or continuing)):
                out.append(line)
        elif continuing and _SHARE_ASSIGNED.match(line):
            out.append(line)
    return out


def _tasks(text: str) -> list[list]:
    """`0_0, 1_2` as sorted [subtopology, partition] pairs."""
    pairs = [t.strip().rsplit("_", 1) for t in text.split(",") if t.strip()]
    return sorted([sub, int(p)] for sub, p in pairs)


def _partitions(text: str) -> list[list]:
    """`orders-0, orders-1` as sorted [topic, partition] pairs."""
    pairs = [t.strip().rsplit("-", 1) for t in text.split(",") if t.strip()]
    return sorted([topic, int(p)] for topic, p in pairs)


def client_view(lines, until_ms: int | None = None) -> dict:
    """One client process's view of its membership from its log lines up to `until_ms` (all when None):
    {member id: {"client_id", "group", "epoch" (the last it reached STABLE at), "state" (its last), "process_id"
    (a streams instance's, else None), and its assignment as last reconciled: "active", "standby", "warmup" (a
    streams member's [subtopology, partition] pairs) or "partitions" (a share member's [topic, partition] pairs)}}.
    A member that left (UNSUBSCRIBED after LEAVING) or was fenced is reported in that state."""
    members: dict[str, dict] = {}
    by_client: dict[str, str] = {}
    process_id = None
    pending_share: str | None = None  # the client whose `Reconciling assignment` lines follow
    for line in lines:
        m = _LINE.match(line)
        if m is None:
            a = _SHARE_ASSIGNED.match(line)
            if a and pending_share and pending_share in by_client:
                members[by_client[pending_share]]["partitions"] = _partitions(a["parts"])
            continue
        if until_ms is not None and int(m["ts"]) > until_ms:
            break
        pending_share = None
        p = _PROCESS.search(m["msg"])
        if p:
            process_id = p["pid"]
            for v in members.values():
                v["process_id"] = process_id
            continue
        c = _CLIENT.match(m["msg"])
        if c is None:
            continue
        rest, client = c["rest"], c["client"]
        t = _TRANSITION.match(rest)
        if t:
            v = members.setdefault(t["member"], {"client_id": client, "group": c["group"], "epoch": None,
                                                  "process_id": process_id})
            by_client[client] = t["member"]
            v["state"] = t["dst"]
            if t["dst"] == "STABLE":
                v["epoch"] = int(t["epoch"])
            continue
        k = _TASKS.match(rest)
        if k and client in by_client:
            members[by_client[client]].update(active=_tasks(k["active"]), standby=_tasks(k["standby"]),
                                              warmup=_tasks(k["warmup"]))
            continue
        if _SHARE_RECONCILING.match(rest):
            pending_share = client
    return members
