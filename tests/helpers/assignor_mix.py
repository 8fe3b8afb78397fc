"""The seeded random mix of the default differential run (test_assignors_vs_kafka) and of its coverage test: the
same cases every run (`python -m rebalance_monitor.testing.assignor_coverage --mix default --seed default --cases 500`
prints their coverage)."""
from __future__ import annotations

from rebalance_monitor.testing.assignor_cases import DEFAULT_RUN_MIX, seeded_case


def mix_cases(assignor: str, n: int) -> list:
    return [seeded_case("default", assignor, i, DEFAULT_RUN_MIX)[1] for i in range(n)]
