"""A simulated fleet of consumer groups at the cadence of real clients, as canonical events (bench_fleet.py).

Every member heartbeats every `heartbeat_ms` (3 s, the clients' default), reports its polls every `poll_ms` (the
instrumentation sums the polls of an interval into one event) and commits every `commit_ms`; each member's timers
start at a random phase. Churn: on average one rebalance per group every `churn_every_ms`, a member joining, leaving
(the close's leave) or crashing (silent: after its session timeout the rest rejoin with a restarted member). A few
members are watched, each alone in its group and in groups without churn:
  - frozen at a known time (a stopped process: no heartbeat, poll or commit from then on): the monitor should warn
    before its deadline (its last heartbeat + session timeout) and report the session timeout after it;
  - stalled at a known time (it stops polling, its heartbeat thread goes on until max.poll.interval.ms after the
    last poll, when it leaves the group silently): the poll deadline is the last poll + max.poll.interval.ms.
After a member's deadline the rest of its group rejoin (the coordinator's rebalance) a second later.

The events are the instrumentation's own (`instrument.member_events.Identity.event`). `Fleet.due(now_ms)` returns,
in time order, the events due by `now_ms`; nothing here reads a clock, so a test can step it.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from rebalance_monitor.instrument.member_events import LEAVE_REASON_CLOSE, Identity

TOPIC = "orders"


@dataclass
class Watched:
    """A frozen or stalled member: when it stopped, what it last sent, its deadline."""
    group: str
    member_id: str
    kind: str  # "session" (frozen) or "poll" (stalled)
    stop_ms: int
    last_ms: int | None = None  # its last heartbeat (frozen) or poll (stalled) before stop_ms
    limit_ms: int = 0

    @property
    def deadline_ms(self) -> int | None:
        return None if self.last_ms is None else self.last_ms + self.limit_ms


@dataclass
class Group:
    name: str
    members: list = field(default_factory=list)  # live member ids, the leader first
    generation: int = 0
    next_id: int = 0
    size: int = 0  # members at the start: churn keeps the group near it
    churn: bool = True


class Fleet:
    def __init__(self, groups: int, members: int, start_ms: int, *, seed: int = 1, heartbeat_ms: int = 3000,
                 poll_ms: int = 3000, commit_ms: int = 5000, session_ms: int = 45_000, max_poll_ms: int = 60_000,
                 churn_every_ms: int = 600_000, frozen: int = 4, stalled: int = 2, stop_at_ms: int = 30_000,
                 stop_spread_ms: int = 10_000, partitions: int = 12):
        self.rng = random.Random(seed)
        self.start_ms = start_ms
        self.heartbeat_ms, self.poll_ms, self.commit_ms = heartbeat_ms, poll_ms, commit_ms
        self.session_ms, self.max_poll_ms = session_ms, max_poll_ms
        self.churn_every_ms, self.partitions = churn_every_ms, partitions
        self.groups = {f"fleet-{g:05d}": Group(f"fleet-{g:05d}") for g in range(groups)}
        self.alive: dict[str, str] = {}  # member id -> its group, while it is in the group and sends
        self.silent: dict[str, int] = {}  # member id -> from when it sends nothing (frozen, crashed)
        self.crashed: dict[str, int] = {}  # member id -> when it crashed (replaced since)
        self.stalled: dict[str, int] = {}  # member id -> from when it stops polling
        self.watched: dict[str, Watched] = {}
        self.generations: dict[tuple[str, int], int] = {}  # (group, generation) -> ts of its last sync
        self.churned: dict[str, int] = {"join": 0, "leave": 0, "crash": 0}
        self._heap: list = []
        self._seq = 0
        self._identities: dict[str, Identity] = {}
        names = list(self.groups)
        for i, name in enumerate(names):
            g = self.groups[name]
            g.members = [self._new_member(g) for _ in range(members)]
            g.size = members
            self._at(start_ms + self.rng.randrange(heartbeat_ms), "rebalance", name, None)
            if i < frozen + stalled:  # the watched: spread over `stop_spread_ms` (the trigger's phases)
                g.churn = False
                kind = "session" if i < frozen else "poll"
                at = start_ms + stop_at_ms + stop_spread_ms * i // max(1, frozen + stalled)
                mid = g.members[-1]
                self.watched[mid] = Watched(name, mid, kind, at, limit_ms=session_ms if kind == "session" else max_poll_ms)
                self._at(at, "stop", name, mid)
            elif churn_every_ms:
                self._at(start_ms + self.rng.randrange(churn_every_ms) * 2, "churn", name, None)

    # ---- scheduling ------------------------------------------------------------------------------------------
    def _at(self, ts: int, what: str, group: str, member: str | None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (ts, self._seq, what, group, member))

    def _new_member(self, g: Group) -> str:
        mid = f"{g.name}-m{g.next_id}"
        self._identities[mid] = Identity(g.name, f"client-{g.next_id}", None, f"/10.{len(g.name) % 250}.0.{g.next_id % 250}")
        g.next_id += 1
        return mid

    def _ev(self, etype: str, mid: str, ts: int, **fields) -> dict:
        return self._identities[mid].event(etype, mid, ts=ts, **fields)

    @property
    def members(self) -> int:
        return sum(len(g.members) for g in self.groups.values())

    def due(self, now_ms: int) -> list[dict]:
        """The events due by `now_ms` (inclusive), in time order."""
        out: list[dict] = []
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            ts, _seq, what, group, mid = heapq.heappop(heap)
            getattr(self, "_do_" + what)(ts, self.groups[group], mid, out)
        return out

    # ---- a member's timers -----------------------------------------------------------------------------------
    def _live(self, mid: str, ts: int) -> bool:
        return mid in self.alive and self.silent.get(mid, ts + 1) > ts

    def _do_heartbeat(self, ts, g, mid, out) -> None:
        if not self._live(mid, ts):
            return
        w = self.watched.get(mid)
        if mid in self.stalled and w is not None and w.deadline_ms is not None and ts >= w.deadline_ms:
            return  # past max.poll.interval.ms: the client left the group (its own leave is not sent)
        out.append(self._ev("heartbeat", mid, ts, generation=g.generation, error=None))
        if w is not None and w.kind == "session":
            w.last_ms = ts
        self._at(ts + self.heartbeat_ms, "heartbeat", g.name, mid)

    def _do_poll(self, ts, g, mid, out) -> None:
        if not self._live(mid, ts) or self.stalled.get(mid, ts + 1) <= ts:
            return
        out.append(self._ev("poll", mid, ts, records=50))
        w = self.watched.get(mid)
        if w is not None and w.kind == "poll":
            w.last_ms = ts
        self._at(ts + self.poll_ms, "poll", g.name, mid)

    def _do_commit(self, ts, g, mid, out) -> None:
        if not self._live(mid, ts) or self.stalled.get(mid, ts + 1) <= ts:
            return
        i = g.members.index(mid) if mid in g.members else 0
        out.append(self._ev("commit", mid, ts, offsets=[[TOPIC, i % self.partitions, (ts - self.start_ms) // 10]]))
        self._at(ts + self.commit_ms, "commit", g.name, mid)

    # ---- the group's rebalances ------------------------------------------------------------------------------
    def _do_rebalance(self, ts, g, _mid, out) -> None:
        """Every member of `g` joins, then syncs a new generation (the leader's assignment, range-like)."""
        g.generation += 1
        for i, mid in enumerate(g.members):
            out.append(self._ev("join", mid, ts + i, protocols=["range"], topics=[TOPIC],
                                session_timeout_ms=self.session_ms, rebalance_timeout_ms=self.max_poll_ms,
                                heartbeat_interval_ms=self.heartbeat_ms))
        sync = ts + 100
        n = len(g.members)
        for i, mid in enumerate(g.members):
            parts = [[TOPIC, p] for p in range(self.partitions) if p % n == i]
            out.append(self._ev("sync", mid, sync + i, generation=g.generation, protocol="range", leader=g.members[0],
                                assignment=parts))
        self.generations[(g.name, g.generation)] = sync + n - 1
        for mid in g.members:
            if mid not in self.alive:  # a new member: its timers start at a random phase
                self.alive[mid] = g.name
                self._at(sync + 1 + self.rng.randrange(self.heartbeat_ms), "heartbeat", g.name, mid)
                self._at(sync + 1 + self.rng.randrange(self.poll_ms), "poll", g.name, mid)
                self._at(sync + 1 + self.rng.randrange(self.commit_ms), "commit", g.name, mid)

    def _remove(self, g: Group, mid: str) -> None:
        g.members.remove(mid)
        self.alive.pop(mid, None)

    def _do_churn(self, ts, g, _mid, out) -> None:
        self._at(ts + self.churn_every_ms // 2 + self.rng.randrange(self.churn_every_ms), "churn", g.name, None)
        if any(m in self.silent for m in g.members):
            return  # a crashed member not yet replaced: this churn is skipped
        n, base = len(g.members), g.size
        kind = self.rng.choice(("join", "leave", "crash"))
        if kind == "leave" and n <= max(2, base - 3):
            kind = "join"
        if kind == "join" and n >= base + 3:
            kind = "leave"
        self.churned[kind] += 1
        if kind == "join":
            g.members.append(self._new_member(g))
            self._do_rebalance(ts, g, None, out)
        elif kind == "leave":
            mid = g.members[-1]
            out.append(self._ev("leave", mid, ts, reason=LEAVE_REASON_CLOSE))
            self._remove(g, mid)
            self._do_rebalance(ts + 1, g, None, out)
        else:  # silent from now; the rest rejoin after its session timeout, with a restarted member
            mid = g.members[-1]
            self.silent[mid] = ts
            self._at(ts + self.session_ms + 1000, "replace", g.name, mid)

    def _do_replace(self, ts, g, mid, out) -> None:
        self._remove(g, mid)
        self.silent.pop(mid)
        self.crashed[mid] = ts - self.session_ms - 1000
        g.members.append(self._new_member(g))
        self._do_rebalance(ts, g, None, out)

    def _do_stop(self, ts, g, mid, out) -> None:
        w = self.watched[mid]
        if w.kind == "session":
            self.silent[mid] = ts
        else:
            self.stalled[mid] = ts
        # the member's deadline is known once it has stopped: the rest rejoin a second after it
        self._at(ts + w.limit_ms + 1000, "after_deadline", g.name, mid)

    def _do_after_deadline(self, ts, g, mid, out) -> None:
        self._remove(g, mid)
        self._do_rebalance(ts, g, None, out)
