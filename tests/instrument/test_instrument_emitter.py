"""Emitter and helper behaviour without a broker (fast)."""
from __future__ import annotations

import threading

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.instrument.member_events import Identity, PollAggregator
from rebalance_monitor.instrument.confluent import decode_group_metadata
from rebalance_monitor.instrument.emitter import Emitter, MemoryEmitter


def _hb(i: int) -> dict:
    return {"v": 1, "type": "heartbeat", "ts": 1_700_000_000_000 + i, "group": "g", "member_id": "m",
            "generation": 1, "error": None}


class _BlockedEmitter(Emitter):
    """A sink that blocks until released: the queue fills up behind it."""

    def __init__(self, **kw):
        self.release = threading.Event()
        super().__init__(**kw)

    def _deliver(self, events):
        self.release.wait(30)
        self._sent(len(events))


def test_full_queue_drops_and_counts_instead_of_blocking():
    em = _BlockedEmitter(max_queue=10, batch_size=1)
    accepted = sum(em.emit(_hb(i)) for i in range(1000))
    stats = em.stats()
    assert accepted <= 11  # the queue bound, plus the one batch the sink holds
    assert stats["dropped"] == 1000 - accepted
    assert stats["emitted"] == accepted
    em.release.set()
    em.close(timeout=10)
    assert em.stats()["sent"] == accepted


def test_invalid_events_are_dropped_and_counted():
    em = MemoryEmitter()
    em.emit(_hb(1))
    em.emit({"v": 1, "type": "heartbeat", "ts": 5, "group": "g"})  # no member_id
    em.close()
    assert [e["ts"] for e in em.events] == [_hb(1)["ts"]]
    assert em.stats()["invalid"] == 1 and em.stats()["dropped"] == 1


def test_sink_failure_is_counted_not_raised():
    class Broken(Emitter):
        def _deliver(self, events):
            raise OSError("sink down")

    em = Broken()
    assert em.emit(_hb(1)) is True
    em.close(timeout=5)
    stats = em.stats()
    assert stats["dropped"] == 1 and stats["errors"] >= 1 and stats["sent"] == 0


def test_poll_aggregator_rate_limits_and_sums_records():
    em = MemoryEmitter()
    ident = Identity("g", "c", None, "h")
    agg = PollAggregator(em, ident, lambda: "m-1", interval_s=3600)
    agg.record(5)   # first poll goes out at once
    agg.record(2)
    agg.record(None)
    agg.record(4)   # held back: inside the interval
    agg.flush()
    em.close()
    polls = [e for e in em.events if e["type"] == "poll"]
    assert [p["records"] for p in polls] == [5, 6]
    assert all(not isinstance(parse_event(p), Rejected) for p in polls)


def test_poll_aggregator_skips_polls_before_a_member_id():
    em = MemoryEmitter()
    agg = PollAggregator(em, Identity("g", "c", None, "h"), lambda: "", interval_s=0)
    agg.record(3)
    agg.flush()
    em.close()
    assert em.events == []


def test_decode_librdkafka_group_metadata():
    import sys

    blob = b"CGMDv2:" + (7).to_bytes(4, sys.byteorder) + b"grp\x00member-1\x00\x01"
    assert decode_group_metadata(blob) == {"generation": 7, "group_id": "grp", "member_id": "member-1",
                                           "group_instance_id": None}
    blob = b"CGMDv2:" + (3).to_bytes(4, sys.byteorder) + b"grp\x00m\x00\x00static-a\x00"
    assert decode_group_metadata(blob)["group_instance_id"] == "static-a"
    assert decode_group_metadata(b"something else") is None
