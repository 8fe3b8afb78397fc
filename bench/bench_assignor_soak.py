"""Where the assignor soak's time goes: CPU per case of each stage, by size class and assignor (docs/assignors.md).

    python bench/bench_assignor_soak.py [--small 1000 --medium 200 --large 16]

For each size class and assignor: generating the cases (`seeded_case`), the project's assignor (`run_assign_case`),
the coverage count and the JSON of the batch, and the CPU Kafka's classes take in the oracle JVM (warmed up first)
for the same batch. Milliseconds of CPU per case, so other work on the machine does not stretch them.
"""
from __future__ import annotations

import argparse
import time

from rebalance_monitor.testing.assignor_cases import CLIENT, SERVER, SHARE, SIZES, seeded_case
from rebalance_monitor.testing.assignor_coverage import features
from rebalance_monitor.testing.assignor_oracle import KafkaAssignorOracle, encode_batch
from rebalance_monitor.testing.assignor_shrink import outcome


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, n in (("small", 1000), ("medium", 200), ("large", 16)):
        p.add_argument(f"--{name}", type=int, default=n, help=f"{name} cases per assignor")
    args = p.parse_args()
    with KafkaAssignorOracle() as oracle:
        for name in ("small", "medium"):  # the JIT warmed up on cases like the measured ones
            oracle.assign_many([seeded_case("warm", a, i, ((SIZES[name], 1.0),))[1]
                                for i in range(200 if name == "small" else 30) for a in CLIENT + SERVER + SHARE])
        print(f"{'size':6} {'assignor':18} {'generate':>9} {'assign':>9} {'cov+json':>9} {'JVM':>9}  (ms CPU/case)")
        for name in ("small", "medium", "large"):
            n = getattr(args, name)
            for a in CLIENT + SERVER + SHARE:
                t = time.process_time()
                cases = [seeded_case("bench", a, i, ((SIZES[name], 1.0),))[1] for i in range(n)]
                generate = time.process_time() - t
                t = time.process_time()
                for c in cases:
                    outcome(c)
                assign = time.process_time() - t
                t = time.process_time()
                for c in cases:
                    features(c)
                line = encode_batch(cases)
                rest = time.process_time() - t
                before = oracle.cpu_seconds()
                oracle.submit(line, n)
                oracle.collect()
                jvm = oracle.cpu_seconds() - before
                print(f"{name:6} {a:18} {1000 * generate / n:9.2f} {1000 * assign / n:9.2f} {1000 * rest / n:9.2f} "
                      f"{1000 * jvm / n:9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
