"""assignment_checks: worked examples."""
from rebalance_monitor.core.assignment_checks import (imbalance, min_moves_for_balance,
                                                      mismatched_partitions, partitions_moved,
                                                      unassigned_partitions)


def test_mismatched_partitions():
    actual = {"a": [("t", 0), ("t", 1)], "b": [["t", 2]]}
    expected = {"a": [("t", 0)], "b": [("t", 1), ("t", 3)]}
    # t1 other owner, t2 only actual, t3 only expected
    assert mismatched_partitions(actual, expected) == 3
    assert mismatched_partitions(actual, actual) == 0
    assert mismatched_partitions({"a": [("t", 0)], "b": [("t", 0)]}, {"a": [("t", 0)]}) == 1


def test_unassigned_partitions():
    actual = {"a": [("t", 0)], "b": [("u", 1)]}
    assert unassigned_partitions(actual, {"t": 3, "u": 2, "v": 5}, ["t", "u"]) == 3
    assert unassigned_partitions(actual, {"t": 3}, ["t", "missing"]) == 2


def test_partitions_moved_ignores_new_and_revoked_partitions():
    prev = {"a": [("t", 0), ("t", 1)], "b": [("t", 2)]}
    cur = {"a": [("t", 0)], "b": [("t", 1), ("t", 3)], "c": []}
    assert partitions_moved(prev, cur) == 1  # t1 a->b; t3 new; t2 revoked (not reassigned yet)
    assert partitions_moved(prev, {"x": [("t", 0), ("t", 1), ("t", 2)]}) == 3


def test_imbalance():
    assert imbalance({}) is None
    assert imbalance({"a": [("t", 0), ("t", 1), ("t", 2)], "b": []}) == 3
    assert imbalance({"a": [("t", 0)], "b": [("t", 1)]}) == 0


def test_min_moves_equal_subscriptions():
    prev = {"a": [("t", 0), ("t", 1), ("t", 2)], "b": [("t", 3)]}
    assert min_moves_for_balance(prev, {"a": ["t"], "b": ["t"]}, {"t": 4}) == 1
    # a member joins: 4 partitions over 3 members -> a keeps 2 at most
    assert min_moves_for_balance(prev, {"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": 4}) == 1
    # a leaves: its 3 partitions must move, b keeps its one
    assert min_moves_for_balance(prev, {"b": ["t"], "c": ["t"]}, {"t": 4}) == 3
    assert min_moves_for_balance({}, {"b": ["t"]}, {"t": 4}) == 0


def test_min_moves_heterogeneous_subscriptions():
    prev = {"a": [("t", 0), ("t", 1), ("t", 2)], "b": [("t", 3)]}
    # t:4 u:2 over a[t] b[t,u] c[u]: balanced is 2/2/2, a gives one t partition to b
    assert min_moves_for_balance(prev, {"a": ["t"], "b": ["t", "u"], "c": ["u"]}, {"t": 4, "u": 2}) == 1
    # c can only take u's single partition: band [1, 3] is the tightest reachable
    prev2 = {"a": [("t", 0), ("t", 1), ("t", 2), ("t", 3), ("t", 4)]}
    assert min_moves_for_balance(prev2, {"a": ["t"], "b": ["t"], "c": ["u"]}, {"t": 5, "u": 1}) == 2
    # a unsubscribed from t: everything it held of t moves
    assert min_moves_for_balance(prev, {"a": ["u"], "b": ["t"]}, {"t": 4, "u": 2}) == 3
