"""The Python source keeps each partition's client between ranges (spark/kafka_source/client_pool.py): the pool's
rules with recording clients, then both real Kafka clients against the real broker, where every range must still
give exactly its records whether its client was kept, sought back, sought forward or new."""
from __future__ import annotations

import pytest

from rebalance_monitor.spark.kafka_source import client_pool, range_reader
from rebalance_monitor.spark.kafka_source.client_pool import ClientPool
from rebalance_monitor.spark.kafka_source.offsets import OffsetRange
from rebalance_monitor.spark.kafka_source.options import SourceOptions


class Recording:
    def __init__(self, name):
        self.name = name
        self.calls: list = []

    def pause(self):
        self.calls.append("pause")

    def resume(self):
        self.calls.append("resume")

    def seek(self, offset):
        self.calls.append(("seek", offset))

    def close(self):
        self.calls.append("close")


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_client_given_back_serves_the_next_range_of_its_partition_resumed_and_sought():
    pool = ClientPool()
    a = Recording("a")
    assert pool.give_back(("k", 0), a)
    assert a.calls == ["pause"]  # no fetching while it waits
    assert pool.take(("k", 0), 100, lambda: pytest.fail("opened")) is a
    assert a.calls == ["pause", "resume", ("seek", 100)]
    pool.give_back(("k", 0), a)
    assert pool.take(("k", 0), 400, lambda: pytest.fail("opened")) is a
    assert a.calls[-1] == ("seek", 400)
    fresh = Recording("b")
    assert pool.take(("k", 0), 500, lambda: fresh) is fresh  # taken already: a new one
    assert pool.take(("k", 1), 0, lambda: fresh) is fresh  # another partition's key
    assert (pool.opened, pool.reused) == (2, 2)


def test_a_client_that_cannot_pause_or_fails_to_is_not_kept():
    pool = ClientPool()
    assert not pool.give_back(("k", 0), object())
    stuck = Recording("stuck")
    stuck.pause = lambda: (_ for _ in ()).throw(RuntimeError("closed"))
    assert not pool.give_back(("k", 0), stuck)
    assert not pool.idle


def test_a_client_that_fails_to_resume_is_closed_and_replaced():
    pool = ClientPool()
    bad = Recording("bad")
    bad.resume = lambda: (_ for _ in ()).throw(RuntimeError("gone"))
    pool.give_back(("k", 0), bad)
    fresh = Recording("fresh")
    assert pool.take(("k", 0), 5, lambda: fresh) is fresh
    assert bad.calls[-1] == "close"


def test_the_pool_is_bounded_and_closes_what_idles_too_long():
    clock = Clock()
    pool = ClientPool(max_idle=2, idle_ms=1000, clock=clock)
    a, b, c = Recording("a"), Recording("b"), Recording("c")
    pool.give_back("a", a)
    clock.now = 0.5
    pool.give_back("b", b)
    pool.give_back("c", c)  # over the bound: the one idle longest goes
    assert a.calls[-1] == "close" and list(pool.idle) == ["b", "c"]
    clock.now = 1.6  # b idle 1.1 s, c too
    pool.take("x", 0, lambda: Recording("x"))
    assert b.calls[-1] == "close" and c.calls[-1] == "close" and not pool.idle
    d = Recording("d")
    pool.give_back("d", d)
    pool.close_all()
    assert d.calls[-1] == "close" and not pool.idle


def test_a_client_idle_too_long_is_closed_while_nothing_is_read():
    import time

    pool = ClientPool(idle_ms=100)
    a = Recording("a")
    pool.give_back("a", a)
    deadline = time.monotonic() + 10
    while pool.idle and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pool.idle and a.calls[-1] == "close"


def test_a_second_client_given_back_for_the_same_key_closes_the_first():
    pool = ClientPool()
    a, b = Recording("a"), Recording("b")
    pool.give_back("k", a)
    pool.give_back("k", b)
    assert a.calls[-1] == "close" and pool.idle["k"][0] is b


# ------------------------------------------------------------------------------------------ the real clients

@pytest.mark.integration
@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_kept_clients_read_exactly_each_range_on_a_real_broker(broker, unique, client, monkeypatch):
    from confluent_kafka import Producer

    topic = unique
    broker.create_topics({topic: 2})
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(3000):
        p.produce(topic, value=b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    pool = ClientPool()
    monkeypatch.setattr(client_pool, "POOL", pool)
    opts = SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic})

    def offsets_of(partition, start, end):
        rows = [row for chunk in range_reader.read_range(opts, client, OffsetRange(topic, partition, start, end),
                                                   as_records=True) for row in chunk]
        assert [v for *_, v in rows] == [b"v%d" % (2 * o + partition) for _, _, o, *_ in rows]
        return [row[2] for row in rows]

    assert offsets_of(0, 0, 600) == list(range(600))
    assert offsets_of(0, 600, 1100) == list(range(600, 1100))  # where the kept client stopped
    assert offsets_of(0, 200, 300) == list(range(200, 300))  # sought back
    assert offsets_of(0, 1400, 1500) == list(range(1400, 1500))  # sought forward
    assert offsets_of(1, 0, 1500) == list(range(1500))  # the other partition: its own client
    assert (pool.opened, pool.reused) == (2, 3)
    assert len(pool.idle) == 2
    # a range cut short (its reader stopped after the first chunk) closes its client, never keeps it
    small = SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
                                 "arrowBatchRows": "10"})
    key = client_pool.pool_key(small, client, topic, 1)
    chunks = range_reader.read_range(small, client, OffsetRange(topic, 1, 0, 1500), as_records=True)
    next(chunks)  # (partition 1's kept client served it)
    chunks.close()
    assert key not in pool.idle and pool.reused == 4
    # no reuse asked for: a new client per range, none kept
    off = SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
                               "reuseClients": "false"})
    rows = [r for c in range_reader.read_range(off, client, OffsetRange(topic, 0, 0, 10), as_records=True) for r in c]
    assert len(rows) == 10 and (pool.opened, pool.reused) == (2, 4) and len(pool.idle) == 1
    pool.close_all()
