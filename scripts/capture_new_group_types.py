"""Capture what a real Apache Kafka 4.4 broker and real clients record of a streams group (KIP-1071) and a share
group (KIP-932), into tests/witnesses/data-new-group-types/<kafka version>/ (the test data of
tests/witnesses/test_witnesses_new_group_types.py, which replays it offline):

    PYTHON=.venv/bin/python PYTHONPATH=streaming .venv/bin/python scripts/capture_new_group_types.py [--out DIR]

The streams group: three instances of the project's Kafka Streams test application (its stateful `count`
topology, one StreamThread each) join one after another; one is killed with `kill -9` (fenced when its session
runs out); the group's `streams.num.standby.replicas` is set to 1; one closes gracefully; the last closes. The
share group: Kafka's console share consumer, `share-a` then `share-b`; `share-a` killed with `kill -9`; `share-c`
joins and then closes (a leave); `share-b` closes. Both on one broker with 6 s sessions.

At each stable point (the broker's tools show every member at the group's epoch holding its target assignment,
and the clients' own logs agree, or a time out) three views are kept in `truth.json`: what the clients said of
their membership (testing/client_membership_log.py, from their log4j2 INFO lines, kept in `clients/`), what Kafka's
group tools (`kafka-streams-groups` / `kafka-share-groups --describe`) and the monitor's own StreamsGroupDescribe /
ShareGroupDescribe (broker_facts.describe) said. Beside it, as scripts/capture_witnesses.py writes them:
`coordinator.log`, `offsets.jsonl`, `topic_ids.json`.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the real-broker tests' harnesses (tests/helpers)

STREAMS, SHARE = "wit-streams", "wit-share"
STREAMS_TOPICS, STREAMS_PARTITIONS = ("wit-streams-in", "wit-streams-out"), 4
SHARE_TOPIC, SHARE_PARTITIONS = "wit-share-orders", 2


def _described(bootstrap: str, group: str) -> dict:
    """The monitor's own description (StreamsGroupDescribe / ShareGroupDescribe through describe_groups)."""
    from kafka.admin import KafkaAdminClient

    from rebalance_monitor.broker_facts.describe import describe_groups

    client = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="rm-witness-describe", request_timeout_ms=15000)
    try:
        return asdict(describe_groups(client, [group])[group])
    finally:
        client.close()


def _json_tasks(tasks) -> list:
    return sorted([sub, int(p)] for sub, p in tasks)


class Run:
    """One group's scenario: its clients' processes and logs, and the stable points seen."""

    def __init__(self, bootstrap: str, group: str, work: Path):
        self.bootstrap, self.group, self.work = bootstrap, group, work
        self.procs: dict[str, subprocess.Popen] = {}
        self.actions: list[dict] = []
        self.stable: list[dict] = []

    def log(self, client: str) -> Path:
        return self.work / f"{client}.log"

    def clients_view(self, until_ms: int | None = None) -> dict:
        """The members the live clients report, by member id (a killed or closed client is no member)."""
        from rebalance_monitor.testing.client_membership_log import client_view

        out = {}
        for client, proc in self.procs.items():
            if proc.poll() is not None:
                continue
            for mid, v in client_view(self.log(client).read_text(errors="replace").splitlines(), until_ms).items():
                if v.get("state") not in ("UNSUBSCRIBED", "FENCED", "LEAVING", "PREPARE_LEAVING"):
                    out[mid] = {**v, "instance": client}
        return out

    def act(self, action: str, client: str, **extra) -> None:
        self.actions.append({"action": action, "client": client, "ts": int(time.time() * 1000), **extra})

    def point(self, step: str, tool_members, tool_state, agree, timeout_s: float = 40.0) -> None:
        """A stable point: the tool's view (given), then the clients' (waiting for them to agree), then the monitor's
        describe; kept with the time each was taken."""
        deadline = time.monotonic() + timeout_s
        clients = self.clients_view()
        while not agree(clients, tool_members) and time.monotonic() < deadline:
            time.sleep(0.5)
            clients = self.clients_view()
        ts = int(time.time() * 1000)
        described = _described(self.bootstrap, self.group)
        alive = sorted(c for c, p in self.procs.items() if p.poll() is None)
        self.stable.append({"step": step, "ts": ts, "alive": alive,
                            "clients": clients, "clients_agree": bool(agree(clients, tool_members)),
                            "tool": {"state": list(tool_state), "members": tool_members}, "describe": described})
        print(f"{self.group} {step}: epoch {tool_state[1]}, {len(tool_members)} members, clients agree: "
              f"{self.stable[-1]['clients_agree']}", file=sys.stderr)


def _streams_tool(bootstrap: str, clients: list[str], min_epoch: int = 0):
    """(members, state) as kafka-streams-groups describes them once `clients`' members alone are in, each at the
    target epoch with its target tasks, every task active once; None before."""
    from helpers import streams_group_kafka as sk

    st = sk.state(bootstrap, STREAMS)
    if st is None or st[0] != "Stable" or st[1] != st[2] or st[1] < min_epoch:
        return None
    ms = sk.members(bootstrap, STREAMS)
    names = sorted(m["client_id"] for m in ms.values())
    active = sorted(t for m in ms.values() for t in m["tasks"].get("active", ()))
    ok = names == sorted(f"{c}-StreamThread-1-consumer" for c in clients) and all(
        m["epoch"] == st[2] and all(m["tasks"].get(k, set()) == m["tasks"].get(f"target-{k}", set())
                                    for k in ("active", "standby", "warmup")) for m in ms.values()) \
        and active == [("0", p) for p in range(STREAMS_PARTITIONS)]
    if not ok:
        return None
    return ({mid: {"client_id": m["client_id"], "epoch": m["epoch"], "process_id": m["process_id"],
                   **{k: _json_tasks(m["tasks"].get(k, ())) for k in ("active", "standby", "warmup")}}
             for mid, m in ms.items()}, st)


def _streams_agree(clients: dict, tool: dict) -> bool:
    keys = ("client_id", "process_id", "active", "standby", "warmup")
    return set(clients) == set(tool) and all(
        {k: clients[m].get(k) for k in keys} == {k: tool[m][k] for k in keys} for m in tool)


def run_streams(bootstrap: str, work: Path) -> dict:
    from helpers import streams_group_kafka as sk
    from helpers.eventually import eventually
    from helpers.java_telemetry import kill_hard, stop_gracefully

    run = Run(bootstrap, STREAMS, work)

    def settle(clients, step, min_epoch=0):
        ms, st = eventually(lambda: _streams_tool(bootstrap, clients, min_epoch), 150,
                            lambda: f"{step}: {sk.members(bootstrap, STREAMS)} {sk.state(bootstrap, STREAMS)}")
        run.point(step, ms, st, _streams_agree)
        return st

    try:
        for i, c in enumerate(("s-a", "s-b", "s-c")):
            run.act("start", c)
            run.procs[c] = sk.start_instance(bootstrap, STREAMS, c, STREAMS_TOPICS, work, topology="count")
            settle(["s-a", "s-b", "s-c"][:i + 1], ("one", "two", "three")[i])
        victim = next(m for m, v in run.stable[-1]["clients"].items() if v["instance"] == "s-c")
        run.act("kill_9", "s-c", member_id=victim)
        kill_hard(run.procs["s-c"])
        st = settle(["s-a", "s-b"], "fenced")
        run.act("set_config", "", config={"streams.num.standby.replicas": "1"})
        sk.set_group_config(bootstrap, STREAMS, "streams.num.standby.replicas", "1")
        settle(["s-a", "s-b"], "standby", min_epoch=st[1] + 1)
        leaver = next(m for m, v in run.stable[-1]["clients"].items() if v["instance"] == "s-b")
        run.act("close", "s-b", member_id=leaver)
        stop_gracefully(run.procs["s-b"])
        settle(["s-a"], "scale_in")
        run.act("close", "s-a", member_id=next(iter(run.stable[-1]["clients"]), None))
        stop_gracefully(run.procs["s-a"])
        final = eventually(lambda: (s := sk.state(bootstrap, STREAMS)) and s[0] == "Empty" and s, 60, "streams empty")
    finally:
        for p in run.procs.values():
            if p.poll() is None:
                kill_hard(p)
    return {"group": STREAMS, "group_type": "streams", "topics": list(STREAMS_TOPICS), "actions": run.actions,
            "stable": run.stable, "final_state": list(final), "cleanup_ms": int(time.time() * 1000),
            "clients": sorted(run.procs)}


def _share_cmd(bootstrap: str, client: str) -> list[str]:
    from rebalance_monitor.testing.kafka_install import classpath, java_binary

    return [java_binary(), "-Xmx256m", "-cp", classpath(), "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
            "--bootstrap-server", bootstrap, "--topic", SHARE_TOPIC, "--group", SHARE,
            "--command-property", f"client.id={client}"]


def _share_tool(bootstrap: str, clients: list[str]):
    """(members, state) as kafka-share-groups describes them once `clients` alone are in, each at the group's
    epoch, every partition assigned; None before."""
    import re

    from rebalance_monitor.testing.kafka_install import classpath, java_binary

    def table(what):
        done = subprocess.run([java_binary(), "-Xmx256m", "-cp", classpath(),
                               "org.apache.kafka.tools.consumer.group.ShareGroupCommand", "--bootstrap-server",
                               bootstrap, "--describe", "--group", SHARE, what, "--verbose"],
                              capture_output=True, text=True, timeout=120)
        return [line.split() for line in done.stdout.splitlines() if line.startswith(SHARE + " ")]

    rows = table("--state")
    if not rows:
        return None
    st = (rows[0][-4], int(rows[0][-3]), int(rows[0][-2]), int(rows[0][-1]))
    if st[0] != "Stable" or st[1] != st[2]:
        return None
    ms = {}
    for row in table("--members"):
        parts = []
        for topic, ps in re.findall(r"([^,:]+):([\d,]+)", row[6] if len(row) > 6 else ""):
            parts += [[topic, int(p)] for p in ps.split(",")]
        ms[row[1]] = {"client_id": row[3], "epoch": int(row[5]), "partitions": sorted(parts)}
    every = sorted(p for m in ms.values() for p in m["partitions"])
    ok = sorted(m["client_id"] for m in ms.values()) == sorted(clients) and \
        all(m["epoch"] == st[1] for m in ms.values()) and \
        sorted(map(tuple, every)) == [(SHARE_TOPIC, p) for p in range(SHARE_PARTITIONS)]
    return (ms, st) if ok else None


def _share_agree(clients: dict, tool: dict) -> bool:
    return set(clients) == set(tool) and all(
        (clients[m]["client_id"], clients[m].get("epoch"), clients[m].get("partitions")) ==
        (tool[m]["client_id"], tool[m]["epoch"], tool[m]["partitions"]) for m in tool)


def run_share(bootstrap: str, work: Path) -> dict:
    from helpers.eventually import eventually
    from helpers.java_telemetry import kill_hard, stop_gracefully

    run = Run(bootstrap, SHARE, work)

    def start(client):
        run.act("start", client)
        run.procs[client] = subprocess.Popen(_share_cmd(bootstrap, client), stdout=open(run.log(client), "w"),
                                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True)

    def settle(clients, step):
        ms, st = eventually(lambda: _share_tool(bootstrap, clients), 120, f"share group: {step}")
        run.point(step, ms, st, _share_agree)

    def member_of(client):
        return next(m for m, v in run.stable[-1]["clients"].items() if v["instance"] == client)

    try:
        start("share-a")
        settle(["share-a"], "one")
        start("share-b")
        settle(["share-a", "share-b"], "two")
        run.act("kill_9", "share-a", member_id=member_of("share-a"))
        kill_hard(run.procs["share-a"])
        settle(["share-b"], "fenced")
        start("share-c")
        settle(["share-b", "share-c"], "rejoined")
        run.act("close", "share-c", member_id=member_of("share-c"))
        stop_gracefully(run.procs["share-c"])
        settle(["share-b"], "left")
        run.act("close", "share-b", member_id=member_of("share-b"))
        stop_gracefully(run.procs["share-b"])
        time.sleep(3)
    finally:
        for p in run.procs.values():
            if p.poll() is None:
                kill_hard(p)
    return {"group": SHARE, "group_type": "share", "topics": [SHARE_TOPIC], "actions": run.actions,
            "stable": run.stable, "cleanup_ms": int(time.time() * 1000), "clients": sorted(run.procs)}


def main(argv=None) -> int:
    from helpers import streams_group_kafka as sk
    from helpers.share_broker import SHARE_BROKER_SETTINGS

    from rebalance_monitor.inputs.topic_ids import cluster_lookup
    from rebalance_monitor.kafka_connection import KafkaConnection
    from rebalance_monitor.testing.broker import Broker
    from rebalance_monitor.testing.client_membership_log import LOG4J2_PROPERTIES, membership_lines
    from rebalance_monitor.testing.kafka_install import KAFKA_VERSION
    from rebalance_monitor.testing.witnesses import offsets_dump_lines, read_topic

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "tests" / "witnesses" / "data-new-group-types" / KAFKA_VERSION))
    ap.add_argument("--work", default=None, help="where the clients' full logs go (default: a fresh temp dir)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    (out / "clients").mkdir(parents=True, exist_ok=True)
    import tempfile

    work = Path(args.work or tempfile.mkdtemp(prefix="rm-capture-new-types-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    broker = Broker(settings={**sk.STREAMS_BROKER_SETTINGS, **SHARE_BROKER_SETTINGS}).start()
    try:
        broker.create_topics({STREAMS_TOPICS[0]: STREAMS_PARTITIONS, STREAMS_TOPICS[1]: 1,
                              SHARE_TOPIC: SHARE_PARTITIONS})
        (work / "client-log4j2.properties").write_text(LOG4J2_PROPERTIES)
        # the clients' log layout and levels (the broker, started before, keeps its own)
        os.environ["JAVA_TOOL_OPTIONS"] = f"-Dlog4j2.configurationFile={work / 'client-log4j2.properties'}"
        truth = {"streams": run_streams(broker.bootstrap, work), "share": run_share(broker.bootstrap, work)}
        os.environ.pop("JAVA_TOOL_OPTIONS")
        truth["session_timeout_ms"] = {"streams": sk.SESSION_MS, "share": int(SHARE_BROKER_SETTINGS[
            "group.share.session.timeout.ms"])}
        truth["kafka"] = KAFKA_VERSION
        time.sleep(3)
        groups = (STREAMS, SHARE)
        log = [line for line in broker.coordinator_log.read_text(errors="replace").splitlines()
               if any(g in line for g in groups) or "Elected" in line or "Resigned" in line]
        (out / "coordinator.log").write_text("\n".join(log) + "\n")
        offsets = read_topic(broker.bootstrap, "__consumer_offsets")
        (out / "offsets.jsonl").write_text("\n".join(offsets_dump_lines(
            [r for r in offsets if r[0] is not None and any(g.encode() in r[0] for g in groups)])) + "\n")
        topics = {*STREAMS_TOPICS, SHARE_TOPIC, f"{STREAMS}-counts-changelog"}
        ids = {tid: name for tid, name in cluster_lookup(KafkaConnection(broker.bootstrap))().items() if name in topics}
        (out / "topic_ids.json").write_text(json.dumps(ids, indent=1, sort_keys=True) + "\n")
        for t in ("streams", "share"):
            for client in truth[t]["clients"]:
                text = (work / f"{client}.log").read_text(errors="replace")
                (out / "clients" / f"{client}.log").write_text("\n".join(membership_lines(text)) + "\n")
        truth["capture_wall_s"] = round(time.monotonic() - started, 1)
        (out / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
        print(f"captured into {out} in {truth['capture_wall_s']} s (clients' full logs: {work})", file=sys.stderr)
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
