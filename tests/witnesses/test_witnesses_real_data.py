"""The three witnesses on what real Apache Kafka brokers and real clients recorded (tests/witnesses/data/<version>/,
captured by scripts/capture_witnesses.py from every classic-protocol workload scenario): the instrumented clients'
events, the group coordinator's log lines and `__consumer_offsets`, each reconstructed by the monitor's core, held
against the clients' own view (their generation and member ids at every stable point) and against each other."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rebalance_monitor.inputs.topic_ids import TopicNames
from rebalance_monitor.testing import witnesses as W
from rebalance_monitor.testing.witness_compare import View, blind_spot, compare
from rebalance_monitor.testing.broker import TEST_BROKER_SETTINGS

KIP848_SESSION_TIMEOUT_MS = int(TEST_BROKER_SETTINGS["group.consumer.session.timeout.ms"])  # the capture's brokers'

DATA = Path(__file__).parent / "data"
VERSIONS = sorted(p.name for p in DATA.iterdir() if (p / "truth.json").exists())


def _topic_names(d: Path):
    """The captured cluster's topic ids (KIP-848 records of Kafka 4.x name topics by id only)."""
    f = d / "topic_ids.json"
    return TopicNames(json.loads(f.read_text())) if f.exists() else None


def _monitor_config(**overrides):
    """The monitor as an operator of the capture's brokers configures it: their KIP-848 session timeout
    (group.consumer.session.timeout.ms, testing/broker.py) is the monitor's `core.kip848_session_timeout`."""
    from rebalance_monitor.config import load_config

    return load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10,
                                          "core.kip848_session_timeout": f"{KIP848_SESSION_TIMEOUT_MS}ms", **overrides})


def _load(version: str):
    d = DATA / version
    truth = json.loads((d / "truth.json").read_text())
    groups = {t["group"] for t in truth.values()}
    cfg = _monitor_config()
    outputs = {src: W.reconstruct(src, recs, cfg=cfg, groups=groups,
                                  topic_names=_topic_names(d) if src == "offsets-topic" else None)
               for src, recs in W.load_captured(d).items()}
    return truth, outputs


@pytest.fixture(scope="module", params=VERSIONS)
def captured(request):
    return (request.param, *_load(request.param))


def test_both_release_lines_are_captured():
    assert {"4.4.0", "3.9.2"} <= set(VERSIONS)


def test_every_scenario_was_captured_with_all_three_inputs(captured):
    version, truth, outputs = captured
    assert len(truth) >= 10
    for name, t in truth.items():
        assert t["stable"], name
        for witness in t.get("witnesses", outputs):
            records = outputs[witness]
            assert any(r["group"] == t["group"] and r["kind"] == "generation" for r in records), (name, witness)


def test_the_witnesses_agree_with_the_clients_and_each_other(captured):
    version, truth, outputs = captured
    findings = []
    for name, t in truth.items():
        views = {w: View.of(recs, t["group"], t["cleanup_ms"]) for w, recs in outputs.items()
                 if w in t.get("witnesses", outputs)}
        findings += compare(name, t, views)
    kip848 = {n for n, t in truth.items() if n.startswith("kip848")}
    errors = [f for f in findings if blind_spot(version, f, f.scenario in kip848) is None]
    assert not errors, "\n".join(map(str, errors))
    if version.startswith("3."):
        assert any(f.rule == "members as the clients saw them" for f in findings), \
            "the 3.x blind spot of the coordinator log was not seen: is it gone?"


def test_timeouts_and_causes_each_witness_can_see(captured):
    """What the inputs can and cannot see (docs/inputs.md, table "Three witnesses")."""
    version, truth, outputs = captured
    by = {w: {r["group"]: r for r in recs if r["kind"] == "generation"} for w, recs in outputs.items()}
    crash = truth["crash"]["group"]
    for witness in ("events", "coordinator-log"):
        timeouts = [r for r in outputs[witness] if r["group"] == crash and r["kind"] == "member_timeout"]
        assert [r["timeout"] for r in timeouts] == ["session"], (witness, timeouts)
    # __consumer_offsets holds each generation's members and assignment, not why it changed: a departure's cause
    # is inferred from the commits of the member's partitions (causes.cause_of_departure), marked as inferred
    timeouts = [r for r in outputs["offsets-topic"] if r["group"] == crash and r["kind"] == "member_timeout"]
    assert [(r["timeout"], r["client_id"], r["cause_source"]) for r in timeouts] == [
        ("session", "crash-victim", "inferred")], timeouts
    offsets_causes = {c["cause"] for r in outputs["offsets-topic"] if r["kind"] == "generation" for c in r["causes"]}
    assert offsets_causes <= {"member_joined", "unknown", "member_left", "session_timeout", "poll_timeout"}, \
        offsets_causes
    inferred = [c for r in outputs["offsets-topic"] if r["kind"] == "generation" for c in r["causes"]
                if c["cause"] in ("member_left", "session_timeout")]
    assert inferred and all(c["cause_source"] == "inferred" and c["reason"].startswith("inferred: ")
                            for c in inferred), inferred
    # only the instrumented client and __consumer_offsets carry the assignment; the log carries none
    gens = {w: [r for r in recs if r["kind"] == "generation"] for w, recs in outputs.items()}
    assert all(r["assignment"] in (None, {}) for r in gens["coordinator-log"])
    assert any(r["assignment"] for r in gens["offsets-topic"])


def test_inferred_causes_agree_with_what_the_clients_saw(captured):
    """Every departure `__consumer_offsets` alone explains (crashes and leaves, classic groups) has the cause
    the clients reported for that generation; a poll timeout whose max.poll.interval.ms is close to the session
    timeout reads as a session timeout (both: the member stopped; docs/inputs.md)."""
    version, truth, outputs = captured
    clients = {(r["group"], r["generation"]): r for r in outputs["events"] if r["kind"] == "generation"}
    checked = 0
    for r in outputs["offsets-topic"]:
        if r["kind"] != "generation" or (r["group"], r["generation"]) not in clients:
            continue
        seen = {(c["cause"], c.get("client_id")) for c in clients[(r["group"], r["generation"])]["causes"]}
        for c in r["causes"]:
            if c.get("cause_source") != "inferred":
                continue
            allowed = {c["cause"]} | ({"poll_timeout"} if c["cause"] == "session_timeout" else set())
            assert any(cause in allowed and client == c["client_id"] for cause, client in seen), (r["group"], c, seen)
            checked += 1
    assert checked >= 5, checked


def test_kip848_groups_seen_whole_by_every_witness(captured):
    """KIP-848 groups (Kafka 4.x): `__consumer_offsets` names the assigned topics (their ids resolved from the
    cluster's, captured beside the data) and its assignments are the clients' own; the crashed member's session
    timeout is seen in the client events (the instrumentation's liveness heartbeats stop with the process) as
    in the coordinator log."""
    version, truth, outputs = captured
    kip848 = {n: t for n, t in truth.items() if n.startswith("kip848")}
    if not kip848:
        pytest.skip(f"Kafka {version} runs no KIP-848 scenario (the consumer protocol is GA from 4.0)")
    assert (DATA / version / "topic_ids.json").exists()
    for name, t in kip848.items():
        if "events" not in t.get("witnesses", ()):
            continue
        gens = [r for r in outputs["offsets-topic"] if r["group"] == t["group"] and r["kind"] == "generation"]
        topics = {tp[0] for g in gens for tps in (g["assignment"] or {}).values() for tp in tps}
        assert topics == {t["topic"]}, (name, topics)
    crash = kip848["kip848_crash"]
    victim = [a["member_id"] for a in crash["actions"] if a["action"] == "kill_member"]
    for witness in ("events", "coordinator-log"):
        timeouts = [(r["timeout"], r["member_id"]) for r in outputs[witness]
                    if r["group"] == crash["group"] and r["kind"] == "member_timeout"]
        assert timeouts == [("session", victim[0])], (witness, timeouts)


def test_a_static_member_restarted_in_its_session_starts_no_rebalance_in_any_witness(captured):
    """Kafka hands the restarted instance its assignment under a new member id without a rebalance; the log
    says `Replacing previously mapped member ...` and that no rebalance follows: no witness may start one."""
    version, truth, outputs = captured
    t = truth["static_restart"]
    for witness, records in outputs.items():
        mine = [r for r in records if r["group"] == t["group"] and (r.get("ts") or 0) <= t["cleanup_ms"]]
        started = [r for r in mine if r["kind"] == "rebalance_started"]
        gens = [r for r in mine if r["kind"] == "generation"]
        assert len(started) <= len(gens), (witness, [r["generation"] for r in started], [g["generation"] for g in gens])


def test_storms_are_explained_alike_by_every_witness():
    """What real brokers and clients recorded: the storm scenario (one member joins and leaves four times) is a
    flapping member named by its client id, the rolling restart a rolling restart, whichever input is read."""
    from rebalance_monitor.config import load_config

    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10, "storm.min_rebalances": 5,
                                         "core.settle": "10s"})
    for version in VERSIONS:
        for witness, recs in W.load_captured(DATA / version).items():
            storms = {r["group"]: r for r in W.reconstruct(witness, recs, cfg=cfg) if r["kind"] == "storm"}
            assert storms["w-storm"]["pattern"] == "flapping_member", (version, witness, storms["w-storm"])
            assert storms["w-storm"]["pattern_detail"].startswith("storm-flapper"), (version, witness)
            assert storms["w-rolling_restart"]["pattern"] == "rolling_restart", (version, witness)


@pytest.mark.parametrize("sources", [
    ("coordinator-log", "offsets-topic"), ("events", "offsets-topic"), ("events", "coordinator-log"),
    ("events", "coordinator-log", "offsets-topic")], ids="+".join)
def test_inputs_read_together_keep_what_each_knew(captured, sources):
    """Several inputs describing one generation: its record carries the union of what they know, never the
    first input's gaps: the protocol and the expected assignment wherever an input carrying assignments is read
    (each classic generation judged as that input alone judged it), the log's reasons where the log is read (the
    crash is a session timeout naming the victim by client id and host)."""
    version, truth, outputs = captured
    d = DATA / version
    classic = {t["group"] for n, t in truth.items() if not n.startswith("kip848")}
    together = W.reconstruct_together(W.load_captured(d), sources, groups=classic, topic_names=_topic_names(d))
    gens = {(r["group"], r["generation"]): r for r in together if r["kind"] == "generation"}
    assert gens
    knew = {}  # what any input alone knew of a generation's protocol
    for source in sources:
        for r in outputs[source]:
            if r["kind"] == "generation" and r["protocol"] is not None:
                knew[(r["group"], r["generation"])] = r["protocol"]
    witness = "offsets-topic" if "offsets-topic" in sources else "events"
    alone = {(r["group"], r["generation"]): r for r in outputs[witness] if r["kind"] == "generation"
             and r["group"] in classic}
    judged = 0
    for key, r in gens.items():
        if key in knew:  # (together they may know more than each alone: never less)
            assert r["protocol"] == knew[key], (sources, key, r["protocol"], knew[key])
        if key in alone and alone[key]["mismatched_partitions"] is not None:
            assert r["mismatched_partitions"] == alone[key]["mismatched_partitions"], (sources, key)
            assert r["expected_assignment"] is not None, (sources, key, r["expected_reason"])
            judged += 1
    assert judged >= len(gens) // 2, (sources, judged, len(gens))
    crash = truth["crash"]["group"]
    # the crash's generation: the last with members (the survivor's leave at the end empties the group)
    last = max((r for k, r in gens.items() if k[0] == crash and r["members"]), key=lambda r: r["generation"])
    causes = [(c["cause"], c.get("client_id"), c.get("host") is not None) for c in last["causes"]]
    assert ("session_timeout", "crash-victim", True) in causes, (sources, causes)


@pytest.mark.parametrize("sources", [("coordinator-log", "offsets-topic"), ("events", "coordinator-log", "offsets-topic")],
                         ids="+".join)
def test_kip848_epochs_read_together_carry_what_offsets_knew(captured, sources):
    """KIP-848 groups (Kafka 4.x) with the log and `__consumer_offsets` (and the clients) read together: each
    epoch's record carries the assignment `__consumer_offsets` holds for it (every member's reconciled
    assignment record of the epoch), the log's assignor, and the client ids of the members its causes name; the
    epoch bump both inputs report is one round, not two."""
    version, truth, outputs = captured
    kip848 = {t["group"]: t for n, t in truth.items() if n.startswith("kip848")}
    if not kip848:
        pytest.skip(f"Kafka {version} runs no KIP-848 scenario (the consumer protocol is GA from 4.0)")
    d = DATA / version
    groups = {g for g, t in kip848.items() if set(sources) <= set(t.get("witnesses", sources))}
    together = W.reconstruct_together(W.load_captured(d), sources, groups=groups, topic_names=_topic_names(d))
    gens = {(r["group"], r["generation"]): r for r in together if r["kind"] == "generation"}
    alone = {(r["group"], r["generation"]): r for r in outputs["offsets-topic"] if r["kind"] == "generation"
             and r["group"] in groups and r["members"]}
    assert groups and alone
    for key, r in alone.items():
        assert key in gens, (sources, key)
        assert gens[key]["assignment"] == r["assignment"], (sources, key)
        assert gens[key]["protocol"] == "uniform", (sources, key)
        named = [c for c in gens[key]["causes"] if c["cause"] in ("member_joined", "member_left", "session_timeout")]
        assert all(c.get("client_id") for c in named), (sources, key, named)
    started = [r["generation"] for r in together if r["kind"] == "rebalance_started"]
    assert len(started) <= len(gens) + len(groups), (sources, started)


def test_kip848_departures_inferred_from_offsets_alone(captured):
    """KIP-848 records carry no session timeout: the monitor takes the brokers' (`core.kip848_session_timeout`),
    or a group's own (`core.kip848_session_timeouts`, mirroring its dynamic `consumer.session.timeout.ms`). With
    the capture brokers' 10 s, each KIP-848 departure `__consumer_offsets` alone shows (a member's record deleted)
    has its real cause: the killed member a session timeout, the stopped one a leave, the member that stalled
    past its 5 s max.poll.interval.ms (its client left the group) a poll timeout."""
    version, truth, outputs = captured
    kip848 = {n: t for n, t in truth.items() if n.startswith("kip848")}
    if not kip848:
        pytest.skip(f"Kafka {version} runs no KIP-848 scenario (the consumer protocol is GA from 4.0)")
    want = {"kip848_crash": ("session_timeout", "k848-victim"), "kip848_scale": ("member_left", "k848-2"),
            "kip848_slow": ("poll_timeout", "k848-slow")}

    def inferred(records, group):  # (in generations with members: the last leave's empty one is checked below)
        return [(c["cause"], c["client_id"]) for r in records if r["group"] == group and r["kind"] == "generation"
                and r["members"] for c in r["causes"] if c.get("cause_source") == "inferred"]

    for name, found in want.items():
        assert inferred(outputs["offsets-topic"], kip848[name]["group"]) == [found], name
    seen = [(c["cause"], c.get("client_id")) for r in outputs["events"] if r["kind"] == "generation"
            and r["group"] == kip848["kip848_crash"]["group"] for c in r["causes"]]
    assert want["kip848_crash"] in seen, seen  # what the clients saw
    assert any(a["action"] == "poll_timeout_observed" for a in kip848["kip848_slow"]["actions"])
    # a group's own session timeout wins over the brokers' (here the brokers' is left at Kafka's default 45 s,
    # under which a crash detected after 10 s would read as a leave)
    d = DATA / version
    crash = kip848["kip848_crash"]["group"]
    cfg = _monitor_config(**{"core.kip848_session_timeout": "45s",
                             "core.kip848_session_timeouts": f"{crash}={KIP848_SESSION_TIMEOUT_MS}ms"})
    records = W.reconstruct("offsets-topic", W.load_captured(d)["offsets-topic"], cfg=cfg, groups={crash},
                            topic_names=_topic_names(d))
    assert inferred(records, crash) == [want["kip848_crash"]]
    assert [(r["timeout"], r["cause_source"]) for r in records if r["kind"] == "member_timeout"] == [
        ("session", "inferred")]


def test_kip848_epochs_from_the_clients_and_the_log_are_judged_only_on_known_ownership(captured):
    """The clients' events with the log (no `__consumer_offsets`) name a KIP-848 group's assignor (`uniform`) and,
    through the members the log adds, their subscriptions: an epoch whose members' assignment of the epoch
    before is unknown (the clients' syncs of it never came) is not judged (the server assignors keep what
    members own, and what they owned is unknown); every epoch judged matches."""
    version, truth, outputs = captured
    groups = {t["group"] for n, t in truth.items() if n.startswith("kip848") and "events" in t.get("witnesses", ())}
    if not groups:
        pytest.skip(f"Kafka {version} runs no KIP-848 scenario (the consumer protocol is GA from 4.0)")
    d = DATA / version
    together = W.reconstruct_together(W.load_captured(d), ("events", "coordinator-log"), groups=groups)
    gens = [r for r in together if r["kind"] == "generation"]
    judged = [r for r in gens if r["mismatched_partitions"] is not None]
    assert judged and all(r["mismatched_partitions"] == 0 for r in judged), [
        (r["group"], r["generation"], r["mismatched_partitions"]) for r in judged]
    assert any(r["expected_reason"] == f"the members' assignment of epoch {r['generation'] - 1} is not known"
               for r in gens)


@pytest.mark.parametrize("scenario", ["crash", "kip848_crash"])
def test_the_last_leave_is_a_generation_with_no_members_naming_who_left(captured, scenario):
    """Each scenario ends with its last member closing: Kafka bumps the generation (a classic group's round with no
    members, a KIP-848 group's epoch) and the group is Empty. Every input reports that generation with no members,
    its cause naming the member that left (by client id where the input knows it)."""
    version, truth, outputs = captured
    if scenario not in truth:
        pytest.skip(f"Kafka {version} runs no {scenario} scenario (the consumer protocol is GA from 4.0)")
    group = truth[scenario]["group"]
    survivor = "crash-survivor" if scenario == "crash" else "k848-survivor"
    for witness, records in outputs.items():
        gens = [r for r in records if r["group"] == group and r["kind"] == "generation"]
        last = gens[-1]
        assert last["members"] == [] and last["generation"] == gens[-2]["generation"] + 1, (witness, last)
        assert [c["cause"] for c in last["causes"]] == ["member_left"], (witness, last["causes"])
        if witness != "coordinator-log":  # (the log names members by id alone)
            assert last["causes"][0]["client_id"] == survivor, (witness, last["causes"])
        assert last["causes"][0]["member_id"] in gens[-2]["members"], (witness, last["causes"])


@pytest.mark.parametrize("sources", [("events", "offsets-topic"), ("events", "coordinator-log"),
                                     ("events", "coordinator-log", "offsets-topic")], ids="+".join)
def test_inputs_read_together_name_each_member_once(captured, sources):
    """A client's first JoinGroup carries no member id (KIP-394) and names its host as the client sees it; the
    broker's inputs name the member by the id the coordinator gave it and the address it connected from. Read
    together, one member's join is one cause (the demo's storm flapper among them): every cause of a generation
    names a member once, and where the two names of its host differ both are kept (`host`: the client's,
    `client_host`: the broker's)."""
    version, truth, _ = captured
    d = DATA / version
    together = W.reconstruct_together(W.load_captured(d), sources, topic_names=_topic_names(d))
    gens = [r for r in together if r["kind"] == "generation"]
    assert gens
    both = 0
    for r in gens:
        named = [(c["cause"], c.get("client_id")) for c in r["causes"] if c.get("client_id")]
        assert len(named) == len(set(named)), (sources, r["group"], r["generation"], r["causes"])
        both += sum(1 for c in r["causes"] if c.get("client_host"))
    if "offsets-topic" in sources:  # (the log's join lines name no host)
        assert both, "no member seen with both its own host name and the broker's address"
