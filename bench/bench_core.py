"""Core throughput on one core: a heartbeat-heavy mix (95% heartbeats/polls) over 10,000 members in 500
groups, and state bytes per member. Targets (issue 2): >= 200,000 events/s, < 1 KiB of state per member.

Prints three figures measured side by side in one run:
  - GroupMonitor.process alone (events already parsed and ordered: the state machine's cost),
  - the full replay path (Reconstructor: reorder buffer + watermark + timers + state machine),
  - parsing JSON into events (the decoder's cost, for scale).

The input (about a million objects: the raw dicts, their texts, the parsed events) stays alive throughout, so
where the collector's full passes fall (~0.1 s each here) moves with small changes in what the core allocates: one
lands inside the core's timing or the replay's. `--quiet-gc` takes that out: the input is frozen out of the
collector's passes (gc.freeze) and each timed part starts from a collected heap.
"""
from __future__ import annotations

import argparse
import gc
import json
import random
import time

from rebalance_monitor.decoding.json_parser import use_fastest_available
from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.settings import CoreSettings


def workload(groups: int, members_per_group: int, events: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    out = []
    t = 1_700_000_000_000
    for g in range(groups):
        name = f"group-{g}"
        mids = [f"{name}-m{i}" for i in range(members_per_group)]
        for i, m in enumerate(mids):
            out.append({"v": 1, "type": "join", "ts": t, "group": name, "member_id": m, "protocols": ["range"],
                        "topics": ["orders"], "session_timeout_ms": 45_000, "rebalance_timeout_ms": 300_000,
                        "heartbeat_interval_ms": 3000, "client_id": f"c{i}", "host": f"/10.1.{g % 250}.{i}"})
        for i, m in enumerate(mids):
            out.append({"v": 1, "type": "sync", "ts": t + 100, "group": name, "member_id": m, "generation": 1,
                        "protocol": "range", "leader": mids[0], "assignment": [["orders", i]]})
    t += 1000
    n = len(out)
    start = t
    while n < events:
        # event time advances so that each member heartbeats about every 3 s (as the Java client does)
        t = start + n * 3000 // (groups * members_per_group * 2)
        g = rng.randrange(groups)
        name = f"group-{g}"
        m = f"{name}-m{rng.randrange(members_per_group)}"
        r = rng.random()
        if r < 0.60:
            e = {"v": 1, "type": "heartbeat", "ts": t, "group": name, "member_id": m, "generation": 1, "error": None}
        elif r < 0.95:
            e = {"v": 1, "type": "poll", "ts": t, "group": name, "member_id": m, "records": 50}
        else:
            e = {"v": 1, "type": "commit", "ts": t, "group": name, "member_id": m, "offsets": [["orders", 0, n]]}
        out.append(e)
        n += 1
    return out


def quiet_gc(on: bool, freeze: bool = False) -> None:
    if on:
        gc.collect()
        if freeze:
            gc.freeze()


def main() -> None:
    use_fastest_available()  # the core's parser with orjson, as the drivers have it
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=500)
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--quiet-gc", action="store_true",
                    help="freeze the input out of the collector's passes and collect before each timed part")
    args = ap.parse_args()
    raw = workload(args.groups, args.members, args.events)
    texts = [json.dumps(e) for e in raw]
    settings = CoreSettings()

    t0 = time.perf_counter()
    parsed = [parse_event(s) for s in texts]
    t_parse = time.perf_counter() - t0
    quiet_gc(args.quiet_gc, freeze=True)

    monitors: dict[str, GroupMonitor] = {}
    t0 = time.perf_counter()
    for ev in parsed:
        g = monitors.get(ev.group)
        if g is None:
            g = monitors[ev.group] = GroupMonitor(ev.group, settings)
        g.process(ev)
    t_core = time.perf_counter() - t0

    recon = Reconstructor(settings, max_disorder_ms=2000)
    quiet_gc(args.quiet_gc)
    t0 = time.perf_counter()
    for ev in parsed:
        recon.feed(ev)
    recon.finish()
    t_replay = time.perf_counter() - t0

    members = sum(len(g.members) for g in monitors.values())
    state_bytes = sum(len(json.dumps(g.to_state(), separators=(",", ":"))) for g in monitors.values())
    n = len(parsed)
    print(f"events: {n:,} over {args.groups} groups x {args.members} members "
          f"({members:,} members live at the end)")
    print(f"core GroupMonitor.process : {n / t_core:12,.0f} events/s  (target >= 200,000)")
    print(f"replay path (reorder+core): {n / t_replay:12,.0f} events/s  ({t_core / t_replay:.2f}x of core alone)")
    print(f"JSON parse into events    : {n / t_parse:12,.0f} events/s")
    print(f"state: {state_bytes:,} bytes JSON = {state_bytes / max(1, members):,.0f} bytes per member "
          f"(target < 1,024)")


if __name__ == "__main__":
    main()
