"""Two workarounds for kafka-python 3.0's group join, applied to each workload member's consumer (an operator
running kafka-python 3.0 members would need the same two). Both were found in the workload's own DEBUG logs;
the evidence is in tests/README.md ("Why the workload patches kafka-python's join").

1. A join round trip that finishes while no `poll()` waits for it is never applied (`settle_finished_join`).
   `poll(timeout_ms)` may return while its JoinGroup/SyncGroup task is still in flight (kafka-python keeps the
   task and re-awaits it at the next poll). If the task finishes in between, nothing applies its result:
   - when the rejoin was asked for by the leader's metadata check (`_assignment_snapshot !=
     _metadata_snapshot`), the leader's own assignment has already made the snapshots equal, `need_rejoin()`
     is False, and the member stays REBALANCING with heartbeats off; the broker expires it a session timeout
     later (`Member ... has failed, removing it from the group ... on heartbeat expiration`) and forms the next
     generation without it (the partition_change failure: `parts-0 REBALANCING generation 3; parts-1 STABLE
     generation 4, 6 partitions`);
   - otherwise `need_rejoin()` is still True and the next poll sends a second JoinGroup, dropping the finished
     result: for the leader a whole extra generation (`Leader ... re-joining group during Stable`).
   The patched coordinator applies a finished task's result at the next poll exactly as kafka-python does
   when it awaits the task (STABLE, heartbeats on, the assignment handed to the subscription).

2. The leader's first assignment is made against an empty metadata snapshot (`wait_for_metadata_snapshot`).
   The coordinator builds its snapshot of the subscribed topics' partitions only from metadata updates that
   arrive after `subscribe()`; a member that joins at once (the first poll) and leads the group's first
   generation records `{}` as what it assigned, and its next metadata refresh (`{topic: {0..n}}`) makes it
   rejoin: one extra generation right after the first assignment. Waiting for one metadata update after
   `subscribe()` before the first poll removes it.

Both are no-ops on a kafka-python whose coordinator lacks the 3.0 attributes they rely on.
"""
from __future__ import annotations

import logging
import time

log = logging.getLogger("rebalance_monitor.workload")


def settle_finished_join(consumer) -> bool:
    """Patch `consumer`'s coordinator so that a join task that finished between two polls is applied at the
    next poll. Returns whether the patch applied (kafka-python 3.0's coordinator layout)."""
    coord = getattr(consumer, "_coordinator", None)
    needed = ("_join_task", "join_group_async", "need_rejoin", "_on_join_complete_async", "_enable_heartbeat",
              "_lock", "rejoining", "rejoin_needed", "state", "_generation")
    if coord is None or not all(hasattr(coord, a) for a in needed):
        return False
    from kafka.structs import MemberState

    plain_need_rejoin = coord.need_rejoin
    plain_join = coord.join_group_async

    def finished_unapplied() -> bool:
        task = coord._join_task
        return (task is not None and task.is_done and task.exception is None
                and coord.state is MemberState.REBALANCING)

    def need_rejoin() -> bool:
        # a finished, unapplied join is work for `join_group_async` even when nothing asks for a new join
        return finished_unapplied() or plain_need_rejoin()

    async def join_group_async(timeout_ms=None):
        if finished_unapplied():
            task, coord._join_task = coord._join_task, None
            log.info("member %s: applying the join that finished between two polls (generation %s)",
                     getattr(consumer, "config", {}).get("client_id"), coord._generation.generation_id)
            with coord._lock:
                coord.rejoining = False
                coord.rejoin_needed = False
                coord.state = MemberState.STABLE
                coord._enable_heartbeat()
            await coord._on_join_complete_async(coord._generation.generation_id, coord._generation.member_id,
                                                coord._generation.protocol, task.value)
            if not plain_need_rejoin():
                return True
        return await plain_join(timeout_ms)

    coord.need_rejoin = need_rejoin
    coord.join_group_async = join_group_async
    return True


def wait_for_metadata_snapshot(consumer, topics, timeout_s: float, stop) -> bool:
    """After `subscribe(topics)`: wait (at most `timeout_s`, or until `stop` is set) until the coordinator's
    snapshot of the subscribed topics holds their partitions. Returns whether it does."""
    coord = getattr(consumer, "_coordinator", None)
    cluster = getattr(coord, "_cluster", None)
    if coord is None or cluster is None or not hasattr(coord, "_metadata_snapshot"):
        return False
    cluster.request_update()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not stop.is_set():
        snap = coord._metadata_snapshot or {}
        if all(snap.get(t) for t in topics):
            return True
        stop.wait(0.05)
    return False
