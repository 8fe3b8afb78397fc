"""The server (KIP-848) assignors follow the broker's release: the project's rules of each older release of
ORACLE_RELEASES held against that release's own classes (testing.assignor_oracle runs them in a JVM of their own,
on their own class path), on the default run's seeded mix (RM_ASSIGNOR_RELEASE_CASES per assignor and release,
default 300). The newest release's rules are held against its classes by test_assignors_vs_kafka.py."""
from __future__ import annotations

import os

import pytest

from rebalance_monitor.core.assignors import ASSIGNOR_RELEASE, SERVER_ASSIGNOR_RELEASES
from rebalance_monitor.testing.assignor_cases import SERVER
from rebalance_monitor.testing.assignor_oracle import (ORACLE_RELEASES, ORACLE_VERSION, KafkaAssignorOracle,
                                                       pinned_releases)
from rebalance_monitor.testing.assignor_shrink import agree, outcome

from helpers.assignor_mix import assert_kafka_agrees, mix_cases

pytestmark = [pytest.mark.integration]

RELEASE_CASES = int(os.environ.get("RM_ASSIGNOR_RELEASE_CASES", "300"))
BATCH = 50
OLDER = [r for r in ORACLE_RELEASES if r != ORACLE_VERSION]

# three members share five partitions; the third keeps two of them from before: Kafka 4.0.0 gives the extra
# partitions to the first two members in the coordinator's order (the third gives one up), 4.0.1 and later let the
# third keep both (fewer moves)
UNEVEN = {"assignor": "uniform", "partitions_per_topic": {"t": 5},
          "members": [{"member_id": "a", "topics": ["t"]}, {"member_id": "b", "topics": ["t"]},
                      {"member_id": "c", "topics": ["t"], "owned_partitions": [["t", 0], ["t", 1]]}]}


@pytest.fixture(scope="module", params=OLDER)
def older(request):
    with KafkaAssignorOracle(request.param) as o:
        yield o


def test_every_server_release_has_its_oracle():
    assert set(SERVER_ASSIGNOR_RELEASES) <= set(ORACLE_RELEASES) == set(pinned_releases())
    assert OLDER, "no older release is compared"


@pytest.mark.parametrize("assignor", SERVER)
def test_server_assignors_agree_with_that_releases_classes(older, assignor):
    mixed = [{**case, "release": older.version} for case in mix_cases(assignor, RELEASE_CASES)]
    assert_kafka_agrees(older, mixed, older.version, BATCH)


def test_the_mix_tells_the_releases_apart(older):
    """The cases above can fail: on many of them the release's rules and the newest differ, and there the
    release's classes answer as its rules do, not as the newest's (its JVM runs its classes, not 4.4.0's)."""
    cases = [{**case, "release": older.version} for case in mix_cases("uniform", RELEASE_CASES)]
    differ = [c for c in cases if outcome(c) != outcome({**c, "release": ASSIGNOR_RELEASE})]
    assert len(differ) >= 10, f"only {len(differ)} of {len(cases)} cases tell Kafka {older.version} from {ASSIGNOR_RELEASE}"
    for case, kafkas in zip(differ, older.assign_many(differ)):
        assert agree(outcome(case), kafkas)
        assert not agree(outcome({**case, "release": ASSIGNOR_RELEASE}), kafkas)


def test_one_case_each_release_answers_its_own_way(older):
    with KafkaAssignorOracle() as newest:
        new_answer = newest.assign(UNEVEN)
    old_answer = older.assign(UNEVEN)
    assert new_answer != old_answer
    assert outcome({**UNEVEN, "release": older.version}) == {"result": old_answer}
    assert outcome(UNEVEN) == {"result": new_answer}
