"""The project's assignors against Kafka's own (kafka-clients and the group coordinator of the pinned release, run
by testing.assignor_oracle in one JVM): generated cases, every assignor, exact agreement (or both refusing a case
Kafka's assignor fails on). The same cases every run:

* hypothesis cases (small groups; RM_ASSIGNOR_EXAMPLES per assignor, default 200), shrunk by hypothesis on failure;
* a seeded random mix with medium and large groups (RM_ASSIGNOR_MIX_CASES per assignor, default 500) sent to the
  oracle in batches, a disagreement shrunk with the oracle (testing.assignor_shrink) before it is reported.

`make assignors-soak` runs the random mix at scale (testing.assignor_soak)."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from rebalance_monitor.core.assignors import ASSIGNOR_NAMES
from rebalance_monitor.testing.assignor_cases import CLIENT, SERVER, SHARE, SMALL, cases
from rebalance_monitor.testing.assignor_oracle import ORACLE_VERSION, KafkaAssignorOracle
from rebalance_monitor.testing.assignor_shrink import agree, outcome

from helpers.assignor_mix import assert_kafka_agrees, mix_cases

pytestmark = [pytest.mark.integration]

EXAMPLES = int(os.environ.get("RM_ASSIGNOR_EXAMPLES", "200"))
MIX_CASES = int(os.environ.get("RM_ASSIGNOR_MIX_CASES", "500"))
BATCH = 50


@pytest.fixture(scope="module")
def oracle():
    with KafkaAssignorOracle() as o:
        yield o


def test_every_assignor_is_compared():
    assert set(CLIENT + SERVER + SHARE) == set(ASSIGNOR_NAMES)


@pytest.mark.parametrize("assignor", CLIENT + SERVER + SHARE)
def test_agrees_with_kafka(oracle, assignor):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases(assignor, SMALL))
    def agrees(case):
        ours, kafkas = outcome(case), oracle.assign_many([case])[0]
        assert agree(ours, kafkas), f"Kafka {ORACLE_VERSION} disagrees on {case}: ours {ours}, Kafka's {kafkas}"

    agrees()


@pytest.mark.parametrize("assignor", CLIENT + SERVER + SHARE)
def test_agrees_with_kafka_on_a_mix_of_sizes(oracle, assignor):
    assert_kafka_agrees(oracle, mix_cases(assignor, MIX_CASES), ORACLE_VERSION, BATCH)


def test_the_oracle_is_compiled_for_the_release_the_records_name():
    from pathlib import Path

    pinned = (Path(__file__).resolve().parents[2] / "scripts" / "java-oracle" / "kafka-version").read_text().split()
    assert pinned[0] == ORACLE_VERSION
