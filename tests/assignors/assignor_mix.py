"""The seeded random mix of the default differential run (test_assignors_vs_kafka) and of its coverage test: the
same cases every run, more medium and large groups than the soak's mix so a few hundred cases reach every
dimension."""
from __future__ import annotations

import random

from rebalance_monitor.testing.assignor_cases import LARGE, MEDIUM, SMALL, random_case

MIX = ((SMALL, 0.70), (MEDIUM, 0.25), (LARGE, 0.05))


def mix_cases(assignor: str, n: int) -> list:
    return [random_case(random.Random(f"default:{assignor}:{i}"), assignor, MIX) for i in range(n)]
