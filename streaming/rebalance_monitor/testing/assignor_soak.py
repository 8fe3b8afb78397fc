"""The assignor soak: many random cases through the project's assignors and Kafka's own classes, without hypothesis.

    python -m rebalance_monitor.testing.assignor_soak --cases 1000000 [--minutes 240] [--assignors range,sticky]
        [--mix soak|small|medium|large] [--seed 1] [--out var/assignor-soak]

Case i of assignor A is `seeded_case(seed, A, i, mix)`, so any case can be made again
(`--replay A:i`). Batches of cases go to one oracle JVM (`{"batch": [...]}`, one round trip each) while Python
generates and assigns the next batch, so the JVM and Python work at once. Every disagreement (a different
assignment, or only one side rejecting the case) is written to `<out>/disagreements/` and, at the end, shrunk
with the oracle to a small case that still disagrees (`<out>/shrunk/`). `<out>/summary.json`, rewritten every
--report-seconds, holds the counts, the coverage of issue 17's dimensions, and where the time went.
Exit status 1 when any case disagreed.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections import Counter, deque
from pathlib import Path

from .assignor_cases import CLIENT, MIXES, SERVER, SHARE, SIZES, seeded_case
from .assignor_coverage import Coverage
from .assignor_oracle import KafkaAssignorOracle, OracleError, encode_batch
from .assignor_shrink import agree, disagreement, outcome, shrink
from .task_assignor_cases import STICKY_TASK_CASE, seeded_task_case

# the six partition assignors, the share groups' simple assignor, and the streams group's task assignor
# (KIP-1071; its cases are testing.task_assignor_cases', one size; no coverage table, no shrinking)
ASSIGNORS = CLIENT + SERVER + SHARE + (STICKY_TASK_CASE,)
BATCH_CASES = 256  # a batch closes at this many cases or at BATCH_WEIGHT partitions + members, whichever first
BATCH_WEIGHT = 60_000
KEEP_PER_ASSIGNOR = 20  # disagreements written per assignor (all are counted)


def any_seeded_case(seed, assignor: str, index: int, mix) -> tuple[str, dict]:
    """(size class, case) number `index` of `assignor`: a streams group's task case (size class "small") for
    sticky-task, else `seeded_case`'s."""
    if assignor == STICKY_TASK_CASE:
        return "small", seeded_task_case(seed, index)
    return seeded_case(seed, assignor, index, mix)


class Soak:
    def __init__(self, args):
        self.args = args
        self.mix = MIXES[args.mix]
        self.assignors = tuple(args.assignors.split(",")) if args.assignors else ASSIGNORS
        self.out = Path(args.out)
        self.done = Counter()
        self.rejected_by_both = Counter()
        self.disagreed = Counter()
        self.sizes = Counter()  # (assignor, size class)
        self.first_disagreements: list = []
        self.coverage = Coverage()
        self.time = Counter()  # seconds: generate, python, encode, wait, decode+compare, coverage; java, java_busy
        self.next_index = Counter()
        self.started = time.time()
        self.stop = False
        self.oracles: list = []

    # -- the pipeline ---------------------------------------------------------------------------
    def _next_batch(self, total: int, deadline: float) -> list:
        """(assignor, index, case) up to one batch: the assignors take turns, one case each."""
        batch, weight = [], 0
        t0 = time.perf_counter()
        while len(batch) < BATCH_CASES and weight < BATCH_WEIGHT and not self.stop:
            issued = sum(self.next_index.values())
            if issued >= total or time.time() >= deadline:
                break
            a = self.assignors[issued % len(self.assignors)]
            i = self.next_index[a]
            self.next_index[a] += 1
            size, case = any_seeded_case(self.args.seed, a, i, self.mix)
            self.sizes[a, size] += 1
            batch.append((a, i, case))
            weight += len(case["members"]) + sum(case["partitions_per_topic"].values() if "partitions_per_topic" in
                                                 case else (s["partitions"] for s in case["subtopologies"]))
        self.time["generate"] += time.perf_counter() - t0
        return batch

    def run(self, oracles: list) -> None:
        """Each JVM has a batch under way and one queued while Python works on the oldest batch."""
        self.oracles = oracles
        total = self.args.cases
        deadline = self.started + self.args.minutes * 60 if self.args.minutes else float("inf")
        last_report = time.time()
        pending: deque = deque()  # (oracle, batch) submitted, oldest first
        sent = 0
        while True:
            while len(pending) < 2 * len(oracles):
                batch = self._next_batch(total, deadline)
                if not batch:
                    break
                t0 = time.perf_counter()
                oracle = oracles[sent % len(oracles)]
                oracle.submit(encode_batch([c for _, _, c in batch]), len(batch))
                sent += 1
                self.time["encode"] += time.perf_counter() - t0
                pending.append((oracle, batch))
            if not pending:
                return
            oracle, batch = pending.popleft()
            t0 = time.perf_counter()
            ours = [outcome(c) for _, _, c in batch]
            t1 = time.perf_counter()
            kafkas, nanos, busy = oracle.collect()
            t2 = time.perf_counter()
            for (a, i, case), o, k in zip(batch, ours, kafkas):
                self._judge(a, i, case, o, k)
            t3 = time.perf_counter()
            for a, _, case in batch:
                if a != STICKY_TASK_CASE:
                    self.coverage.add(case)
            t4 = time.perf_counter()
            self.time.update({"python": t1 - t0, "wait": t2 - t1, "compare": t3 - t2, "coverage": t4 - t3,
                              "java": nanos / 1e9, "java_busy": busy / 1e9})
            if time.time() - last_report >= self.args.report_seconds:
                last_report = time.time()
                self.report(final=False)

    def _judge(self, a: str, i: int, case: dict, ours: dict, kafkas: dict) -> None:
        self.done[a] += 1
        if agree(ours, kafkas):
            if "error" in ours:
                self.rejected_by_both[a] += 1
            return
        self.disagreed[a] += 1
        print(f"DISAGREEMENT {a} case {i}: ours {str(ours)[:200]} kafka {str(kafkas)[:200]}", file=sys.stderr)
        if self.disagreed[a] <= KEEP_PER_ASSIGNOR:
            d = self.out / "disagreements"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{a}-{i}.json").write_text(json.dumps(
                {"seed": self.args.seed, "index": i, "case": case, "ours": ours, "kafka": kafkas}, indent=1))
            if self.disagreed[a] == 1:
                self.first_disagreements.append((a, i, case))

    # -- results --------------------------------------------------------------------------------
    def summary(self) -> dict:
        wall = time.time() - self.started
        n = sum(self.done.values())
        return {
            "command": " ".join(sys.argv),
            "seed": self.args.seed, "mix": self.args.mix,
            "cases": n, "wall_seconds": round(wall, 1), "cases_per_second": round(n / wall, 1) if wall else 0,
            "per_assignor": {a: {"cases": self.done[a], "disagreements": self.disagreed[a],
                                 "rejected_by_both": self.rejected_by_both[a]} for a in self.assignors},
            "disagreements": sum(self.disagreed.values()),
            "size_classes": {a: {n: self.sizes[a, n] for n in SIZES} for a in self.assignors},
            "jvms": self.args.jvms,
            "seconds": {k: round(v, 1) for k, v in sorted(self.time.items())},
            "cpu_seconds": self._cpu(),
            "coverage": {a: dict(self.coverage.hits.get(a, {})) for a in self.assignors},
        }

    def _cpu(self) -> dict:
        """CPU time so far: this process, and the oracle JVMs (None where unknown). Under load from other work the
        stage seconds above stretch; these do not."""
        jvms = [o.cpu_seconds() for o in self.oracles]
        return {"python": round(time.process_time(), 1),
                "jvms": round(sum(jvms), 1) if jvms and None not in jvms else None}

    def report(self, final: bool) -> None:
        s = self.summary()
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "summary.json").write_text(json.dumps(s, indent=1))
        per = " ".join(f"{a}={v['cases']}" for a, v in s["per_assignor"].items())
        print(f"[soak] {s['cases']:,} cases in {s['wall_seconds']:.0f} s ({s['cases_per_second']}/s), "
              f"{s['disagreements']} disagreements; {per}; seconds {s['seconds']}", file=sys.stderr, flush=True)
        if final:
            print(self.coverage.table())
            gaps = self.coverage.missing()
            for a, fs in gaps.items():
                print(f"{a}: never exercised: {', '.join(fs)}")
            print(json.dumps({k: v for k, v in s.items() if k != "coverage"}, indent=1))

    def shrink_disagreements(self, oracle) -> None:
        d = self.out / "shrunk"
        for a, i, case in self.first_disagreements:
            small = case if a == STICKY_TASK_CASE else shrink(case, disagreement(oracle))
            d.mkdir(parents=True, exist_ok=True)
            kafka = oracle.assign_many([small])[0]
            (d / f"{a}-{i}.json").write_text(json.dumps(
                {"case": small, "ours": outcome(small), "kafka": kafka}, indent=1))
            print(f"[soak] {a} case {i} shrunk to {len(small['members'])} members, "
                  f"{sum(small['partitions_per_topic'].values())} partitions: {d / f'{a}-{i}.json'}", file=sys.stderr)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=1_000_000, help="cases in all, the assignors taking turns")
    p.add_argument("--minutes", type=float, default=0, help="stop generating after this long (0: no limit)")
    p.add_argument("--assignors", default="", help="comma-separated (default: all eight, sticky-task included)")
    p.add_argument("--mix", default="soak", choices=list(MIXES))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="var/assignor-soak")
    p.add_argument("--report-seconds", type=float, default=60)
    p.add_argument("--no-shrink", action="store_true")
    p.add_argument("--jvms", type=int, default=1, help="oracle JVMs working at once (Kafka's sticky assignors are "
                                                       "the slow side on large groups)")
    p.add_argument("--replay", help="ASSIGNOR:INDEX: print that case, ours and Kafka's answers")
    p.add_argument("--shrink", metavar="FILE", help="shrink the case of a disagreement file and print it")
    args = p.parse_args(argv)
    if args.shrink:
        case = json.loads(Path(args.shrink).read_text())["case"]
        with KafkaAssignorOracle() as oracle:
            small = shrink(case, disagreement(oracle))
            print(json.dumps({"case": small, "ours": outcome(small), "kafka": oracle.assign_many([small])[0]}))
        return 0
    if args.replay:
        a, i = args.replay.split(":")
        _, case = any_seeded_case(args.seed, a, int(i), MIXES[args.mix])
        with KafkaAssignorOracle() as oracle:
            print(json.dumps({"case": case, "ours": outcome(case), "kafka": oracle.assign_many([case])[0]}))
        return 0
    soak = Soak(args)

    def stop(*_):
        soak.stop = True  # finish the batches under way, then report
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    oracles = [KafkaAssignorOracle().start() for _ in range(max(1, args.jvms))]
    try:
        try:
            soak.run(oracles)
        except OracleError as exc:  # the figures so far still count
            soak.report(final=True)
            print(f"[soak] stopped: {exc}", file=sys.stderr)
            return 2
        soak.report(final=True)
        if not args.no_shrink:
            soak.shrink_disagreements(oracles[0])
    finally:
        for o in oracles:
            o.close()
    return 1 if sum(soak.disagreed.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
