"""Helpers shared by the assignor tests: Kafka's test fixtures (rack layouts, string formats)."""
from __future__ import annotations

import json
from pathlib import Path

from rebalance_monitor.core.assignors import MemberSubscription, assign

CASES = Path(__file__).resolve().parents[1] / "assignors" / "cases"


def load_cases(name: str) -> list[dict]:
    return json.loads((CASES / name).read_text())


def parse_tps(text: str) -> list[tuple[str, int]]:
    """Kafka's "t1-0, t1-3" notation."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        topic, _, p = item.rpartition("-")
        out.append((topic, int(p)))
    return out


def replica_racks(topics: list[list], replication_factor: int, broker_racks: list) -> dict:
    """AbstractPartitionAssignorTest.partitionsPerTopic: broker i has rack broker_racks[i];
    partition i of the k-th topic (topics in the given order) has replicas on brokers
    (i + j + offset) % brokers, j < replication factor, offset = partitions of earlier topics."""
    out = {}
    offset = 0
    nb = len(broker_racks)
    for topic, n in topics:
        rows = []
        for i in range(n):
            rows.append([broker_racks[(i + j + offset) % nb] for j in range(replication_factor)
                         if broker_racks[(i + j + offset) % nb] is not None])
        out[topic] = rows
        offset += n
    return out


def run_rack_case(case: dict) -> tuple[dict, int]:
    """Runs one ``verifyRackAssignment`` case; returns ({consumerN: sorted Kafka strings}, mismatches)."""
    topics = case["topics"]
    ppt = {t: n for t, n in topics}
    racks = replica_racks(topics, case["replication_factor"], case["broker_racks"])
    owned = case.get("owned")
    members = []
    for i, (crack, ctopics) in enumerate(zip(case["consumer_racks"], case["consumer_topics"])):
        tps = ()
        # Kafka's helper puts these in Subscription.ownedPartitions with DEFAULT_GENERATION; the
        # eager StickyAssignor ignores that field (it reads its user data, null here).
        if owned and i < len(owned) and case["assignor"] != "sticky":
            tps = tuple(parse_tps(owned[i]))
        members.append(MemberSubscription(f"consumer{i}", tuple(ctopics), None, tps,
                                          -1 if tps else None, crack))
    # Kafka's tests subscribe to topics without metadata (t7..t9); Kafka skips those, our API
    # rejects them, so they are dropped here.
    members = [MemberSubscription(m.member_id, tuple(t for t in m.topics if t in ppt),
                                  m.group_instance_id, m.owned_partitions, m.generation, m.rack)
               for m in members]
    result = assign(case["assignor"], ppt, members, racks,
                    _prefer_rack_aware=case.get("prefer_rack_aware", False))
    strings = {mid: ", ".join(sorted(f"{t}-{p}" for t, p in tps)) for mid, tps in result.items()}
    mismatched = 0
    for m in members:
        if m.rack is None:
            continue
        for t, p in result[m.member_id]:
            if m.rack not in racks[t][p]:
                mismatched += 1
    return strings, mismatched
