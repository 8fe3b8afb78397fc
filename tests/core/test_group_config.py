"""A group's settings as the broker holds them (`group_config` events, core/group/group_config.py): a KIP-848 member's
session timeout is the group's own override, else the brokers', else the configuration's fallback, and every
timeout, warning and inferred cause says which; a KIP-848 generation whose members name no assignor is judged with
the brokers' default. Held on what real Apache Kafka 4.4.0 brokers wrote to `__consumer_offsets`
(tests/witnesses/data/4.4.0: brokers with group.consumer.session.timeout.ms 10 s), and on small event lists."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.events import ev, run
from rebalance_monitor.config import load_config
from rebalance_monitor.core.events import GroupConfig, parse_event
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.settings import CoreSettings
from rebalance_monitor.decoding.reference import decode_record
from rebalance_monitor.inputs.topic_ids import TopicNames
from rebalance_monitor.testing import witnesses as W

DATA = Path(__file__).parents[1] / "witnesses" / "data" / "4.4.0"
TRUTH = json.loads((DATA / "truth.json").read_text())
CRASH = TRUTH["kip848_crash"]["group"]
SCALE = TRUTH["kip848_scale"]["group"]


def _offsets_with(config_events: list[dict], groups: set[str], **overrides) -> list[dict]:
    """The core's records of the captured `__consumer_offsets` with `config_events` (canonical dicts) read
    beside it, as the job reads the events topic the monitor's broker poller writes to."""
    cfg = load_config(env={}, overrides={"kafka.offsets_topic_partitions": 10, **overrides})
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay),
                          offsets_partitions=10)
    names = TopicNames(json.loads((DATA / "topic_ids.json").read_text()))
    events = [parse_event(e) for e in config_events]
    for key, value, ts in W.load_captured(DATA)["offsets-topic"]:
        evs, _ = decode_record("offsets-topic", value, key=key, ts_ms=ts, topic_names=names)
        events.extend(e for e in evs if not e.group or e.group in groups)
    events.sort(key=lambda e: e.ts)
    out = []
    for e in events:
        out.extend(recon.feed(e))
    out.extend(recon.finish())
    return [r for r in out if r.get("group") in groups]


def _first_ts() -> int:
    return min(ts for _, _, ts in W.load_captured(DATA)["offsets-topic"]) - 1000


def _inferred(records, group):  # (in generations with members: the survivor's last leave empties the group)
    return [(c["cause"], c.get("timeout_source")) for r in records if r["kind"] == "generation" and r["group"] == group
            and r["members"] for c in r["causes"] if c.get("cause_source") == "inferred"]


def broker(ts, **fields):
    return ev("group_config", ts, "", source="broker", **fields)


def group_override(ts, group, **fields):
    return ev("group_config", ts, group, source="group", **fields)


def test_without_the_brokers_word_a_crash_is_judged_by_the_fallback_and_says_so():
    """Kafka's default 45 s as the fallback, brokers at 10 s: the crash after ~10 s reads as a leave (what the
    issue saw); the fallback is what the record names."""
    records = _offsets_with([], {CRASH})
    assert _inferred(records, CRASH) == [("member_left", None)]
    assert not [r for r in records if r["kind"] == "member_timeout"]


def test_the_brokers_session_timeout_makes_the_crash_a_session_timeout():
    records = _offsets_with([broker(_first_ts(), session_timeout_ms=10_000, heartbeat_interval_ms=1000)], {CRASH})
    assert _inferred(records, CRASH) == [("session_timeout", "broker")]
    timeouts = [r for r in records if r["kind"] == "member_timeout"]
    assert [(r["timeout"], r["timeout_source"], r["cause_source"]) for r in timeouts] == [
        ("session", "broker", "inferred")]
    assert timeouts[0]["client_id"] == TRUTH["kip848_crash"].get("victim_client_id", timeouts[0]["client_id"])


def test_a_groups_own_override_wins_over_the_brokers():
    at = _first_ts()
    records = _offsets_with([broker(at, session_timeout_ms=45_000),
                             group_override(at, CRASH, session_timeout_ms=10_000)], {CRASH})
    assert _inferred(records, CRASH) == [("session_timeout", "group")]
    # a group override removed (an event with no keys): the brokers' 45 s again, and the crash reads as a leave
    records = _offsets_with([broker(at, session_timeout_ms=45_000), group_override(at, CRASH, session_timeout_ms=10_000),
                             group_override(at + 1, CRASH)], {CRASH})
    assert _inferred(records, CRASH) == [("member_left", None)]


def test_the_brokers_word_wins_over_the_fallback_whatever_it_is():
    records = _offsets_with([broker(_first_ts(), session_timeout_ms=10_000)], {CRASH},
                            **{"core.kip848_session_timeout": "60s"})
    assert _inferred(records, CRASH) == [("session_timeout", "broker")]


def test_kip848_generations_are_judged_with_the_brokers_default_assignor():
    """Members that name no `group.remote.assignor` get the brokers' first `group.consumer.assignors`: every
    epoch from `__consumer_offsets` alone is then judged, with no mismatch."""
    unchecked = [r for r in _offsets_with([], {SCALE}) if r["kind"] == "generation" and r["members"]]
    assert unchecked and all(r["protocol"] is None and r["expected_assignment"] is None for r in unchecked)
    records = _offsets_with([broker(_first_ts(), assignors=["uniform", "range"])], {SCALE})
    gens = [r for r in records if r["kind"] == "generation" and r["members"]]
    judged = [r for r in gens if r["mismatched_partitions"] is not None]
    assert gens and all(r["protocol"] == "uniform" and r["protocol_source"] == "broker" for r in gens)
    assert judged and all(r["mismatched_partitions"] == 0 for r in judged), [
        (r["generation"], r["mismatched_partitions"], r["expected_reason"]) for r in gens]


def _kip848_member(ts=1000, member="m1", group="g"):
    return ev("join", ts, group, member_id=member, topics=["t"], protocols=[], group_protocol="consumer",
              client_id="c1", host="/127.0.0.1", rebalance_timeout_ms=300_000)


def test_a_frozen_kip848_member_is_warned_and_timed_out_on_the_brokers_session():
    """A KIP-848 member known by its heartbeats: the warning at half the brokers' 20 s, the timeout at 20 s, both
    naming the broker as the session's source (the fallback, 45 s, would warn only after the broker removed it)."""
    member = [_kip848_member(),
              ev("sync", 1500, "g", member_id="m1", generation=1, protocol="uniform", leader=None,
                 assignment=[["t", 0]]),
              ev("heartbeat", 2000, "g", member_id="m1", generation=1, error=None),
              ev("heartbeat", 40_000, "g", member_id="other", generation=1, error=None)]

    def seen(out, kind):
        return [r for r in out if r["kind"] == kind and r["member_id"] == "m1"]

    out = run([broker(0, session_timeout_ms=20_000), *member], CoreSettings(early_warning_pct=50))
    assert [(r["warn_ms"], r["deadline_ms"], r["limit_ms"], r["timeout_source"]) for r in seen(out, "member_at_risk")
            ] == [(12_000, 22_000, 20_000, "broker")]
    assert [(r["deadline_ms"], r["timeout_source"]) for r in seen(out, "member_timeout")] == [(22_000, "broker")]
    fallback = run(member, CoreSettings(early_warning_pct=50))
    assert [(r["warn_ms"], r["timeout_source"]) for r in seen(fallback, "member_at_risk")] == [(24_500, "config")]
    assert seen(fallback, "member_timeout") == []


def test_a_config_change_reaches_members_already_there_and_their_deadlines():
    g = GroupMonitor("g", CoreSettings())
    g.process(parse_event(_kip848_member()))
    m = g.members["m1"]
    assert (m.session_timeout_ms, m.timeout_source) == (45_000, "config")
    g.process(parse_event(broker(1500, session_timeout_ms=15_000)))
    assert (m.session_timeout_ms, m.timeout_source) == (15_000, "broker")
    g.process(parse_event(group_override(1600, "g", session_timeout_ms=25_000)))
    assert (m.session_timeout_ms, m.timeout_source) == (25_000, "group")
    again = GroupMonitor.from_state(json.loads(json.dumps(g.to_state())), CoreSettings())
    assert (again.members["m1"].session_timeout_ms, again.members["m1"].timeout_source) == (25_000, "group")
    assert again.configs == g.configs


def test_a_client_stated_session_holds_until_the_broker_says():
    """The instrumentation of a KIP-848 client may state the session (its user copied the broker's): kept while the
    broker has not said, replaced once it has, and a client's word never replaces the broker's."""
    g = GroupMonitor("g", CoreSettings())
    g.process(parse_event({**_kip848_member(), "session_timeout_ms": 12_000}))
    m = g.members["m1"]
    assert (m.session_timeout_ms, m.timeout_source) == (12_000, "client")
    g.process(parse_event(broker(1500, session_timeout_ms=15_000)))
    assert (m.session_timeout_ms, m.timeout_source) == (15_000, "broker")
    g.process(parse_event({**_kip848_member(ts=1600), "session_timeout_ms": 12_000}))
    assert (m.session_timeout_ms, m.timeout_source) == (15_000, "broker")


def test_streams_and_share_configs_are_kept_apart_from_consumer_groups():
    g = GroupMonitor("g", CoreSettings())
    g.process(parse_event(_kip848_member()))
    g.process(parse_event(broker(1500, group_type="share", session_timeout_ms=15_000)))
    assert g.members["m1"].timeout_source == "config"
    assert g.counters.get("group_config_share") == 1


def test_bad_group_config_events_are_rejected_with_a_reason():
    base = {"v": 1, "type": "group_config", "ts": 1}
    cases = {
        "bad_value:source": {**base, "group": "", "source": "cluster"},
        "bad_value:group": {**base, "group": "g", "source": "broker"},
        "bad_value:group_type": {**base, "group": "", "source": "broker", "group_type": "classic"},
        "bad_value:session_timeout_ms": {**base, "group": "g", "source": "group", "session_timeout_ms": 0},
        "bad_type:assignors": {**base, "group": "", "source": "broker", "assignors": "uniform"},
        "missing_field:source": {**base, "group": ""},
    }
    for reason, value in cases.items():
        got = parse_event(value)
        assert getattr(got, "reason", None) == reason, (reason, got)
    assert isinstance(parse_event({**base, "group": "", "source": "broker", "assignors": None}), GroupConfig)


def test_the_brokers_word_reaches_a_group_that_is_ahead_of_it_and_a_group_that_comes_later():
    """A broker's defaults are a standing setting, not an occurrence: a group whose clock is past the event's time
    still takes it (other cluster-wide events are not applied behind a group's clock), and a group first seen
    later takes it from the shard's cluster log."""
    recon = Reconstructor(CoreSettings(), max_disorder_ms=0)
    for e in [_kip848_member(ts=10_000, member="a", group="ahead"),
              broker(5_000, session_timeout_ms=15_000),
              _kip848_member(ts=20_000, member="b", group="later")]:
        recon.feed(parse_event(e))
    monitors = {g: r.monitor for g, r in recon.runners.items()}
    assert (monitors["ahead"].members["a"].session_timeout_ms, monitors["ahead"].members["a"].timeout_source) == (
        15_000, "broker")
    assert (monitors["later"].members["b"].session_timeout_ms, monitors["later"].members["b"].timeout_source) == (
        15_000, "broker")


def test_an_api_versions_guess_never_replaces_the_release_a_log_line_named():
    g = GroupMonitor("g", CoreSettings())
    g.process(parse_event(ev("broker_release", 1, "", release="4.4.0", source="api_versions")))
    assert g.broker_release == "4.4.0"
    g.process(parse_event(ev("broker_release", 2, "", release="4.0.0")))
    assert g.broker_release == "4.0.0"
    g.process(parse_event(ev("broker_release", 3, "", release="4.4.0", source="api_versions")))
    assert g.broker_release == "4.0.0"
    again = GroupMonitor.from_state(json.loads(json.dumps(g.to_state())), CoreSettings())
    again.process(parse_event(ev("broker_release", 4, "", release="4.4.0", source="api_versions")))
    assert again.broker_release == "4.0.0"


def test_a_groups_override_behind_its_clock_is_applied_not_rejected():
    """The broker poller stamps a group's override with the job's event time, which a busy group's own clock may
    have passed: a standing setting, applied as the group stands (replay and the job alike), never dead-lettered."""
    recon = Reconstructor(CoreSettings(), max_disorder_ms=0)
    for e in [_kip848_member(ts=10_000), ev("heartbeat", 20_000, "g", member_id="m1", generation=1, error=None),
              group_override(15_000, "g", session_timeout_ms=25_000)]:
        recon.feed(parse_event(e))
    m = recon.runners["g"].monitor.members["m1"]
    assert (m.session_timeout_ms, m.timeout_source) == (25_000, "group")
    assert recon.stats.rejected == {} and recon.rejects == []
    # any other event that far behind is late, as before
    recon.feed(parse_event(ev("heartbeat", 12_000, "g", member_id="m1", generation=1, error=None)))
    assert recon.stats.rejected == {"late_event": 1}


def test_a_setting_moves_no_clock_and_fires_no_timer():
    """Stamped at the job's event time, a setting may be ahead of a group's own events: it neither moves the
    group's clock (which would make its next events late) nor fires its timers."""
    g = GroupMonitor("g", CoreSettings())
    g.process(parse_event(_kip848_member(ts=1000)))
    g.process(parse_event(ev("sync", 1200, "g", member_id="m1", generation=1, protocol="uniform", leader=None,
                             assignment=[["t", 0]])))
    g.process(parse_event(ev("heartbeat", 2000, "g", member_id="m1", generation=1, error=None)))
    before = g.clock_ms
    assert g.process(parse_event(broker(900_000, session_timeout_ms=20_000))) == []
    assert g.clock_ms == before and "m1" in g.members
    assert g.process(parse_event(ev("heartbeat", 3000, "g", member_id="m1", generation=1, error=None))) == []
    assert g.members["m1"].session_deadline() == 23_000


def test_a_group_known_by_its_override_alone_keeps_it_until_its_members_come():
    """The broker poller describes every group the cluster lists, often before their members' first event reaches
    the monitor: the group's runner, holding its override alone, is not dropped as idle before they come (it was:
    its last event time stayed 0, and the next prune dropped it with its settings)."""
    t0 = 1_795_000_000_000  # (epoch milliseconds, as the events carry them)
    recon = Reconstructor(CoreSettings(), max_disorder_ms=0)
    recon.prune_every = 1
    recon.feed(parse_event(broker(t0, session_timeout_ms=10_000)))
    recon.feed(parse_event(group_override(t0, "g", session_timeout_ms=25_000)))
    for t in range(t0 + 1_000, t0 + 60_000, 1_000):  # another group's events: the prune runs at each
        recon.feed(parse_event(ev("heartbeat", t, "other", member_id="x", generation=1, error=None)))
    recon.feed(parse_event(_kip848_member(ts=t0 + 61_000)))
    m = recon.runners["g"].monitor.members["m1"]
    assert (m.session_timeout_ms, m.timeout_source) == (25_000, "group")


def _share_member(ts=1000, mid="s1"):
    return {"v": 1, "type": "join", "ts": ts, "group": "g", "member_id": mid, "protocols": ["simple"],
            "topics": ["t"], "group_protocol": "share", "client_id": "c-s", "host": "127.0.0.1"}


def test_a_share_member_takes_the_share_familys_session_not_the_consumer_familys():
    """A share group's members (KIP-932) are timed by `group.share.session.timeout.ms` (and a group's own
    `share.session.timeout.ms`), a KIP-848 member of the same monitor by the consumer family's."""
    g = GroupMonitor("g", CoreSettings())
    g.process(parse_event(_share_member()))
    g.process(parse_event(_kip848_member()))
    share, consumer = g.members["s1"], g.members["m1"]
    assert (share.session_timeout_ms, share.timeout_source) == (45_000, "config")
    g.process(parse_event(broker(1500, session_timeout_ms=15_000)))
    assert (share.session_timeout_ms, share.timeout_source) == (45_000, "config")
    assert (consumer.session_timeout_ms, consumer.timeout_source) == (15_000, "broker")
    g.process(parse_event(broker(1600, group_type="share", session_timeout_ms=6_000, heartbeat_interval_ms=1_000)))
    assert (share.session_timeout_ms, share.timeout_source, share.heartbeat_interval_ms) == (6_000, "broker", 1_000)
    assert (consumer.session_timeout_ms, consumer.timeout_source) == (15_000, "broker")
    g.process(parse_event(group_override(1700, "g", group_type="share", session_timeout_ms=8_000)))
    assert (share.session_timeout_ms, share.timeout_source) == (8_000, "group")
    assert g.counters.get("group_config_share") == 2
    again = GroupMonitor.from_state(json.loads(json.dumps(g.to_state())), CoreSettings())
    assert (again.members["s1"].session_timeout_ms, again.members["s1"].timeout_source) == (8_000, "group")
    g.process(parse_event(_share_member(ts=1800, mid="s2")))  # a member coming later takes the group's at once
    assert (g.members["s2"].session_timeout_ms, g.members["s2"].timeout_source) == (8_000, "group")


def _streams_member(ts, mid):
    return {"v": 1, "type": "join", "ts": ts, "group": "g", "member_id": mid, "protocols": ["sticky"], "topics": [],
            "group_protocol": "streams", "client_id": f"{mid}-StreamThread-1-consumer", "host": "127.0.0.1",
            "process_id": f"p-{mid}", "rebalance_timeout_ms": 300_000}


def test_a_streams_member_known_by_its_pushes_is_warned_on_the_streams_familys_session():
    """A streams group's member (KIP-1071) whose KIP-714 pushes stop (kill -9): the warning at half the brokers'
    `group.streams.session.timeout.ms` plus the pushes' report delay (1.5 intervals), before the session's deadline
    and naming the broker as its source; the consumer family's session does not apply to it. With 6 s sessions and
    2 s pushes, half the session and the delay are the whole of it: the warning comes with the timeout."""
    def push(ts, mid):
        return ev("client_metrics", ts, "g", member_id=mid, client_id=f"{mid}-StreamThread-1-consumer",
                  source="kip714", interval_ms=2000, last_heartbeat_ms_ago=500, last_poll_ms_ago=100)

    def seen(session_ms):
        events = [broker(0, session_timeout_ms=45_000),  # the consumer family's: not a streams member's
                  broker(0, group_type="streams", session_timeout_ms=session_ms, heartbeat_interval_ms=1_000),
                  _streams_member(1000, "a"), _streams_member(1000, "b"),
                  ev("rebalance_started", 1100, "g", generation=0, reason="epoch 1"),
                  ev("generation_completed", 1101, "g", generation=1, protocol="sticky", leader=None,
                     protocol_type="streams")]
        events += [ev("sync", 1102 + i, "g", member_id=m, generation=1, protocol="sticky", leader=None, assignment=[],
                      member_state="stable", active_tasks=[["0", i]], standby_tasks=[], warmup_tasks=[])
                   for i, m in enumerate("ab")]
        for t in range(2000, 40_001, 2000):  # a's pushes every 2 s; b's stop after 10 s
            events.append(push(t, "a"))
            if t <= 10_000:
                events.append(push(t + 1, "b"))
        out = run(events, CoreSettings(early_warning_pct=50))
        return ([r for r in out if r["kind"] == "member_at_risk" and r["member_id"] == "b"],
                [r for r in out if r["kind"] == "member_timeout" and r["member_id"] == "b"])

    warned, timed_out = seen(15_000)
    last_seen = 10_001 - 500
    assert [(w["warn_ms"], w["deadline_ms"], w["limit_ms"], w["timeout_source"], w["client_id"]) for w in warned] == \
        [(last_seen + 7_500, last_seen + 15_000, 15_000, "broker", "b-StreamThread-1-consumer")]
    assert warned[0]["warn_ms"] + 3000 <= warned[0]["ts"] < warned[0]["deadline_ms"]  # the next push of a's after
    assert [(t["timeout"], t["deadline_ms"], t["timeout_source"]) for t in timed_out] == \
        [("session", last_seen + 15_000, "broker")]
    warned, timed_out = seen(6_000)
    assert warned and warned[0]["ts"] >= warned[0]["deadline_ms"] == timed_out[0]["deadline_ms"], (warned, timed_out)
