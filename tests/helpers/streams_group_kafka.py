"""A streams group (KIP-1071) on a real Apache Kafka 4.4 broker, for the tests that watch one: a broker of its own
with short streams sessions, instances of the project's Kafka Streams test application on `group.protocol=streams`
(streaming/java/test-programs/streams-test-app), and what Kafka's own streams group tool
(`kafka-streams-groups --describe`, org.apache.kafka.tools.streams.StreamsGroupCommand) says of the group.

A fresh 4.4 cluster has the streams protocol on: its `streams.version` feature is finalised at 1 when the storage
is formatted (kafka-features describe, 2026-11-27), so the broker needs no setting but the sessions'."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from rebalance_monitor.config import load_config
from rebalance_monitor.decoding.reference import decode_record
from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing.broker import Broker
from rebalance_monitor.testing.kafka_install import classpath, java_binary
from rebalance_monitor.testing.witnesses import read_topic

from helpers.replay import group_records

SESSION_MS = 6000
STREAMS_BROKER_SETTINGS = {
    "group.streams.session.timeout.ms": str(SESSION_MS), "group.streams.min.session.timeout.ms": "1000",
    "group.streams.heartbeat.interval.ms": "1000", "group.streams.min.heartbeat.interval.ms": "500",
}
TOOL = "org.apache.kafka.tools.streams.StreamsGroupCommand"
_TASKS = re.compile(r"([^\s:;\[\]]+):\[([\d,]*)\]")
_KIND = re.compile(r"([A-Z][A-Z-]*):(?!\[)")


def streams_broker() -> Broker:
    """A started broker of its own (the shared ones keep Kafka's 45 s streams session); the caller stops it."""
    return Broker(settings=dict(STREAMS_BROKER_SETTINGS)).start()


def module_broker(topics: tuple[str, str], partitions: int):
    """A module fixture's body: `streams_broker()` with the application's input topic (`partitions`) and output
    topic (one partition), stopped when the module is done (`yield from module_broker(...)`)."""
    b = streams_broker()
    try:
        b.create_topics({topics[0]: partitions, topics[1]: 1})
        yield b
    finally:
        b.stop()


def end_scenario(procs: dict, broker, work: Path) -> None:
    """A scenario's cleanup: any instance still running killed, and the coordinator's log as the scenario left it
    kept beside the instances' logs (`work`, under pytest's basetemp)."""
    from helpers.java_telemetry import kill_hard

    for p in procs.values():
        if p.poll() is None:
            kill_hard(p)
    (work / "coordinator.log").write_bytes(broker.coordinator_log.read_bytes())


def active_tasks_of(members: dict) -> dict:
    """member id -> its sorted active tasks, of members as the broker describes them (`{"tasks": {"active": ...}}`)."""
    return {mid: sorted(m["tasks"].get("active", ())) for mid, m in members.items()}


def held_before(gens: list, gen: dict, member: str) -> int:
    """How many active tasks `member` held in the generation before `gen` (what its departure hands to others);
    at least one, or the departure tells nothing."""
    before = max((g for g in gens if g["generation"] < gen["generation"]), key=lambda g: g["generation"])
    n = len(before["tasks"][member]["active"])
    assert n >= 1, before
    return n


def start_instance(bootstrap: str, app_id: str, client_id: str, topics: tuple[str, str], work: Path,
                   threads: int = 1, **extra: str):
    """One instance (a process of its own session) of the test application in group `app_id` on the streams
    protocol: `topics` (input, output), `threads` StreamThreads (each a member, `<client_id>-StreamThread-N-consumer`),
    its state, properties and log under `work`; SIGTERM closes it leaving the group."""
    props = {"application.id": app_id, "bootstrap.servers": bootstrap, "client.id": client_id,
             "group.protocol": "streams", "num.stream.threads": str(threads),
             "state.dir": str(work / f"state-{client_id}"),
             "input.topic": topics[0], "output.topic": topics[1], **extra}
    return jt.streams_app(props, work / f"{client_id}.properties", (), work / f"{client_id}.log")


def _describe(bootstrap: str, group: str, what: str) -> list[list[str]]:
    done = subprocess.run([java_binary(), "-Xmx256m", "-cp", classpath(), TOOL, "--bootstrap-server", bootstrap,
                           "--describe", "--group", group, what, "--verbose"],
                          capture_output=True, text=True, timeout=120)
    return [line.split() for line in done.stdout.splitlines() if line.startswith(group + " ")]


def parse_tasks(text: str) -> dict[str, set]:
    """The tool's ASSIGNMENTS cell as {kind: {(subtopology, partition)}}, kinds lower-cased (`active`,
    `target-active`, `standby`, ...). The tool ends each subtopology's list with `;`
    (`ACTIVE: 0:[0,2]; 1:[0,2]; TARGET-ACTIVE: 0:[0,2]; 1:[0,2]; ...`): a kind's tasks run to the next kind."""
    out: dict[str, set] = {}
    marks = list(_KIND.finditer(text))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        tasks = out.setdefault(mark.group(1).lower(), set())
        for sub, parts in _TASKS.findall(text[mark.end():end]):
            tasks.update((sub, int(p)) for p in parts.split(",") if p)
    return out


def members(bootstrap: str, group: str) -> dict:
    """member id -> {"client_id", "epoch", "process_id", "tasks": parse_tasks(...)} as the broker describes them
    (columns: group, target assignment epoch, topology epoch, member, protocol, member epoch, process, client id,
    assignments)."""
    out = {}
    for row in _describe(bootstrap, group, "--members"):
        out[row[3]] = {"client_id": row[7], "epoch": int(row[5]), "process_id": row[6],
                       "tasks": parse_tasks(" ".join(row[8:]))}
    return out


def state(bootstrap: str, group: str) -> tuple[str, int, int, int] | None:
    """(state, group epoch, target assignment epoch, members) as the broker describes the group; None before it
    exists."""
    rows = _describe(bootstrap, group, "--state")
    if not rows:
        return None
    row = rows[0]
    return row[-4], int(row[-3]), int(row[-2]), int(row[-1])


def replay(bootstrap: str, group: str, **overrides) -> list[dict]:
    """The core's records of `group` from `__consumer_offsets` (replay, no Spark); `overrides`: of the monitor's
    configuration (e.g. `{"core.kip848_session_timeout": "6s"}`: the brokers' session, which the broker poller
    would have told a running monitor)."""
    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10, **overrides})
    events = []
    for key, value, ts in read_topic(bootstrap, "__consumer_offsets"):
        evs, _rejects = decode_record("offsets-topic", value, key=key, ts_ms=ts, topic_names={})
        events.extend(e for e in evs if e.group in (group, ""))
    return group_records(events, cfg, group)


def log_replay(broker, group: str) -> list[dict]:
    """The core's records of `group` from the broker's coordinator log alone (every line decoded, none rejected)."""
    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10})
    events = []
    for line in broker.coordinator_log.read_text(errors="replace").splitlines():
        parsed, rejects = decode_record("coordinator-log", line)
        assert not rejects, (rejects, line)
        events.extend(e for e in parsed if e.group in (group, ""))
    return group_records(events, cfg, group)


def set_group_config(bootstrap: str, group: str, key: str, value: str) -> None:
    """`kafka-configs --alter --entity-type groups --entity-name G --add-config key=value` (ConfigCommand), e.g. a
    group's `streams.num.standby.replicas` (the coordinator bumps the epoch on its next heartbeat: `Assignment
    configurations changed to {...}`)."""
    done = subprocess.run([java_binary(), "-Xmx128m", "-cp", classpath(), "org.apache.kafka.tools.ConfigCommand",
                           "--bootstrap-server", bootstrap, "--alter", "--entity-type", "groups", "--entity-name",
                           group, "--add-config", f"{key}={value}"], capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or "Completed updating config" not in done.stdout:
        raise RuntimeError(f"kafka-configs failed: {done.stdout[-1000:]}{done.stderr[-1000:]}")
