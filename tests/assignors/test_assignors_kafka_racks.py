"""Kafka's rack-aware assignor tests (RangeAssignorTest / AbstractStickyAssignorTest
``verifyRackAssignment`` cases), run as data: cases/kafka_rack_cases.json."""
import pytest

from helpers.kafka_assignor_harness import load_cases, run_rack_case

CASES = load_cases("kafka_rack_cases.json")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_kafka_rack_case(case):
    strings, mismatched = run_rack_case(case)
    expected = {f"consumer{i}": e for i, e in enumerate(case["expected"])}
    assert strings == expected
    if case["mismatches"] >= 0:
        assert mismatched == case["mismatches"]
