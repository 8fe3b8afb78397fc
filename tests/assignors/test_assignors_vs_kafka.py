"""The project's assignors against Kafka's own (kafka-clients and the group coordinator of the pinned release, run
by testing.assignor_oracle in one JVM): generated cases, every assignor, exact agreement.

RM_ASSIGNOR_EXAMPLES sets the cases per assignor (default 400: 2,400 in all, the same ones every run);
`make assignors-soak` runs many more, random (RM_ASSIGNOR_RANDOM=1) and up to 200 members, 20 topics and 500
partitions a topic (RM_ASSIGNOR_SIZE=large)."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from rebalance_monitor.core.assignors import ASSIGNOR_NAMES, run_assign_case
from rebalance_monitor.testing.assignor_cases import CLIENT, LARGE, SERVER, SMALL, cases
from rebalance_monitor.testing.assignor_oracle import ORACLE_VERSION, KafkaAssignorOracle

pytestmark = [pytest.mark.integration]

EXAMPLES = int(os.environ.get("RM_ASSIGNOR_EXAMPLES", "400"))
RANDOM = os.environ.get("RM_ASSIGNOR_RANDOM") == "1"
SIZE = LARGE if os.environ.get("RM_ASSIGNOR_SIZE") == "large" else SMALL


@pytest.fixture(scope="module")
def oracle():
    with KafkaAssignorOracle() as o:
        yield o


def test_every_assignor_is_compared():
    assert set(CLIENT + SERVER) == set(ASSIGNOR_NAMES)


@pytest.mark.parametrize("assignor", CLIENT + SERVER)
def test_agrees_with_kafka(oracle, assignor):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases(assignor, SIZE))
    def agrees(case):
        assert run_assign_case(case) == oracle.assign(case), f"Kafka {ORACLE_VERSION} disagrees on {case}"

    agrees()


def test_the_oracle_is_compiled_for_the_release_the_records_name():
    from pathlib import Path

    pinned = (Path(__file__).resolve().parents[2] / "scripts" / "java-oracle" / "kafka-version").read_text().strip()
    assert pinned == ORACLE_VERSION
