"""The scripted input of the job tests: two groups' events with rebalances, a crash, a re-join loop and a poll
timeout, records that are no events (dead letters), and the sentinel that moves event time to the last event."""
from __future__ import annotations

from helpers.events import heartbeats, join, leave, poll, stable_group, sync, tps

BAD = [b"not json at all", b"\x00\x01\x02 binary", b'{"v": 2, "type": "poll", "ts": 1, "group": "g"}',
       b'{"v": 1, "type": "poll", "group": "g", "member_id": "x"}', b'{"v":1,"type":"teleport","ts":1,"group":"g"}']


def scripted_events(base: int) -> list[dict]:
    """Two groups: g1 scales out, then a member crashes; g2 has a leader re-join loop and a poll timeout."""
    ev = []
    ev += stable_group(("a", "b"), start=base, group="g1")
    ev += heartbeats(["a", "b"], 1, base + 2000, base + 8000, group="g1")
    ev += [join(base + 9000, "c", group="g1"), join(base + 9100, "a", group="g1", owned=tps("t", 0, 1)),
           join(base + 9200, "b", group="g1", owned=tps("t", 2, 3)),
           sync(base + 9500, "a", 2, tps("t", 0), "a", group="g1"),
           sync(base + 9510, "b", 2, tps("t", 2, 3), "a", group="g1"),
           sync(base + 9520, "c", 2, tps("t", 1), "a", group="g1")]
    ev += heartbeats(["a", "b", "c"], 2, base + 11_000, base + 15_000, group="g1")
    ev += heartbeats(["a", "c"], 2, base + 18_000, base + 40_000, group="g1")  # b crashed after 15 s
    ev += stable_group(("x", "y"), start=base + 500, group="g2")
    for i in range(3):
        t = base + 5000 + i * 6000
        ev += [join(t, "x", group="g2", owned=tps("t", 0, 1)), join(t + 50, "y", group="g2", owned=tps("t", 2, 3)),
               sync(t + 100, "x", 2 + i, tps("t", 0, 1), "x", group="g2"),
               sync(t + 110, "y", 2 + i, tps("t", 2, 3), "x", group="g2")]
    for t in range(base + 2000, base + 30_000, 1000):
        ev.append(poll(t, "x", group="g2"))
        if t < base + 6000:
            ev.append(poll(t + 1, "y", group="g2"))
    ev.append(leave(base + 36_500, "y", reason="consumer poll timeout has expired.", group="g2"))
    ev.sort(key=lambda e: e["ts"])
    return ev


def sentinel(events, delay_ms=2000):
    """A last event, `delay_ms` after the others, in a group of its own: once the job has read it (it is read
    after everything before it in the partition) the watermark is exactly the last real event's time, which
    is where replay's end of input leaves event time. It produces no record but a group_status."""
    return {"v": 1, "type": "poll", "ts": max(e["ts"] for e in events) + delay_ms, "group": "zz-sentinel",
            "member_id": "s"}
