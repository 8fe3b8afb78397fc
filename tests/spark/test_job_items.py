"""The job's commits take the monitor's fast path (`GroupMonitor.process_commit`, through `JobItems.beat` and
`NewRows.beat`, spark/job_items.py) with exactly the effect of `process` on the event the processor would build
(`hot_event`): same records, same state (the duplicate fingerprints included), same status, over random sequences
with rebalances, timeouts, duplicates and commits that name no member."""
from __future__ import annotations

import json
import random

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.group.monitor import _fingerprint, commit_fingerprint
from rebalance_monitor.core.settings import CoreSettings
from rebalance_monitor.decoding.event_columns import hot_event
from rebalance_monitor.spark.job_items import JobItems


def _events(rng: random.Random, n: int) -> list[dict]:
    members = [f"m{i}" for i in range(rng.randint(1, 4))]
    ts, gen, out = 1_700_000_000_000, 0, []
    for _ in range(n):
        ts += rng.choice((0, 1, 200, 1000, 3000, 3000, 9000, 31_000))
        m = rng.choice(members)
        base = {"v": 1, "ts": ts, "group": "g", "member_id": m}
        if rng.random() < 0.1:
            base["client_id"] = rng.choice(("c1", "c'2"))
        r = rng.random()
        if r < 0.08:
            out.append({**base, "type": "join", "protocols": ["range"], "topics": ["t"],
                        "session_timeout_ms": rng.choice((6000, 10_000)), "rebalance_timeout_ms": 20_000})
        elif r < 0.16:
            gen += rng.choice((0, 1))
            out.append({**base, "type": "sync", "generation": gen, "protocol": "range", "leader": members[0],
                        "assignment": [["t", members.index(m)]]})
        elif r < 0.5:
            out.append({**base, "type": "heartbeat", "generation": gen, "error": None})
        else:
            commit = {**base, "type": "commit", "offsets": [["t", rng.randrange(4), rng.randrange(100)]]}
            if rng.random() < 0.3:
                commit["member_id"] = ""  # (as `__consumer_offsets` gives it: a sign of life of the owner)
            if rng.random() < 0.3:
                commit["generation"] = gen
            out.append(commit)
            if rng.random() < 0.2:
                out.append(dict(commit))  # a producer's retry: a duplicate
    return out


def _columns(d: dict) -> tuple:
    """A commit's pending item, as `NewRows.item` keeps it."""
    return ("commit", d["member_id"], d.get("generation"), None, d.get("group_instance_id"), d.get("client_id"),
            d.get("host"), d["offsets"])


def _run(events: list[dict], fast: bool, settings: CoreSettings) -> tuple[list, int]:
    g = GroupMonitor("g", settings)
    out, taken = [], 0
    for i, d in enumerate(events):
        if d["type"] == "commit":
            item = _columns(d)
            if fast:
                done = JobItems.beat(g, item, d["ts"])
                assert done is True or (isinstance(done, list) and done)
                taken += 1
                out.append((i, [] if done is True else done))
            else:
                out.append((i, g.process(JobItems.event(item, d["ts"], "g"))))
        else:
            ev = parse_event(d)
            assert not isinstance(ev, Rejected), ev
            out.append((i, g.process(ev)))
        if i % 7 == 0:
            out.append(("advance", g.advance_to(d["ts"])))
    out.append(("status", g.status()))
    out.append(("state", json.dumps(g.to_state(), sort_keys=True, default=str)))
    return out, taken


def test_the_commit_fast_path_equals_process():
    settings = CoreSettings(settle_ms=5000, storm_window_ms=60_000, storm_min_rebalances=3)
    taken = 0
    for seed in range(200):
        rng = random.Random(seed)
        events = _events(rng, rng.randint(5, 80))
        slow, _ = _run(events, False, settings)
        fast, n = _run(events, True, settings)
        assert fast == slow, seed
        taken += n
    assert taken > 1000


def test_a_commit_fingerprint_is_its_events():
    for member, gen, inst, client, host, offsets in (
            ("m1", 3, None, "c'l", "h\u00e9", [["t", 0, 5], ["t\"2", 1, 7]]), ("", None, "i", None, None, [["t", 0, 0]])):
        ev = hot_event("commit", 123, "g\u2603", member, gen, None, inst, client, host, offsets)
        assert commit_fingerprint(123, "g\u2603", member, inst, client, host, ev.offsets, gen) == _fingerprint(ev)
