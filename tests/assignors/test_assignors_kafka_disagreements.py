"""Disagreements with Kafka 4.4.0's own assignors that the generated cases found, each shrunk to a small case and
kept with Kafka's answer (cases/kafka_disagreements.json): the project's assignors must give that answer, or refuse
the case where Kafka's assignor fails on it. The integration test holds the recorded answers against Kafka itself."""
import pytest

from helpers.kafka_assignor_harness import load_cases
from rebalance_monitor.core.assignors import KafkaAssignorFailure, run_assign_case

CASES = load_cases("kafka_disagreements.json")


@pytest.mark.parametrize("entry", CASES, ids=[c["name"] for c in CASES])
def test_answers_as_kafka_does(entry):
    if "error" in entry["kafka"]:
        with pytest.raises(KafkaAssignorFailure, match=entry["kafka"]["error"]):
            run_assign_case(entry["case"])
    else:
        assert run_assign_case(entry["case"]) == entry["kafka"]["result"]


@pytest.mark.integration
def test_the_recorded_answers_are_kafkas():
    from rebalance_monitor.testing.assignor_oracle import KafkaAssignorOracle

    with KafkaAssignorOracle() as oracle:
        replies = oracle.assign_many([c["case"] for c in CASES])
    for entry, reply in zip(CASES, replies):
        if "error" in entry["kafka"]:
            assert reply.get("error", "").startswith(entry["kafka"]["error"] + ":"), (entry["name"], reply)
        else:
            assert reply == {"result": entry["kafka"]["result"]}, entry["name"]
