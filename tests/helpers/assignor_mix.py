"""The seeded random mix of the default differential run (test_assignors_vs_kafka) and of its coverage test: the
same cases every run (`python -m rebalance_monitor.testing.assignor_coverage --mix default --seed default --cases 500`
prints their coverage)."""
from __future__ import annotations

from rebalance_monitor.testing.assignor_cases import DEFAULT_RUN_MIX, seeded_case


def mix_cases(assignor: str, n: int) -> list:
    return [seeded_case("default", assignor, i, DEFAULT_RUN_MIX)[1] for i in range(n)]


def assert_kafka_agrees(oracle, cases: list, version: str, batch: int = 50) -> None:
    """Every case assigned by the `oracle` (Kafka `version`'s own classes) as by ours, `batch` cases per request;
    the first disagreement fails the test, shrunk to a small case."""
    import pytest

    from rebalance_monitor.testing.assignor_shrink import agree, disagreement, outcome, shrink

    for start in range(0, len(cases), batch):
        chunk = cases[start:start + batch]
        for case, kafkas in zip(chunk, oracle.assign_many(chunk)):
            if not agree(outcome(case), kafkas):
                small = shrink(case, disagreement(oracle))
                pytest.fail(f"Kafka {version} disagrees; shrunk: {small}: ours {outcome(small)}, "
                            f"Kafka's {oracle.assign_many([small])[0]}")
