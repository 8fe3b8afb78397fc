"""`GroupMonitor.process_beat` (the heartbeat / poll fast path the Spark processor, replay and `process` itself take)
has exactly the effect of the event's handler (`process_full`) on the same event: same records, same state, same
status, over random event sequences (timeouts, rebalances, storms, errors, static members, identity changes) and
over a capture from the bundled broker."""
from __future__ import annotations

import json
import os
import random

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.settings import CoreSettings

DATA = os.path.join(os.path.dirname(__file__), "data", "tansu_static_restart.jsonl")


def _random_events(rng: random.Random, n: int) -> list[dict]:
    members = [f"m{i}" for i in range(rng.randint(1, 5))]
    ts = 1_700_000_000_000
    gen = 0
    out = []
    for _ in range(n):
        ts += rng.choice((0, 1, 5, 200, 1000, 3000, 3000, 3000, 9000, 31_000))
        m = rng.choice(members)
        ident = {}
        if rng.random() < 0.2:
            ident["client_id"] = rng.choice(("c1", "c2"))
        if rng.random() < 0.1:
            ident["host"] = rng.choice(("/10.0.0.1", "/10.0.0.2"))
        if rng.random() < 0.1:
            ident["group_instance_id"] = f"inst-{m}"
        r = rng.random()
        base = {"v": 1, "ts": ts, "group": "g", "member_id": m, **ident}
        if r < 0.06:
            out.append({**base, "type": "join", "protocols": ["range"], "topics": ["t"],
                        "session_timeout_ms": rng.choice((6000, 10_000)), "rebalance_timeout_ms": 20_000})
        elif r < 0.12:
            gen += rng.choice((0, 1))
            out.append({**base, "type": "sync", "generation": gen, "protocol": "range", "leader": members[0],
                        "assignment": [["t", members.index(m)]]})
        elif r < 0.14:
            out.append({**base, "type": "leave", "reason": "the consumer is being closed"})
        elif r < 0.6:
            err = rng.choice((None,) * 12 + ("REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID", "NOT_COORDINATOR"))
            out.append({**base, "type": "heartbeat", "generation": rng.choice((gen, gen, gen, gen - 1, -1)),
                        "error": err})
        else:
            out.append({**base, "type": "poll", "records": rng.choice((None, 0, 7))})
    return out


def _run(events: list[dict], fast: bool, settings: CoreSettings, advance_every: int = 0) -> tuple[list, int]:
    g = GroupMonitor(events[0]["group"], settings)
    out: list = []
    taken = 0
    for i, d in enumerate(events):
        hb = d["type"] == "heartbeat"
        if fast and d["type"] in ("heartbeat", "poll") and g.process_beat(
                hb, d["ts"], d["member_id"], d.get("generation"), d.get("error"), d.get("group_instance_id"),
                d.get("client_id"), d.get("host")):
            taken += 1
            out.append((i, []))
        else:
            ev = parse_event(d)
            assert not isinstance(ev, Rejected), ev
            out.append((i, g.process(ev) if fast else g.process_full(ev)))  # (process itself takes the fast path)
        if advance_every and i % advance_every == 0:
            out.append(("advance", g.advance_to(d["ts"])))
    out.append(("status", g.status()))
    out.append(("state", json.dumps(g.to_state(), sort_keys=True, default=str)))
    return out, taken


def test_fast_path_equals_process_on_random_sequences():
    settings = CoreSettings(settle_ms=5000, storm_window_ms=60_000, storm_min_rebalances=3)
    taken_total = 0
    for seed in range(300):
        rng = random.Random(seed)
        events = _random_events(rng, rng.randint(5, 120))
        every = rng.choice((0, 3, 7))
        ref, _ = _run(events, False, settings, every)
        got, taken = _run(events, True, settings, every)
        assert got == ref, f"seed {seed}"
        taken_total += taken
    assert taken_total > 1000  # the fast path really ran (and the slow path covered the rest)


def test_fast_path_equals_process_on_a_steady_group():
    # the shape of a busy group: a generation, then heartbeats and polls every few seconds
    events = [{"v": 1, "type": "join", "ts": 1000 + i, "group": "g", "member_id": f"m{i}", "protocols": ["range"],
               "topics": ["t"], "session_timeout_ms": 10_000, "rebalance_timeout_ms": 30_000} for i in range(3)]
    events += [{"v": 1, "type": "sync", "ts": 1100 + i, "group": "g", "member_id": f"m{i}", "generation": 1,
                "protocol": "range", "leader": "m0", "assignment": [["t", i]]} for i in range(3)]
    for s in range(1, 200):
        for i in range(3):
            events.append({"v": 1, "type": "heartbeat", "ts": 1100 + s * 3000 + i, "group": "g",
                           "member_id": f"m{i}", "generation": 1, "error": None})
            events.append({"v": 1, "type": "poll", "ts": 1600 + s * 3000 + i, "group": "g", "member_id": f"m{i}",
                           "records": 5})
    ref, _ = _run(events, False, CoreSettings())
    got, taken = _run(events, True, CoreSettings())
    assert got == ref
    assert taken > 0.9 * (len(events) - 6)


def test_fast_path_equals_process_on_the_captured_static_restart():
    events = [json.loads(line) for line in open(DATA)]
    settings = CoreSettings()
    ref, _ = _run(events, False, settings)
    got, taken = _run(events, True, settings)
    assert got == ref
    assert taken > 0


def test_fast_path_declines_what_it_does_not_cover():
    g = GroupMonitor("g", CoreSettings())
    # unknown member: declined, nothing changed
    before = json.dumps(g.to_state(), sort_keys=True, default=str)
    assert not g.process_beat(True, 5, "nobody", 1, None, None, None, None)
    assert json.dumps(g.to_state(), sort_keys=True, default=str) == before
