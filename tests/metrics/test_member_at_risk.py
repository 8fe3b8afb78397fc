"""The members at risk on /metrics (metrics/risk_families.py): a series per member past its early-warning point,
valued its deadline; gone when the member times out, when its group's status no longer lists it (heard from again,
left), with its group, and kept across a restart like the group's other gauges. The last test drives the core's own
records (a member that recovers, one that times out) into the exporter."""
from __future__ import annotations

import json

from helpers.events import SESSION, hb, heartbeats, stable_group
from helpers.exposition import parse, series, value

from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.metrics.catalogue import MEMBER_AT_RISK_DEADLINE
from rebalance_monitor.metrics.updater import MetricsUpdater

AT_RISK = MEMBER_AT_RISK_DEADLINE.name
T0 = 1_700_000_000_000


def at_risk(member, risk="session", deadline_ms=T0 + 5_000, group="g", **identity):
    return {"kind": "member_at_risk", "group": group, "ts": T0, "member_id": member, "risk": risk,
            "last_seen_ms": T0 - 5_000, "warn_ms": T0, "deadline_ms": deadline_ms, "limit_ms": 10_000,
            "detected_ms": T0, **identity}


def timeout(member, kind="session", group="g"):
    return {"kind": "member_timeout", "group": group, "member_id": member, "timeout": kind, "last_seen_ms": T0 - 10_000,
            "deadline_ms": T0 + 5_000, "detected_ms": T0 + 6_000, "client_id": "c-" + member, "host": "/10.0.0.1"}


def status(listed, group="g", **kw):
    r = {"kind": "group_status", "group": group, "ts": T0 + 1_000, "state": "Stable", "generation": 1, "members": 3,
         "max_heartbeat_gap_ratio": 0.6, "heartbeat_gap_ratios": {}, "in_storm": False, "coordinator_partition": 1}
    if listed is not None:
        r["members_at_risk"] = listed
    r.update(kw)
    return r


def at_risk_series(u: MetricsUpdater) -> dict:
    return {dict(k)["member_id"] + "/" + dict(k)["risk"]: v for k, v in series(parse(u.render()), AT_RISK).items()}


def test_a_member_at_risk_is_a_series_valued_its_deadline_with_who_it_is():
    u = MetricsUpdater()
    u.apply([at_risk("m1", client_id="orders-1", host="/10.0.0.11"),
             at_risk("m2", risk="poll", deadline_ms=T0 + 30_500),
             at_risk("m3", deadline_ms=None), at_risk(None)])            # malformed: no series
    s = parse(u.render())
    assert value(s, AT_RISK, group="g", group_type="unknown", risk="session", member_id="m1", client_id="orders-1",
                 host="/10.0.0.11") == (T0 + 5_000) / 1000
    assert value(s, AT_RISK, group="g", risk="poll", member_id="m2", client_id="", host="") == (T0 + 30_500) / 1000
    assert at_risk_series(u) == {"m1/session": (T0 + 5_000) / 1000, "m2/poll": (T0 + 30_500) / 1000}
    u.apply([at_risk("m1", deadline_ms=T0 + 9_000, client_id="orders-1", host="/10.0.0.11")])   # a later silence
    assert at_risk_series(u)["m1/session"] == (T0 + 9_000) / 1000


def test_the_timeout_removes_the_members_series_of_either_risk():
    u = MetricsUpdater()
    u.apply([at_risk("m1"), at_risk("m1", risk="poll"), at_risk("m2")])
    u.apply([timeout("m1", "poll")])
    assert at_risk_series(u) == {"m2/session": (T0 + 5_000) / 1000}
    assert value(parse(u.render()), "kafka_consumergroup_member_timeouts_total", group="g", timeout="poll",
                 client_id="c-m1", host="/10.0.0.1") == 1


def test_a_status_that_no_longer_lists_the_member_removes_it_and_one_that_says_nothing_keeps_it():
    u = MetricsUpdater()
    u.apply([at_risk("m1"), at_risk("m2"), at_risk("m3", risk="poll")])
    u.apply([status([["m2", "session"], ["m3", "session"], ["m9", "poll"]])])   # m1 recovered; m3's poll too
    assert at_risk_series(u) == {"m2/session": (T0 + 5_000) / 1000}             # m9 listed: no record, no series
    u.apply([status(None)])                                                     # a core that does not say it
    assert list(at_risk_series(u)) == ["m2/session"]
    u.apply([status("not a list"), status([["m2"], "m2"])])                     # malformed: all gone but none listed
    assert at_risk_series(u) == {}


def test_the_series_go_with_the_group_and_survive_a_restart():
    u = MetricsUpdater()
    u.apply([at_risk("m1", client_id="a", host="/h"), at_risk("x1", group="other")])
    again = MetricsUpdater()
    again.load_state(json.loads(u.state_text(0)))
    assert series(parse(again.render()), AT_RISK) == series(parse(u.render()), AT_RISK)
    again.apply([{"kind": "group_deleted", "group": "g", "ts": T0 + 1}])
    assert at_risk_series(again) == {"x1/session": (T0 + 5_000) / 1000}


def test_the_cores_records_set_the_series_and_remove_it_on_recovery_and_on_timeout():
    g = GroupMonitor("g")
    u = MetricsUpdater()
    for e in stable_group(("a", "b", "c")) + heartbeats(("a", "b", "c"), 1, 3000, 12000):
        u.apply(g.process(parse_event(e)))
    # b and c fall silent after their heartbeats at 12001 and 12002; a goes on
    for e in heartbeats(("a",), 1, 15000, 18000):
        u.apply(g.process(parse_event(e)))
    warned = 12001 + SESSION // 2 + 100
    u.apply(g.advance_to(warned) + [g.status(warned)])
    assert at_risk_series(u) == {"b/session": (12001 + SESSION) / 1000, "c/session": (12002 + SESSION) / 1000}
    # b is heard from again: the group's next status no longer lists it
    u.apply(g.process(parse_event(hb(warned + 100, "b", 1))) + [g.status(warned + 100)])
    assert at_risk_series(u) == {"c/session": (12002 + SESSION) / 1000}
    # c stays silent past its deadline: its timeout removes it
    out = g.advance_to(12002 + SESSION + 1)
    assert [r["member_id"] for r in out if r["kind"] == "member_timeout"] == ["c"]
    u.apply(out)
    assert at_risk_series(u) == {}
