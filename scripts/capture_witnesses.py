"""Capture what real Apache Kafka brokers and real clients record of the workload scenarios: the three inputs
of the monitor and the clients' own view, into tests/witnesses/data/<kafka version>/ (test data of the
witness tests, which replay them offline).

    .venv/bin/python scripts/capture_witnesses.py [--kafka 4.4.0|3.9.2] [--scenarios a,b,...]

Files: `coordinator.log` (the coordinator's log lines as the broker wrote them), `offsets.jsonl` (the
`__consumer_offsets` records, `replay --source offsets-topic` lines), `events.jsonl` (the instrumented
clients' canonical events), `truth.json` (per scenario: its group and the clients' own stable points:
generation, member ids), `topic_ids.json` (the cluster's topic ids and names: Kafka 4.x names the topics of
KIP-848 records in `__consumer_offsets` by id only; replay with `kafka.topic_ids` set to this file).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    from rebalance_monitor.testing.broker import Broker
    from rebalance_monitor.testing.kafka_install import KAFKA_VERSION
    from rebalance_monitor.testing.witness_compare import witnesses_of
    from rebalance_monitor.testing.witnesses import offsets_dump_lines, read_topic
    from rebalance_monitor.workload import SCENARIOS, run_scenario

    ap = argparse.ArgumentParser()
    ap.add_argument("--kafka", default=KAFKA_VERSION)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    out = Path(args.out or ROOT / "tests" / "witnesses" / "data" / args.kafka)
    out.mkdir(parents=True, exist_ok=True)
    broker = Broker(version=args.kafka).start()
    try:
        broker.create_topics({"events": 1})
        truth = {}
        for name in args.scenarios.split(","):
            res = run_scenario(name, broker.bootstrap, "events", group=f"w-{name}", topic=f"w-{name}")
            truth[name] = {"group": res.group, "topic": res.topic, "cleanup_ms": res.cleanup_ms,
                           "witnesses": list(witnesses_of(res.expect)),
                           "stable": [{"generation": a["generation"], "member_ids": a["member_ids"]}
                                      for a in res.actions if a["action"] == "stable"],
                           "actions": [{k: v for k, v in a.items() if k != "ts"} for a in res.actions]}
            print(f"{name}: {len(res.actions)} actions", file=sys.stderr)
        time.sleep(3)
        groups = {t["group"] for t in truth.values()}
        log = [line for line in broker.coordinator_log.read_text().splitlines()
               if any(g in line for g in groups) or "Elected" in line or "Resigned" in line]
        (out / "coordinator.log").write_text("\n".join(log) + "\n")
        offsets = read_topic(broker.bootstrap, "__consumer_offsets")
        (out / "offsets.jsonl").write_text("\n".join(offsets_dump_lines(
            [r for r in offsets if r[0] is not None and any(g.encode() in r[0] for g in groups)])) + "\n")
        from rebalance_monitor.inputs.topic_ids import cluster_lookup
        from rebalance_monitor.kafka_connection import KafkaConnection

        ids = {tid: name for tid, name in cluster_lookup(KafkaConnection(broker.bootstrap))().items()
               if name in {t["topic"] for t in truth.values()}}
        (out / "topic_ids.json").write_text(json.dumps(ids, indent=1, sort_keys=True) + "\n")
        events = read_topic(broker.bootstrap, "events")
        (out / "events.jsonl").write_text("\n".join(v.decode() for _k, v, _ts in events if v) + "\n")
        (out / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
