"""kafka-python 3.0's join and the workload's two workarounds (workload/kafka_python_join.py), on the real broker.

Each test opens the window on purpose: `poll(timeout_ms=0)` starts a join and returns while it is in flight, the
test waits until the round trip has finished with no poll waiting, then polls again. With a one-member group the
broker answers at once, so the order is certain. Without `settle_finished_join` the member sends a second
JoinGroup (test 1) or stays REBALANCING for good (test 2), as the e2e members did.
"""
from __future__ import annotations

import threading

import pytest

from helpers.eventually import eventually
from rebalance_monitor.testing.kafka_admin import add_partitions
from rebalance_monitor.workload.kafka_python_join import settle_finished_join, wait_for_metadata_snapshot
from rebalance_monitor.workload.live_members import MemberSpec, close_quietly, make_consumer

pytestmark = pytest.mark.integration


def _consumer(broker, unique):
    broker.create_topics({unique: 2})
    consumer = make_consumer(MemberSpec(bootstrap=broker.bootstrap, group=unique, topics=[unique],
                                        client_id=unique[-12:]))
    assert settle_finished_join(consumer)
    consumer.subscribe(topics=[unique])
    assert wait_for_metadata_snapshot(consumer, [unique], 30, threading.Event())
    return consumer, consumer._coordinator


def _join_finishes_between_polls(consumer, coord):
    """`poll(0)` until a join round trip is in flight, then wait, without polling, until it has succeeded (a
    round trip that failed, such as the first JoinGroup's MEMBER_ID_REQUIRED, is retried by the next poll)."""
    def succeeded() -> bool:
        consumer.poll(timeout_ms=0)
        task = coord._join_task
        if task is None:
            return False
        eventually(lambda: task.is_done, 30, "the join round trip")
        return task.exception is None
    eventually(succeeded, 30, "a join round trip that succeeded with no poll waiting")


def _state(coord) -> str:
    return str(getattr(coord.state, "value", coord.state)).strip("<>").upper()


def test_a_join_that_finished_between_polls_is_applied(broker, unique):
    consumer, coord = _consumer(broker, unique)
    try:
        _join_finishes_between_polls(consumer, coord)
        assert _state(coord) == "REBALANCING"           # finished, not applied yet
        eventually(lambda: consumer.poll(timeout_ms=100) is not None and _state(coord) == "STABLE", 30,
                   "the member to be stable")
        # the finished round trip was applied: generation 1, no second JoinGroup (which would have made 2)
        assert coord._generation.generation_id == 1
        assert {tp.partition for tp in consumer.assignment()} == {0, 1}
    finally:
        close_quietly(consumer, timeout_ms=5000)


def test_a_leaders_metadata_rejoin_that_finished_between_polls_is_applied(broker, unique):
    consumer, coord = _consumer(broker, unique)
    try:
        eventually(lambda: consumer.poll(timeout_ms=100) is not None and _state(coord) == "STABLE", 30,
                   "the first generation")
        first = coord._generation.generation_id
        assert coord._assignment_snapshot == {unique: {0, 1}}   # not {}: no rejoin at the next refresh
        add_partitions(broker.bootstrap, unique, 4)
        coord._cluster.request_update()
        eventually(lambda: coord._metadata_snapshot.get(unique) == {0, 1, 2, 3}, 30, "the new partitions")
        assert coord.need_rejoin() and not coord.rejoin_needed  # asked for by the leader's metadata check only
        _join_finishes_between_polls(consumer, coord)
        # the leader's own assignment made its metadata check false: plain kafka-python 3.0 stops here
        eventually(lambda: consumer.poll(timeout_ms=100) is not None and _state(coord) == "STABLE", 30,
                   "the member to apply its rejoin")
        assert coord._generation.generation_id == first + 1
        assert {tp.partition for tp in consumer.assignment()} == {0, 1, 2, 3}
    finally:
        close_quietly(consumer, timeout_ms=5000)
