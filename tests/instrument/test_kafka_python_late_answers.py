"""A kafka-python member's heartbeat or SyncGroup that was in flight when it sent its LeaveGroup is answered (or
fails) after the leave event: it is not emitted, since the member's membership had ended (the monitor would count
it as a stale member event; the events would no longer tell the client's own order). Seen in full runs of
tests/instrument/test_kafka_python_broker.py: a member's last event a heartbeat, after its leave; and (a member
closed while it rejoined after the other member's leave) a sync, after its leave."""
from __future__ import annotations

import threading
from types import SimpleNamespace

from rebalance_monitor.instrument.emitter import MemoryEmitter
from rebalance_monitor.instrument.kafka_python import KafkaPythonInstrumentation


class _Consumer:
    """What the instrumentation wraps of a consumer, with no coordinator (the hooks are called directly)."""

    config = {"group_id": "g", "client_id": "c", "heartbeat_interval_ms": 1000}

    def poll(self, *args, **kwargs):
        return {}

    def close(self, *args, **kwargs):
        pass

    def unsubscribe(self):
        pass

    def subscribe(self, *args, **kwargs):
        pass


def _inst():
    emitter = MemoryEmitter()
    return KafkaPythonInstrumentation(_Consumer(), emitter, host="h"), emitter


def _events(emitter):
    emitter.flush(5)
    return [(e["type"], e["member_id"], e.get("error")) for e in emitter.events]


def test_a_heartbeat_answered_after_the_members_leave_is_not_emitted():
    inst, emitter = _inst()
    beat = SimpleNamespace(member_id="m1", generation_id=3)
    inst._on_heartbeat_response(beat, SimpleNamespace(error_code=0))
    inst._emit_leave(SimpleNamespace(member_id="m1", members=None))
    inst._on_heartbeat_response(beat, SimpleNamespace(error_code=0))  # sent before the leave, answered after
    inst._on_heartbeat_failure(beat, RuntimeError("connection closed"))
    # another member id (a later join of the same consumer) is emitted as ever
    inst._on_heartbeat_response(SimpleNamespace(member_id="m2", generation_id=4), SimpleNamespace(error_code=0))
    assert _events(emitter) == [("heartbeat", "m1", None), ("leave", "m1", None), ("heartbeat", "m2", None)]
    emitter.close(5)


def test_no_heartbeat_of_a_member_follows_its_leave_whatever_the_threads_do():
    inst, emitter = _inst()
    beat = SimpleNamespace(member_id="m1", generation_id=3)
    go = threading.Barrier(2)

    def beats():
        go.wait()
        for _ in range(2000):
            inst._on_heartbeat_response(beat, SimpleNamespace(error_code=0))

    t = threading.Thread(target=beats)
    t.start()
    go.wait()
    inst._emit_leave(SimpleNamespace(member_id="m1", members=None))
    t.join()
    kinds = [k for k, _, _ in _events(emitter)]
    assert kinds[-1] == "leave" and kinds.count("leave") == 1
    emitter.close(5)


def test_a_sync_answered_after_the_members_leave_is_not_emitted():
    inst, emitter = _inst()
    inst._on_join_response(SimpleNamespace(error_code=0, generation_id=4, leader="m1", protocol_name="range",
                                           member_id="m1"))
    sync = SimpleNamespace(member_id="m1", generation_id=4, protocol_name="range")
    answer = SimpleNamespace(error_code=0, protocol_name="range", assignment=b"")
    inst._emit_leave(SimpleNamespace(member_id="m1", members=None))
    inst._on_sync_response(sync, answer)  # sent before the leave (the member rejoining), answered after
    inst._on_sync_response(SimpleNamespace(member_id="m2", generation_id=5, protocol_name="range"), answer)
    assert _events(emitter) == [("leave", "m1", None), ("sync", "m2", None)]
    assert emitter.stats()["errors"] == 0
    emitter.close(5)
