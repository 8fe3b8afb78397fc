"""Real broker GroupCoordinator lines from public reports (Kafka 2.2 to 4.x) and of 4.4 brokers the project's own
share group and streams group tests ran (source `captured from Apache Kafka 4.4.0: ...`), each held against its full decoding:
the event types in order and, for every event, group, generation, member id, client id, host, leader, protocol,
cause and reason as the line states them (`data/coordinator_real_lines.jsonl`, each with its source; lines marked
`"real": false` are synthesised from a release's format string with a member id a client really prints).
A line no decoder can read must be a dead letter with a reason, through the path the job takes.

`python tests/inputs/test_coordinator_real_lines.py` prints the fraction decoded fully right."""
from __future__ import annotations

import json
import os
import sys

import pytest

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.decoding.reference import decode_record
from rebalance_monitor.inputs.coordinator_log import UNPARSED, decode_log_record

# real lines of a broker of the project's own tests, its coordinator log as the test left it
CAPTURED = "captured from Apache Kafka "
DATA = os.path.join(os.path.dirname(__file__), "data", "coordinator_real_lines.jsonl")
with open(DATA, encoding="utf-8") as fh:
    CASES = [json.loads(line) for line in fh if line.strip()]


def mismatches(case: dict) -> list[str]:
    """What the decoder gets wrong on a case ([] when fully right)."""
    d = decode_log_record(case["line"])
    if case.get("rejected"):
        return [] if d.rejected_reason == case["rejected"] and not d.events else \
            [f"expected dead letter {case['rejected']}, got {d.rejected_reason} / {len(d.events)} events"]
    if d.skipped:
        return ["skipped"]
    if d.rejected_reason:
        return [f"rejected {d.rejected_reason}: {d.detail[:80]}"]
    wrong = []
    if case.get("record_type") and d.record_type != case["record_type"]:
        wrong.append(f"record_type {d.record_type!r} != {case['record_type']!r}")
    got_types = [e["type"] for e in d.events]
    want_types = [e["type"] for e in case["events"]]
    if got_types != want_types:
        return wrong + [f"events {got_types} != {want_types}"]
    for i, (got, want) in enumerate(zip(d.events, case["events"])):
        for key, value in want.items():
            if got.get(key) != value:
                wrong.append(f"event {i} {key}: {got.get(key)!r} != {value!r}")
        if isinstance(parse_event(got), Rejected):
            wrong.append(f"event {i} is not canonical: {parse_event(got)}")
    return wrong


def test_every_case_names_its_source_and_most_are_real():
    assert len(CASES) >= 50
    for case in CASES:
        assert case["source"].startswith(("https://", CAPTURED) if case["real"] else "synthesised from "), \
            case["source"]
    assert sum(c["real"] for c in CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[f"{i:02d}{'' if c['real'] else 's'}" for i, c in enumerate(CASES)])
def test_line_decodes_fully_right(case):
    assert mismatches(case) == [], case["line"]


def test_an_undecodable_coordinator_line_is_a_dead_letter_with_its_reason_never_dropped():
    """Every rejected case goes through `decode_record` (the job's and replay's path) as a `Rejected` carrying the
    reason class the job counts dead letters by, and the line itself."""
    rejected = [c for c in CASES if c.get("rejected")]
    assert rejected
    for case in rejected:
        events, rejects = decode_record("coordinator-log", case["line"].encode())
        assert events == [] and len(rejects) == 1
        assert rejects[0].reason == case["rejected"] == UNPARSED
        assert "group***" in rejects[0].detail
    # a coordinator line the catalogue does not know, at INFO and above: a dead letter, whatever the client ids
    for level in ("INFO", "WARN", "ERROR"):
        line = (f"[2024-01-02 03:04:05,678] {level} [GroupCoordinator 1]: Member a b (c) did something new in group g "
                "(kafka.coordinator.group.GroupCoordinator)")
        events, rejects = decode_record("coordinator-log", line)
        assert events == [] and [r.reason for r in rejects] == [UNPARSED]
    # a known message whose numbers are garbage is not silently skipped either
    bad = ("[2024-01-02 03:04:05,678] INFO [GroupCoordinator 1]: Stabilized group g generation x7 "
           "(kafka.coordinator.group.GroupCoordinator)")
    assert [r.reason for r in decode_record("coordinator-log", bad)[1]] == [UNPARSED]


def test_the_job_s_decode_stage_dead_letters_each_undecodable_line_with_its_reason_and_origin():
    """Through the Spark job's own decode stage (`decoding/record_decoder.decode_records`, run here without Spark): each
    real line a decoder cannot read becomes one dead-letter record naming its reason and its Kafka origin; the
    others give events or counted nothing, never a dead letter."""
    from rebalance_monitor.decoding.decoded_rows import DecodedRows
    from rebalance_monitor.decoding.record_decoder import decode_records

    out = DecodedRows()
    recs = [("broker-logs", 0, i, 1_700_000_000_000 + i, None, c["line"].encode()) for i, c in enumerate(CASES)]
    decode_records(out, recs, {"broker-logs": "coordinator-log"}, 1 << 20, 10 ** 13)
    dead = [json.loads(d[3]) for d in out.dead]
    expected = [i for i, c in enumerate(CASES) if c.get("rejected")]
    assert [(d["reason"], d["topic"], d["offset"]) for d in dead] == [
        (CASES[i]["rejected"], "broker-logs", i) for i in expected]
    assert all("group***" in d["raw"] for d in dead)
    events = sum(len(rows) for rows in out.groups.values()) + len(out.cluster)
    assert events == sum(len(c["events"]) for c in CASES)


def test_no_real_line_is_dropped_without_a_reason():
    """Each real line gives events, a counted kind (`record_type`), or a dead-letter reason: never nothing."""
    for case in CASES:
        d = decode_log_record(case["line"])
        assert not d.skipped, case["line"]
        assert d.events or d.record_type or d.rejected_reason, case["line"]


def _replay(source: str) -> list[dict]:
    """The records of the real lines of one report, replayed in their time order through the core."""
    from rebalance_monitor.core.reconstruct import Reconstructor

    events = [e for c in CASES if c["source"] == source for e in decode_log_record(c["line"]).events]
    events.sort(key=lambda e: e["ts"])
    recon = Reconstructor()
    return [r for e in events for r in recon.feed(parse_event(e))] + recon.finish()


def test_a_2x_connect_rebalance_loop_reports_its_generation_with_the_worker_it_names():
    """Strimzi's Kafka Connect loop (2.x): `Updating metadata for member M` is the only cause; `Assignment
    received` names no leader before 3.0, and the next rebalance starts 3 ms later. The generation is still
    reported (its second line, logged after `Stabilized`, proves it Stable), with the worker as its member."""
    worker = "connect-1-bdf1c132-3311-493a-894a-5fffcac41ec7"
    gens = [r for r in _replay("https://github.com/strimzi/strimzi-kafka-operator/issues/3225")
            if r["kind"] == "generation"]
    assert [(g["generation"], g["members"], [(c["cause"], c["member_id"]) for c in g["causes"]]) for g in gens] == [
        (311127280, [worker], [("subscription_change", worker)])]


def test_a_2x_rebalance_loop_of_an_erlang_client_reports_each_generation_it_proved():
    """kaffe (Erlang brod) on 2.3: Stabilized, Assignment received and the next `Adding new member` within
    milliseconds. Generation 15 was proven Stable by its two lines, with the member its reason added; 16 only
    formed (Stabilized) before the report's excerpt ends: it waits for its proof or the settle time."""
    erl = "nonode@nohost/<0.1083.0>-9db8b1f9-17b1-43d3-ab18-0f8daecff052"
    gens = [r for r in _replay("https://github.com/spreedly/kaffe/issues/92") if r["kind"] == "generation"]
    assert [(g["generation"], g["members"], [(c["cause"], c["member_id"]) for c in g["causes"]], g["completed_ms"])
            for g in gens] == [(15, [erl], [("member_joined", erl)], 1563873176391)]


def score() -> str:
    out = []
    real = [c for c in CASES if c["real"]]
    for label, subset in (("real", real), ("synthesised", [c for c in CASES if not c["real"]])):
        bad = [(c, mismatches(c)) for c in subset]
        bad = [(c, w) for c, w in bad if w]
        out.append(f"{label}: {len(subset) - len(bad)}/{len(subset)} decoded fully right "
                   f"({(len(subset) - len(bad)) / len(subset):.0%})")
        for c, w in bad:
            out.append(f"  - {c['line'][:110]}\n      {'; '.join(w)[:300]}")
    return "\n".join(out)


if __name__ == "__main__":
    print(score())
    sys.exit(0)


SHARE_RUN = next(c["source"] for c in CASES if c["source"].startswith(CAPTURED + "4.4.0"))


def test_a_4_4_share_group_from_its_coordinator_log_alone():
    """KIP-932 on a 4.4 broker (tests/inputs/test_share_group_on_kafka.py): one share member, the topic's
    partitions initialised for the group (an epoch no member caused), a second member, the first fenced on its
    session's expiry; every generation is the share assignor's, not recomputed: the log names no member's
    subscribed topics."""
    a, b = "XYF4b2s8R0e_XC7m_AL81A", "T8X9n6N7R6GE8MPCC0crGw"
    tid = "d2e087d8-bdbd-4942-af28-2c470c53b420"  # 0uCH2L29SUKvKCxHDFO0IA, as the log prints it
    gens = [r for r in _replay(SHARE_RUN) if r["kind"] == "generation"]
    assert [(g["generation"], sorted(g["members"])) for g in gens] == \
        [(2, [a]), (3, [a]), (4, sorted([a, b])), (5, [b])], gens
    assert all((g["protocol"], g["expected_assignment"], g["expected_reason"]) ==
               ("simple", None, f"subscription unknown for {len(g['members'])} member(s)") for g in gens), gens
    assert [[(c["cause"], c.get("member_id")) for c in g["causes"]] for g in gens] == \
        [[("member_joined", a)], [("unknown", None)], [("member_joined", b)], [("session_timeout", a)]]
    assert gens[2]["assignment"] == {a: [[tid, 0]], b: [[tid, 1]]}
    assert gens[3]["assignment"] == {b: [[tid, 0], [tid, 1]]}


STREAMS_RUN = next(c["source"] for c in CASES if c["source"].startswith(CAPTURED + "4.4.0")
                   and "group.protocol=streams" in c["source"] and "started together" not in c["source"])
STREAMS_RACE = next(c["source"] for c in CASES if c["source"].startswith(CAPTURED + "4.4.0")
                    and "started together" in c["source"])


def test_a_4_4_streams_group_from_its_coordinator_log_alone():
    """KIP-1071 on a 4.4 broker (tests/inputs/test_streams_group_log_on_kafka.py): s-a joins and initialises the
    topology, its changelog topic's creation bumps the epoch again (no member's doing the log names), s-b and then
    s-c join, s-c is fenced on its session's expiry, the standby replicas set to 1 bump the epoch (each task gets
    a standby on the other instance), s-b leaves; every generation is the sticky task assignor's, never judged by a
    consumer assignor, and names each member's process and tasks."""
    a, b, c = "0zHzzaxqRy6Of69YgxuhGg", "o2H_mIdzTNOxOB4pS298yQ", "PoTu5hxXSxuz4UJQVwklPg"
    client = {a: "s-a-StreamThread-1-consumer", b: "s-b-StreamThread-1-consumer", c: "s-c-StreamThread-1-consumer"}
    gens = [r for r in _replay(STREAMS_RUN) if r["kind"] == "generation"]
    assert [(g["generation"], sorted(g["members"])) for g in gens] == [
        (2, [a]), (3, [a]), (4, sorted([a, b])), (5, sorted([a, b, c])), (6, sorted([a, b])), (7, sorted([a, b])),
        (8, [a])], gens
    assert all((g["protocol"], g["expected_assignment"], g["group_type"]) == ("sticky", None, "streams")
               for g in gens), gens
    # judged by the sticky task assignor, the tasks held standing for the topology the log does not give
    # (the first epoch has no task yet; the standby replicas the assignment-configs line names are the assignor's)
    assert [(g["generation"], g["mismatched_tasks"], g["num_standby_replicas"]) for g in gens] == [
        (2, None, 0), (3, 0, 0), (4, 0, 0), (5, 0, 0), (6, 0, 0), (7, 0, 1), (8, 0, 1)], gens
    assert [[(x["cause"], x.get("member_id"), x.get("client_id")) for x in g["causes"]] for g in gens] == [
        [("member_joined", a, client[a]), ("topology_change", a, client[a])], [("unknown", None, None)],
        [("member_joined", b, client[b])], [("member_joined", c, client[c])], [("session_timeout", c, client[c])],
        [("assignment_config_change", None, None)], [("member_left", b, client[b])]]
    tasks = {mid: {k: sorted(map(tuple, v)) for k, v in t.items() if k in ("active", "standby", "warmup")}
             for mid, t in gens[5]["tasks"].items()}
    assert tasks == {a: {"active": [("0", 0), ("0", 1)], "standby": [("0", 2), ("0", 3)], "warmup": []},
                     b: {"active": [("0", 2), ("0", 3)], "standby": [("0", 0), ("0", 1)], "warmup": []}}, tasks
    assert gens[6]["tasks"][a]["active"] == [["0", p] for p in range(4)] and gens[6]["tasks"][a]["standby"] == []


def test_a_4_4_streams_member_still_unsettled_at_its_first_epoch_is_in_it():
    """s-b joined (epoch 4) and was still waiting for the tasks s-a had to revoke (its syncs of epoch 4 all
    `unreleased_tasks`) when s-c joined (epoch 5): s-b is in epoch 4, its join that epoch's cause, and s-c is not
    in it (the coordinator's target assignment of epoch 4 had s-a and s-b only)."""
    a, b, c = "F2XwuvJISDaRWKc4aJA6Ew", "7TyPzoiZRXyatrU8c3jlSA", "eOT0XDeZQUqEDSu4RECbNQ"
    gens = [r for r in _replay(STREAMS_RACE) if r["kind"] == "generation"]
    assert [(g["generation"], sorted(g["members"]), [(x["cause"], x.get("member_id")) for x in g["causes"]])
            for g in gens[2:4]] == [(4, sorted([a, b]), [("member_joined", b)]),
                                     (5, sorted([a, b, c]), [("member_joined", c)])], gens
