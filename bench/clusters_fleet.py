"""The clusters bench's outside world, in a process of its own (bench_clusters.py starts it with spawn): one
simulated fleet (fleet_schedule.py) per watched cluster, each sending its members' events at live cadence to that
cluster's events topic, all through one producer. Apart from the deployments' processes, so that its CPU counts in
none of them.

The conversation on `conn`: ("started", start_ms); after `seconds` of live cadence, ("done", figures): events sent,
how far the sender fell behind, its CPU, and each cluster's generations ({(group, generation): its last sync's
time, ms}) with its churned groups.
"""
from __future__ import annotations

import time


def main(conn, bootstrap: str, topics: dict[str, str], fleet_args: dict, seconds: float) -> None:
    """`topics`: cluster name -> its events topic."""
    import orjson
    from confluent_kafka import Producer
    from fleet_process import produce_due
    from fleet_schedule import Fleet

    start_ms = int(time.time() * 1000)
    fleets = {name: Fleet(start_ms=start_ms, **{**fleet_args, "seed": fleet_args.get("seed", 1) + i})
              for i, name in enumerate(topics)}
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "log_level": 3,
                  "queue.buffering.max.messages": 1_000_000})
    conn.send(("started", start_ms))
    sent, behind, dumps, error = 0, 0.0, orjson.dumps, None
    try:
        while time.time() < start_ms / 1000.0 + seconds:
            now = int(time.time() * 1000)
            for name, fleet in fleets.items():
                sent += produce_due(p, topics[name], fleet.due(now), dumps)
            p.poll(0)
            behind = max(behind, time.time() - now / 1000.0)
            time.sleep(max(0.0, 0.1 - (time.time() - now / 1000.0)))
        p.flush(30)
    except Exception as exc:  # noqa: BLE001 - said in the report: the fleet stopped sending
        error = repr(exc)
    conn.send(("done", {
        "sent": sent, "behind_s": behind, "cpu_s": time.process_time(), "error": error, "start_ms": start_ms,
        "members": sum(f.members for f in fleets.values()),
        "generations": {name: dict(f.generations) for name, f in fleets.items()},
        "churn_groups": {name: [g.name for g in f.groups.values() if g.churn] for name, f in fleets.items()},
        "churned": {name: dict(f.churned) for name, f in fleets.items()}}))
