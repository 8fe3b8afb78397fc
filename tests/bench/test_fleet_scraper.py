"""The fleet bench's scraper (bench/fleet_process.py `Scraper.note`) on the real exporter's exposition, without HTTP,
broker or Spark: a watched member's at-risk series seen with its deadline, then gone after its timeout; its group's
gap ratio (under the group's labels as the exporter writes them) and timeouts counter; a member not watched, and a
failed scrape, change nothing."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from fleet_process import Scraper  # noqa: E402

from rebalance_monitor.metrics.updater import MetricsUpdater  # noqa: E402

T0 = 1_800_000_000_000


def _status(group, ratio, listed):
    return {"kind": "group_status", "group": group, "ts": T0, "group_type": "consumer", "state": "Stable",
            "generation": 1, "members": 10, "max_heartbeat_gap_ratio": ratio, "heartbeat_gap_ratios": {},
            "in_storm": False, "coordinator_partition": 0, "max_poll_gap_ratio": 0.1, "poll_gap_ratios": {},
            "members_at_risk": listed}


def test_the_scraper_reads_a_watched_members_series_its_groups_ratio_and_timeouts():
    u = MetricsUpdater()
    scraper = Scraper("http://127.0.0.1:1/metrics", {"g1-m0": ("g-1", "session"), "g2-m0": ("g-2", "poll")}, 0.5, 1)
    u.apply([_status("g-1", 0.2, []), _status("g-2", 0.1, [])])
    scraper.note(u.render(), 10.0)
    assert (scraper.at_risk, scraper.warned, scraper.timed_out) == ({}, {}, {})
    risk = {"kind": "member_at_risk", "group": "g-1", "ts": T0, "member_id": "g1-m0", "risk": "session",
            "last_seen_ms": T0 - 22_500, "warn_ms": T0, "deadline_ms": T0 + 22_500, "limit_ms": 45_000,
            "detected_ms": T0, "client_id": "c-g1-m0", "host": "/127.0.0.1"}
    other = dict(risk, member_id="g1-m1", deadline_ms=T0 + 1_000)          # at risk, not watched
    u.apply([risk, other, _status("g-1", 0.55, [["g1-m0", "session"], ["g1-m1", "session"]])])
    scraper.note(u.render(), 11.0)
    assert scraper.at_risk == {"g1-m0": (11.0, (T0 + 22_500) / 1000)}
    assert scraper.warned == {"g-1": 11.0} and scraper.timed_out == {} and scraper.cleared == {}
    scraper.note("", 12.0)                                                  # a failed scrape: nothing went
    assert scraper.cleared == {}
    u.apply([{"kind": "member_timeout", "group": "g-1", "member_id": "g1-m0", "timeout": "session",
              "last_seen_ms": T0 - 22_500, "deadline_ms": T0 + 22_500, "detected_ms": T0 + 30_000}])
    scraper.note(u.render(), 13.0)
    assert scraper.cleared == {"g1-m0": 13.0} and scraper.timed_out == {"g-1": 13.0}
    assert scraper.at_risk == {"g1-m0": (11.0, (T0 + 22_500) / 1000)} and "g-2" not in scraper.warned
