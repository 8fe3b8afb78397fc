"""The witnesses of a streams group (KIP-1071) and a share group (KIP-932) on what a real Apache Kafka 4.4 broker and
real clients recorded (tests/witnesses/data-new-group-types/4.4.0/, captured by scripts/capture_new_group_types.py;
replayed here, no broker): at every stable point of each group, the epoch, the members (member ids, client ids,
a streams member's process id) and each member's tasks or partitions are the same in

- what the clients saw (their own membership lines, clients/*.log, read by testing/client_membership_log.py),
- the monitor's own StreamsGroupDescribe / ShareGroupDescribe, and Kafka's group tools (`--describe`),
- the core's reconstruction from `__consumer_offsets` alone, and from the coordinator log alone,

except where an input cannot know something: each such gap is a named blind spot (`BLIND_SPOTS`), checked to be
one (the input really lacks the value), never a silent skip."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from rebalance_monitor.config import load_config
from rebalance_monitor.inputs.topic_ids import TopicNames
from rebalance_monitor.testing import witnesses as W
from rebalance_monitor.testing.client_membership_log import client_view

DATA = Path(__file__).parent / "data-new-group-types" / "4.4.0"
TRUTH = json.loads((DATA / "truth.json").read_text())
GROUP_TYPES = ("streams", "share")
CLIENTS, DESCRIBE, TOOL, OFFSETS, LOG = "clients", "describe", "tool", "offsets-topic", "coordinator-log"

# (witness, group type, what) -> why the witness cannot know it
BLIND_SPOTS = {
    (CLIENTS, "streams", "epoch"): "a member whose epoch is bumped without a change of its tasks (its revocation "
                                   "done, or another member's change) logs nothing at INFO: its view keeps the "
                                   "epoch it last reconciled at",
    (CLIENTS, "share", "epoch"): "as for streams members: ShareMembershipManager logs an epoch only with a change",
    (LOG, "share", "client_id"): "the coordinator's share-group join line names the member id alone, no client id",
    (OFFSETS, "streams", "removal cause"): "`__consumer_offsets` deletes a removed member's records without a "
                                           "reason, and the capture's application read no input: no commit of "
                                           "its tasks tells a fence from a leave, both are `unknown`",
    (OFFSETS, "share", "removal cause"): "as for streams groups: a share member's deleted records carry no reason",
    (LOG, "streams", "last leave"): "the last member's leave empties the group without an epoch line in the log",
    (LOG, "share", "last leave"): "the last member's leave bumps the share group's epoch without a line in the log",
    (LOG, "share", "expected assignment"): "the log names no member's subscribed topics: no epoch is recomputed",
}


def _records(name: str) -> list[str]:
    return [ln for ln in (DATA / name).read_text().splitlines() if ln.strip()]


def _dec(v):
    return None if v is None else base64.b64decode(v)


@pytest.fixture(scope="module")
def outputs() -> dict[str, list[dict]]:
    """The core's records of both groups, from each input alone."""
    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10})
    groups = {TRUTH[t]["group"] for t in GROUP_TYPES}
    offsets = [(_dec(o["key"]), _dec(o["value"]), o["ts"]) for o in map(json.loads, _records("offsets.jsonl"))]
    log = [(None, ln.encode(), None) for ln in _records("coordinator.log")]
    names = TopicNames(json.loads((DATA / "topic_ids.json").read_text()))
    return {OFFSETS: W.reconstruct(OFFSETS, offsets, cfg=cfg, groups=groups, topic_names=names),
            LOG: W.reconstruct(LOG, log, cfg=cfg, groups=groups)}


def _generations(records, group: str) -> dict[int, dict]:
    return {r["generation"]: r for r in records if r["group"] == group and r["kind"] == "generation"}


def _pairs(xs) -> list[list]:
    return sorted([str(a), int(b)] for a, b in xs or ())


def _from_describe(desc: dict, group_type: str) -> dict:
    out = {}
    for m in desc["members"]:
        v = {"client_id": m["client_id"], "epoch": m["member_epoch"]}
        if group_type == "streams":
            v.update(process_id=m["process_id"], active=_pairs(m["active_tasks"]),
                     standby=_pairs(m["standby_tasks"]), warmup=_pairs(m["warmup_tasks"]))
        else:
            v["partitions"] = _pairs(m["assignment"])
        out[m["member_id"]] = v
    return out


def _from_tool(tool: dict) -> dict:
    return {mid: {k: v for k, v in m.items()} for mid, m in tool["members"].items()}


def _from_generation(gen: dict, group_type: str, client_ids: dict, topic_names: dict) -> dict:
    """A reconstructed generation as member -> what the witnesses compare (a share member's client id from the
    input's own join of it; topic ids the log gives named from the captured cluster's)."""
    out = {}
    for mid in gen["members"]:
        if group_type == "streams":
            t = gen["tasks"][mid]
            out[mid] = {"client_id": t.get("client_id"), "epoch": t.get("epoch"), "process_id": t.get("process_id"),
                        **{k: _pairs(t[k]) for k in ("active", "standby", "warmup")}}
        else:
            out[mid] = {"client_id": client_ids.get(mid), "epoch": gen["generation"],
                        "partitions": _pairs((topic_names.get(tp, tp), p) for tp, p in gen["assignment"][mid])}
    return out


def _joined_client_ids(records, group: str) -> dict:
    return {c["member_id"]: c.get("client_id") for r in records if r["group"] == group and r["kind"] == "generation"
            for c in r["causes"] if c["cause"] == "member_joined"}


def _clients_from_logs(point: dict) -> dict:
    """The live clients' views at the point, read again from their kept log lines (the capture's own reading
    checked: the parser and the lines agree with truth.json)."""
    out = {}
    for client in point["alive"]:
        lines = (DATA / "clients" / f"{client}.log").read_text().splitlines()
        for mid, v in client_view(lines, until_ms=point["ts"]).items():
            out[mid] = {k: v.get(k) for k in ("client_id", "epoch", "process_id", "active", "standby", "warmup",
                                               "partitions") if k in v}
    return out


def _views(group_type: str, point: dict, outputs: dict) -> dict[str, dict]:
    t = TRUTH[group_type]
    epoch = point["describe"]["group_epoch"]
    names = json.loads((DATA / "topic_ids.json").read_text())
    views = {CLIENTS: _clients_from_logs(point), DESCRIBE: _from_describe(point["describe"], group_type),
             TOOL: _from_tool(point["tool"])}
    for w in (OFFSETS, LOG):
        gen = _generations(outputs[w], t["group"]).get(epoch)
        views[w] = None if gen is None else _from_generation(gen, group_type,
                                                             _joined_client_ids(outputs[w], t["group"]), names)
    return views


def _differences(group_type: str, views: dict, epoch: int) -> tuple[list[str], set]:
    """Every difference from the monitor's describe, and the blind spots that explain the rest."""
    want, errors, spots = views[DESCRIBE], [], set()
    for w, view in views.items():
        if view is None:
            errors.append(f"{w}: no generation {epoch}")
            continue
        if sorted(view) != sorted(want):
            errors.append(f"{w}: members {sorted(view)} != {sorted(want)}")
            continue
        for mid, fields in want.items():
            for k, v in fields.items():
                got = view[mid].get(k)
                if got == v:
                    continue
                spot = (w, group_type, k)
                if spot in BLIND_SPOTS and (got is None or (k == "epoch" and got < v)):
                    spots.add(spot)  # (a blind spot is a value missing, or an epoch behind: never another value)
                else:
                    errors.append(f"{w}: member {mid} {k} {got!r} != {v!r}")
    return errors, spots


@pytest.mark.parametrize("group_type", GROUP_TYPES)
def test_every_witness_agrees_at_every_stable_point(group_type, outputs):
    t = TRUTH[group_type]
    assert len(t["stable"]) >= 5 and all(p["clients_agree"] for p in t["stable"])
    seen_spots, errors, epochs_equal = set(), [], 0
    for point in t["stable"]:
        epoch = point["describe"]["group_epoch"]
        assert point["tool"]["state"][1:3] == [epoch, point["describe"]["assignment_epoch"]] == [epoch, epoch]
        views = _views(group_type, point, outputs)
        assert views[CLIENTS] == {mid: {k: v for k, v in c.items() if k in views[CLIENTS].get(mid, {})}
                                  for mid, c in point["clients"].items()}, point["step"]
        errs, spots = _differences(group_type, views, epoch)
        errors += [f"{point['step']} (epoch {epoch}): {e}" for e in errs]
        seen_spots |= spots
        epochs_equal += all(c["epoch"] == epoch for c in views[CLIENTS].values())
    assert not errors, "\n".join(errors)
    assert epochs_equal >= 2, "the clients' epochs never met the group's"
    assert seen_spots <= set(BLIND_SPOTS), seen_spots
    # the blind spots this capture shows (the share members' assignments changed at each step: each epoch logged)
    want = {"streams": {(CLIENTS, "streams", "epoch")}, "share": {(LOG, "share", "client_id")}}[group_type]
    assert want <= seen_spots, f"blind spots seen: {seen_spots}, expected: {want}: is one gone?"


@pytest.mark.parametrize("group_type", GROUP_TYPES)
def test_each_input_has_the_groups_epochs_and_judges_each_alike(group_type, outputs):
    """The same epochs from both inputs (the log without the last leave's, a blind spot); every judged epoch agrees
    with the assignor the core reproduces (streams: sticky task assignor; share: simple assignor)."""
    t = TRUTH[group_type]
    off, log = _generations(outputs[OFFSETS], t["group"]), _generations(outputs[LOG], t["group"])
    points = [p["describe"]["group_epoch"] for p in t["stable"]]
    assert set(points) <= set(off) and set(points) <= set(log)
    last = max(off)
    assert off[last]["members"] == [] and sorted(log) == sorted(off)[:-1], (sorted(log), sorted(off))
    assert BLIND_SPOTS[(LOG, group_type, "last leave")]
    for w, gens in ((OFFSETS, off), (LOG, log)):
        with_members = [g for g in gens.values() if g["members"]]
        if group_type == "streams":
            judged = [g for g in with_members if g["mismatched_tasks"] is not None]
            assert len(judged) == len(with_members) >= 6 and all(g["mismatched_tasks"] == 0 for g in judged), \
                [(g["generation"], g["mismatched_tasks"], g["expected_reason"]) for g in with_members]
            assert all(g["protocol"] == "sticky" and g["group_type"] == "streams" for g in with_members)
        elif w == OFFSETS:
            assert len(with_members) >= 6 and all(g["mismatched_partitions"] == 0 for g in with_members), \
                [(g["generation"], g["mismatched_partitions"], g["expected_reason"]) for g in with_members]
        else:  # the log names no subscription: a named blind spot, each epoch saying so
            assert all(g["mismatched_partitions"] is None and g["expected_reason"].startswith("subscription unknown")
                       for g in with_members) and BLIND_SPOTS[(LOG, "share", "expected assignment")]
    # the standby replicas' change: an epoch of its own, standby tasks from then on, in every witness
    if group_type == "streams":
        point = next(p for p in t["stable"] if p["step"] == "standby")
        assert [c["cause"] for c in log[point["describe"]["group_epoch"]]["causes"]] == ["assignment_config_change"]
        assert off[point["describe"]["group_epoch"]]["num_standby_replicas"] == 1
        assert all(m["standby_tasks"] for m in point["describe"]["members"])


@pytest.mark.parametrize("group_type", GROUP_TYPES)
def test_removals_named_as_each_input_can(group_type, outputs):
    """The killed member: a session timeout naming it in the coordinator log (its member_timeout record too); the
    closed one: a leave. `__consumer_offsets` names both removed members and their client ids, the cause
    `unknown` (a named blind spot)."""
    t = TRUTH[group_type]
    killed = [a["member_id"] for a in t["actions"] if a["action"] == "kill_9"]
    closed = [a["member_id"] for a in t["actions"] if a["action"] == "close"]
    assert len(killed) == 1 and len(closed) == 2
    timeouts = [(r["timeout"], r["member_id"]) for r in outputs[LOG]
                if r["group"] == t["group"] and r["kind"] == "member_timeout"]
    assert timeouts == [("session", killed[0])], timeouts
    assert not [r for r in outputs[OFFSETS] if r["group"] == t["group"] and r["kind"] == "member_timeout"]
    for w, want in ((LOG, {killed[0]: "session_timeout", closed[0]: "member_left"}),
                    (OFFSETS, {killed[0]: "unknown", closed[0]: "unknown", closed[1]: "unknown"})):
        gens = sorted(_generations(outputs[w], t["group"]).values(), key=lambda g: g["generation"])
        removed = {}
        for before, g in zip(gens, gens[1:]):
            gone = set(before["members"]) - set(g["members"])
            for c in g["causes"]:
                if c.get("member_id") in gone:
                    removed[c["member_id"]] = c["cause"]
            assert gone <= set(removed), (w, g["generation"], gone, g["causes"])
        assert removed == want, (w, removed)
    assert BLIND_SPOTS[(OFFSETS, group_type, "removal cause")]
    # the session ran out: the fence comes a session after the kill, not before
    kill_ts = next(a["ts"] for a in t["actions"] if a["action"] == "kill_9")
    fence = next(g for g in sorted(_generations(outputs[LOG], t["group"]).values(), key=lambda g: g["generation"])
                 if g["started_ms"] > kill_ts)
    assert fence["started_ms"] - kill_ts >= TRUTH["session_timeout_ms"][group_type] - 1500, fence


def test_the_operators_standby_change_is_named_alike_by_both_broker_inputs(outputs):
    """`streams.num.standby.replicas` set to 1 during the capture: the log says so in its own line, and
    `__consumer_offsets` by the group metadata record of the bump (the configurations the assignment now uses)."""
    group = TRUTH["streams"]["group"]
    named = {w: [(e, [c["cause"] for c in g["causes"]]) for e, g in sorted(_generations(outputs[w], group).items())
                 if any(c["cause"] == "assignment_config_change" for c in g["causes"])] for w in (OFFSETS, LOG)}
    assert len(named[OFFSETS]) == 1 and named[OFFSETS] == named[LOG], named
    assert named[OFFSETS][0][1] == ["assignment_config_change"], named


def test_the_capture_is_small_and_names_its_client_lines():
    size = sum(f.stat().st_size for f in DATA.rglob("*") if f.is_file())
    assert size < 1_000_000, size
    for group_type in GROUP_TYPES:
        for client in TRUTH[group_type]["clients"]:
            lines = (DATA / "clients" / f"{client}.log").read_text().splitlines()
            assert any("transitioned from" in ln for ln in lines), client
