"""A Kafka Streams application in a streams group (KIP-1071, `group.protocol=streams`) on a real Apache Kafka 4.4
broker: the broker's settings for short streams sessions, the project's Streams test application's instances
(streaming/java/test-programs/streams-test-app: stock Kafka Streams 4.4; its `topology=count` is stateful, so a
group with standby replicas assigns standby tasks), what Kafka's own
streams group tool (`kafka-streams-groups --describe`, StreamsGroupCommand) says of the group, and the group's
configuration changed with Kafka's config tool (`kafka-configs --entity-type groups`).

A freshly formatted 4.4 cluster finalises the `streams.version` feature at level 1 (streams groups on, as
`share.version` is): no feature needs enabling (an older cluster upgraded to 4.4 would need
`kafka-features upgrade --feature streams.version=1`)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing.kafka_install import classpath, java_binary

SESSION_MS = 6000
# the broker's streams group settings: 6 s sessions (Kafka: 45 s), 1 s heartbeats, the first target assignment
# at once (Kafka waits group.streams.initial.rebalance.delay.ms, 3 s)
STREAMS_BROKER_SETTINGS = {
    "group.streams.session.timeout.ms": str(SESSION_MS), "group.streams.min.session.timeout.ms": "1000",
    "group.streams.heartbeat.interval.ms": "1000", "group.streams.min.heartbeat.interval.ms": "500",
    "group.streams.initial.rebalance.delay.ms": "0",
}


def _java(*args: str) -> list[str]:
    return [java_binary(), "-Xmx128m", "-cp", classpath(), *args]


def start_instance(bootstrap: str, app_id: str, client_id: str, topics: tuple[str, str], work: Path,
                   threads: int = 1, **extra: str):
    """One instance (a Kafka Streams client, a JVM of its own session) of the test application in `app_id`'s
    streams group: its StreamThreads are the group's members, client ids `<client_id>-StreamThread-N-consumer`.
    SIGTERM closes it leaving the group; `extra` are further Streams properties."""
    props = {"application.id": app_id, "bootstrap.servers": bootstrap, "client.id": client_id,
             "group.protocol": "streams", "num.stream.threads": str(threads),
             "state.dir": str(work / f"state-{client_id}"), "input.topic": topics[0], "output.topic": topics[1],
             **extra}
    return jt.streams_app(props, work / f"{client_id}.properties", (), work / f"{client_id}.log")


def _table(bootstrap: str, group: str, *what: str) -> list[dict]:
    """StreamsGroupCommand's table as rows of {column: cell} (the last column keeps its spaces)."""
    done = subprocess.run(_java("org.apache.kafka.tools.streams.StreamsGroupCommand", "--bootstrap-server",
                                bootstrap, "--describe", "--group", group, *what, "--verbose"),
                          capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    header = next((line.split() for line in lines if line.startswith("GROUP ")), None)
    if header is None:
        return []
    return [dict(zip(header, line.split(None, len(header) - 1))) for line in lines
            if line.startswith(group + " ")]


def _tasks(cell: str) -> dict[str, set]:
    """The ASSIGNMENTS cell (`ACTIVE: 0:[0,1] 1:[2]; STANDBY: 0:[3]; TARGET-ACTIVE: ...; `) -> {"active":
    {("0", 0), ...}, "standby": ..., "warmup": ...}: the member's own tasks, not its target's."""
    out = {"active": set(), "standby": set(), "warmup": set()}
    for label, body in re.findall(r"([A-Z-]+): ([^;]*);", cell):
        kind = label.lower()
        if kind in out:
            for sub, parts in re.findall(r"(\S+?):\[([\d,]*)\]", body):
                out[kind].update((sub, int(p)) for p in parts.split(",") if p)
    return out


def described_members(bootstrap: str, group: str) -> dict[str, dict]:
    """member id -> {client_id, process, member_epoch, target_epoch, active / standby / warmup: {(subtopology,
    partition)}} as the broker describes the group's members."""
    out = {}
    for row in _table(bootstrap, group, "--members"):
        out[row["MEMBER"]] = {"client_id": row["CLIENT-ID"], "process": row["PROCESS"],
                              "member_epoch": int(row["MEMBER-EPOCH"]),
                              "target_epoch": int(row["TARGET-ASSIGNMENT-EPOCH"]),
                              **_tasks(row.get("ASSIGNMENTS", ""))}
    return out


def described_state(bootstrap: str, group: str) -> dict:
    """The group's row of `--state`: {"state", "group_epoch", "target_epoch", "members"} (the columns 4.4 prints)."""
    rows = _table(bootstrap, group, "--state")
    if not rows:
        return {}
    row = rows[0]
    return {"state": row.get("STATE"), "group_epoch": int(row.get("GROUP-EPOCH", -1)),
            "target_epoch": int(row.get("TARGET-ASSIGNMENT-EPOCH", -1)), "members": int(row.get("#MEMBERS", -1))}


def set_group_config(bootstrap: str, group: str, key: str, value: str) -> None:
    """`kafka-configs --alter --entity-type groups --entity-name G --add-config key=value` (ConfigCommand)."""
    done = subprocess.run(_java("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap, "--alter",
                                "--entity-type", "groups", "--entity-name", group, "--add-config",
                                f"{key}={value}"), capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or "Completed updating config" not in done.stdout:
        raise RuntimeError(f"kafka-configs failed: {done.stdout[-1000:]}{done.stderr[-1000:]}")
