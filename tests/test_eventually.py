"""`eventually` (tests/helpers/eventually.py), the one waiting helper of the tests."""
from __future__ import annotations

import time

import pytest

from helpers.eventually import eventually


def answers(*values):
    """A predicate giving `values` in turn (the last one from then on), counting its calls."""
    calls = []

    def predicate():
        calls.append(time.monotonic())
        return values[min(len(calls), len(values)) - 1]

    return predicate, calls


def test_returns_the_predicates_first_truthy_value():
    predicate, calls = answers(None, 0, "", [], {"got": 1}, "later")
    assert eventually(predicate, 5, "a value", interval_s=0.001) == {"got": 1}
    assert len(calls) == 5


def test_calls_the_predicate_until_it_is_true_every_interval():
    predicate, calls = answers(False, False, False, True)
    assert eventually(predicate, 5, "the fourth call", interval_s=0.02) is True
    assert len(calls) == 4
    assert all(b - a >= 0.015 for a, b in zip(calls, calls[1:]))


def test_a_value_there_at_once_is_returned_without_waiting():
    predicate, calls = answers("now")
    t0 = time.monotonic()
    assert eventually(predicate, 0, "it", interval_s=10) == "now"
    assert len(calls) == 1 and time.monotonic() - t0 < 1


def test_times_out_naming_what_it_waited_for():
    predicate, calls = answers(False)
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match=r"^timed out after 0\.2 s waiting for the broker to answer$"):
        eventually(predicate, 0.2, "the broker to answer", interval_s=0.05)
    assert 0.2 <= time.monotonic() - t0 < 2
    assert len(calls) >= 3   # and once more at the time out
    assert calls[-1] - t0 >= 0.2


def test_what_can_be_a_function_read_at_the_time_out():
    said = []
    with pytest.raises(AssertionError, match=r"waiting for the log to say 'up' \(it said: 1 line\)"):
        eventually(lambda: False, 0.05, lambda: said.append(1) or f"the log to say 'up' (it said: {len(said)} line)",
                   interval_s=0.01)
    assert said == [1]


def test_an_error_of_the_predicate_is_not_swallowed():
    def predicate():
        raise ConnectionRefusedError("nobody home")

    with pytest.raises(ConnectionRefusedError):
        eventually(predicate, 5, "an answer")
