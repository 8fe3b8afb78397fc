"""Which dimensions of issue 17's list a generated assignor case exercises, read from the case itself (not from the
generator's intentions), and a report of how many cases hit each, per assignor.

    python -m rebalance_monitor.testing.assignor_coverage --cases 2000 [--mix soak|default|small|medium|large]
        [--seed 1]

prints the counts of that many generated cases per assignor without running any assignor: the soak's cases of that
seed (it prints the same table for the cases it ran), or with `--mix default --seed default --cases 500` the mix of
the default test run.
"""
from __future__ import annotations

import argparse
from collections import Counter

from .assignor_cases import CLIENT, MIXES, SERVER, SHARE, seeded_case

# (feature, what it means); every feature applies to every assignor unless NOT_APPLICABLE says otherwise
FEATURES = (
    ("members 1", "a group of one"),
    ("members 2-10", ""),
    ("members 11-50", ""),
    ("members 51-99", ""),
    ("members 100-200", "a large group"),
    ("topics 1", ""),
    ("topics 2-5", ""),
    ("topics 6-20", ""),
    ("partitions 1", "a topic of one partition"),
    ("partitions 51-250", "the largest topic's count"),
    ("partitions 251-500", "the largest topic's count"),
    ("total partitions >= 1000", "a large cluster"),
    ("subscriptions equal", "as sent, topics the cluster lacks included"),
    ("subscriptions unequal", ""),
    ("subscriptions equal, listed in other orders", ""),
    ("subscribed to a missing topic", "a topic the cluster does not have"),
    ("subscribed only to missing topics", ""),
    ("static members, some", "group instance ids"),
    ("static members, all", ""),
    ("instance-id order differs from member-id order", "static members sort by instance id"),
    ("non-ASCII member ids", "Java's UTF-16 order and hash"),
    ("owned partitions", "the previous assignment (the server assignors: current targets)"),
    ("previous assignment balanced", "owned counts within 1 of each other, most partitions owned"),
    ("previous assignment unbalanced", "owned counts 2 or more apart"),
    ("owned partitions of unsubscribed topics", ""),
    ("owned partitions of missing topics or beyond the count", ""),
    ("claim listed twice by one member", ""),
    ("generations", ""),
    ("stale generation", "a member owning partitions at an older generation than the group's newest"),
    ("owned partitions without a generation", "a pre-2.3 sticky member, a cooperative member at -1"),
    ("conflicting claims, same generation", "two members own one partition"),
    ("conflicting claims, different generations", ""),
    ("member racks", ""),
    ("members with and without racks", ""),
    ("partition racks", ""),
    ("rack-aware assignment applies", "a member's rack holds some partitions' replicas, not all partitions are "
                                      "on the same racks"),
)
NAMES = tuple(f for f, _ in FEATURES)
_GENERATION_FEATURES = {"generations", "stale generation", "owned partitions without a generation",
                        "conflicting claims, same generation", "conflicting claims, different generations"}
NOT_APPLICABLE = {
    # the coordinator's members have no generation in the assignor's view, and its targets never share a partition
    **{a: _GENERATION_FEATURES for a in SERVER},
    # a share group's targets are sets without generations; members holding one partition together is the rule
    # ("conflicting claims, same generation": two members hold one partition)
    **{a: (_GENERATION_FEATURES - {"conflicting claims, same generation"}) | {"claim listed twice by one member"}
       for a in SHARE},
    # range and roundrobin read owned partitions and generations from the subscription but ignore them; the
    # comparison shows Kafka does too
}


def applicable(assignor: str) -> tuple:
    return tuple(f for f in NAMES if f not in NOT_APPLICABLE.get(assignor, ()))


def _bucket(n: int, edges) -> str:
    for lo, hi, name in edges:
        if lo <= n <= hi:
            return name
    return ""


def features(case: dict) -> set:
    out = set()
    ppt = case["partitions_per_topic"]
    members = case["members"]
    n = len(members)
    out.add(_bucket(n, ((1, 1, "members 1"), (2, 10, "members 2-10"), (11, 50, "members 11-50"),
                        (51, 99, "members 51-99"), (100, 200, "members 100-200"))))
    out.add(_bucket(len(ppt), ((1, 1, "topics 1"), (2, 5, "topics 2-5"), (6, 20, "topics 6-20"))))
    if 1 in ppt.values():
        out.add("partitions 1")
    out.add(_bucket(max(ppt.values(), default=0), ((51, 250, "partitions 51-250"),
                                                   (251, 500, "partitions 251-500"))))
    if sum(ppt.values()) >= 1000:
        out.add("total partitions >= 1000")
    subs = [m["topics"] for m in members]
    if len({frozenset(s) for s in subs}) <= 1:
        out.add("subscriptions equal")
        if len({tuple(s) for s in subs}) > 1:
            out.add("subscriptions equal, listed in other orders")
    else:
        out.add("subscriptions unequal")
    if any(t not in ppt for s in subs for t in s):
        out.add("subscribed to a missing topic")
    if any(s and all(t not in ppt for t in s) for s in subs):
        out.add("subscribed only to missing topics")
    static = [m for m in members if m.get("group_instance_id") is not None]
    if static:
        out.add("static members, all" if len(static) == n else "static members, some")
        by_instance = [m["member_id"] for m in sorted(static, key=lambda m: m["group_instance_id"])]
        if by_instance != sorted(by_instance):
            out.add("instance-id order differs from member-id order")
    if any(not m["member_id"].isascii() for m in members):
        out.add("non-ASCII member ids")
    _owned_features(case, out)
    _rack_features(case, out)
    out.discard("")
    return out


def _owned_features(case: dict, out: set) -> None:
    ppt = case["partitions_per_topic"]
    members = case["members"]
    owners: dict = {}
    counts = []
    for m in members:
        owned = [tuple(tp) for tp in m.get("owned_partitions") or ()]
        if len(owned) != len(set(owned)):
            out.add("claim listed twice by one member")
        valid = {tp for tp in owned if tp[0] in ppt and 0 <= tp[1] < ppt[tp[0]]}
        if len(valid) < len(set(owned)):
            out.add("owned partitions of missing topics or beyond the count")
        if any(tp[0] not in m["topics"] for tp in valid):
            out.add("owned partitions of unsubscribed topics")
        for tp in valid:
            owners.setdefault(tp, []).append(m)
        counts.append(len(valid))
        if "generation" in m:
            out.add("generations")
            if valid and m["generation"] is None:
                out.add("owned partitions without a generation")
    if not owners:
        return
    out.add("owned partitions")
    total = sum(ppt.values())
    if max(counts) - min(counts) <= 1 and len(owners) * 10 >= total * 8:
        out.add("previous assignment balanced")
    elif max(counts) - min(counts) >= 2:
        out.add("previous assignment unbalanced")
    gens = [m.get("generation") for m in members if m.get("owned_partitions")]
    newest = max((g for g in gens if g is not None), default=None)
    if newest is not None and any(g is not None and g < newest for g in gens):
        out.add("stale generation")
    for claimants in owners.values():
        if len(claimants) > 1:
            g = {c.get("generation", -1) if c.get("generation") is not None else -1 for c in claimants}
            out.add("conflicting claims, same generation" if len(g) < len(claimants)
                    else "conflicting claims, different generations")


def _rack_features(case: dict, out: set) -> None:
    members = case["members"]
    racks = [m.get("rack") for m in members]
    if any(racks):
        out.add("member racks")
        if not all(racks):
            out.add("members with and without racks")
    per = case.get("partition_racks")
    if not per:
        return
    sets = [frozenset(rs) for rows in per.values() for rs in rows]
    if any(sets):
        out.add("partition racks")
    all_racks = frozenset().union(*sets)
    if any(r in all_racks for r in racks if r) and any(s != all_racks for s in sets):
        out.add("rack-aware assignment applies")


class Coverage:
    """Counts of cases per (assignor, feature)."""

    def __init__(self):
        self.cases = Counter()
        self.hits: dict = {}

    def add(self, case: dict) -> None:
        a = case["assignor"]
        self.cases[a] += 1
        self.hits.setdefault(a, Counter()).update(features(case))

    def missing(self, at_least: int = 1) -> dict:
        """{assignor: [features hit by fewer than `at_least` cases]} (applicable ones only)."""
        return {a: [f for f in applicable(a) if self.hits.get(a, Counter())[f] < at_least]
                for a in self.cases if any(self.hits.get(a, Counter())[f] < at_least for f in applicable(a))}

    def table(self) -> str:
        names = [a for a in CLIENT + SERVER + SHARE if a in self.cases]
        width = max(len(f) for f in NAMES)
        lines = [f"{'cases':<{width}}  " + "  ".join(f"{a:>18}" for a in names),
                 f"{'':<{width}}  " + "  ".join(f"{self.cases[a]:>18,}" for a in names)]
        for f in NAMES:
            cells = []
            for a in names:
                cells.append(f"{'n/a':>18}" if f not in applicable(a) else f"{self.hits[a][f]:>18,}")
            lines.append(f"{f:<{width}}  " + "  ".join(cells))
        return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=2000, help="cases per assignor")
    p.add_argument("--mix", default="soak", choices=list(MIXES))
    p.add_argument("--seed", default="1")
    args = p.parse_args(argv)
    cov = Coverage()
    for a in CLIENT + SERVER + SHARE:
        for i in range(args.cases):
            cov.add(seeded_case(args.seed, a, i, MIXES[args.mix])[1])
    print(cov.table())
    gaps = cov.missing()
    for a, fs in gaps.items():
        print(f"{a}: never exercised: {', '.join(fs)}")
    return 1 if gaps else 0


if __name__ == "__main__":
    raise SystemExit(main())
