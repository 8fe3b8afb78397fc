"""What a scenario function works with: `Ctx` (the names it uses, the members and traffic it started, the
actions it took: the ground truth of the end-to-end checks), `Scenario` (a scenario as data) and
`ScenarioResult`."""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from rebalance_monitor.instrument.emitter import Emitter, now_ms

from .member_runners import make_member
from .live_members import Member, MemberProcess, MemberSpec
from .topics import ScenarioError
from .traffic import TrafficProducer

log = logging.getLogger("rebalance_monitor.workload")


@dataclass
class ScenarioResult:
    name: str
    group: str
    topic: str
    events_topic: str
    started_ms: int
    ended_ms: int
    expect: dict
    actions: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    emitter_stats: dict | None = None
    records_produced: int = 0
    # when the scenario began tearing its group down: `expect` describes the group up to this moment
    # (the teardown itself makes the remaining members leave and may add generations)
    cleanup_ms: int | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class Ctx:
    """What a scenario function gets: the names it works on and helpers that keep track of what it
    started (for the cleanup) and of what it did (`actions`)."""

    def __init__(self, *, name: str, bootstrap: str, events_topic: str, group: str, topic: str,
                 partitions: int, emitter: Emitter, session_timeout_ms: int, rate: float):
        self.name = name
        self.bootstrap = bootstrap
        self.events_topic = events_topic
        self.group = group
        self.topic = topic
        self.partitions = partitions
        self.emitter = emitter
        self.session_timeout_ms = session_timeout_ms
        self.rate = rate
        self.actions: list[dict] = []
        self.notes: list[str] = []
        self.members: list[Member] = []
        self.processes: list[MemberProcess] = []
        self.traffic: list[TrafficProducer] = []

    # --- building blocks -------------------------------------------------------------------------
    def spec(self, client_id: str, **overrides) -> MemberSpec:
        base = dict(bootstrap=self.bootstrap, group=self.group, topics=[self.topic], client_id=client_id,
                    session_timeout_ms=self.session_timeout_ms,
                    heartbeat_interval_ms=max(300, self.session_timeout_ms // 6))
        base.update(overrides)
        return MemberSpec(**base)

    def action(self, what: str, **details) -> None:
        entry = {"ts": now_ms(), "action": what, **details}
        self.actions.append(entry)
        log.info("[%s] %s %s", self.name, what, details or "")

    def add_member(self, client_id: str, **overrides) -> Member:
        member = make_member(self.spec(client_id, **overrides), self.emitter)
        self.members.append(member)
        self.action("start_member", member=client_id, assignors=member.spec.assignors,
                    group_instance_id=member.spec.group_instance_id)
        return member.start()

    def stop_member(self, member: Member) -> None:
        self.action("stop_member", member=member.name, member_id=member.snapshot().member_id,
                    group_instance_id=member.spec.group_instance_id)
        member.stop()

    def join_process(self, member: Member, client_id: str, after_generation: int, **overrides):
        """A member in a child process (`add_process`) joins beside `member`, stable alone in `after_generation`:
        waits until both are in one newer generation and records it as a "stable" truth naming both. Returns
        (the process, that generation)."""
        proc = self.add_process(client_id, **overrides)

        def both_in() -> bool:
            snap = member.snapshot()
            return proc.synced.is_set() and proc.generation == snap.generation and snap.state == "STABLE" \
                and snap.generation > after_generation

        self.wait_until(both_in, 60, "the child-process member to join")
        snap = member.snapshot()
        self.action("stable", generation=snap.generation, members=[member.name, proc.name],
                    member_ids=[snap.member_id, proc.member_id])
        return proc, snap.generation

    def add_process(self, client_id: str, **overrides) -> MemberProcess:
        proc = MemberProcess(self.spec(client_id, **overrides), self.events_topic)
        self.processes.append(proc)
        self.action("start_process", member=client_id)
        return proc.start()

    def start_traffic(self, rate: float | None = None, topic: str | None = None) -> TrafficProducer:
        t = TrafficProducer(self.bootstrap, topic or self.topic, self.rate if rate is None else rate).start()
        self.traffic.append(t)
        return t

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def wait_until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        raise ScenarioError(f"{self.name}: timed out after {timeout:.0f}s waiting for {what}")

    def _stable_state(self, members: list[Member], after_generation: int | None, partitions: int | None):
        """(generation, member ids) when every member is STABLE in one common generation (newer than
        `after_generation` if given) and together they own all partitions; None otherwise."""
        total = self.partitions if partitions is None else partitions
        snaps = [m.snapshot() for m in members]
        gens = {s.generation for s in snaps}
        if len(gens) != 1 or any(s.state != "STABLE" for s in snaps):
            return None
        gen = gens.pop()
        if gen < 0 or (after_generation is not None and gen <= after_generation):
            return None
        owned = {tuple(tp) for s in snaps for tp in s.assignment}
        if total and len(owned) < total:
            return None
        return gen, tuple(s.member_id for s in snaps)

    def wait_stable(self, members: list[Member], timeout: float = 75.0, after_generation: int | None = None,
                    partitions: int | None = None) -> int:
        """Wait until every member in `members` is STABLE in one common generation (newer than
        `after_generation` if given) and together they own all partitions; returns that generation.
        The default bound leaves room for a round that waits out a slow member's rebalance timeout (30 s for the
        kafka-python members) on a loaded machine: 40 s was too short for the storm scenario in a full run."""
        result = {}

        def ok() -> bool:
            self._fail_if_stuck(members)
            state = self._stable_state(members, after_generation, partitions)
            if state is not None:
                result["state"] = state
            return state is not None

        try:
            self.wait_until(ok, timeout, f"members {[m.name for m in members]} to be stable")
        except ScenarioError as exc:
            raise ScenarioError(f"{exc} (they are: {self._describe(members)})") from None
        gen, ids = result["state"]
        self.action("stable", generation=gen, members=[m.name for m in members], member_ids=list(ids))
        return gen

    def wait_quiet(self, members: list[Member], quiet_s: float, timeout: float = 60.0,
                   after_generation: int | None = None, partitions: int | None = None,
                   not_before: float | None = None) -> int:
        """Like `wait_stable`, and the group then stays in that generation with the same member ids for
        `quiet_s` seconds, and at least until `not_before` (a `time.monotonic()` value) if given: for a
        broker that may start another rebalance after one completed. Returns that generation."""
        deadline = time.monotonic() + timeout
        seen, since = None, 0.0
        while time.monotonic() < deadline:
            self._fail_if_stuck(members)
            state = self._stable_state(members, after_generation, partitions)
            now = time.monotonic()
            if state != seen:
                seen, since = state, now
            elif state is not None and now - since >= quiet_s and (not_before is None or now >= not_before):
                gen, ids = state
                self.action("stable", generation=gen, members=[m.name for m in members], member_ids=list(ids),
                            quiet_s=quiet_s)
                return gen
            time.sleep(0.1)
        raise ScenarioError(f"{self.name}: timed out after {timeout:.0f}s waiting for members "
                            f"{[m.name for m in members]} to stay stable for {quiet_s:.0f}s "
                            f"(they are: {self._describe(members)})")

    STUCK_MARGIN_S = 20.0

    def _fail_if_stuck(self, members: list[Member]) -> None:
        """A member REBALANCING past its rebalance timeout plus a margin can get no answer any more: say so at
        once, with the client's own join state, instead of waiting out the whole bound. (kafka-python 3.0 left
        members so when their join finished between two polls; `kafka_python_join.settle_finished_join` now
        applies such a join, so this is a failure to look into, never one to run again.)"""
        now = time.monotonic()
        for m in members:
            s = m.snapshot()
            limit = m.spec.max_poll_interval_ms / 1000 + self.STUCK_MARGIN_S
            if s.state == "REBALANCING" and s.state_since and now - s.state_since > limit:
                raise ScenarioError(f"{self.name}: member {m.name} stuck REBALANCING for {now - s.state_since:.0f}s "
                                    f"(over its rebalance timeout + {self.STUCK_MARGIN_S:.0f}s; {s.polls} polls; "
                                    f"client: {m.join_state()}; all: {self._describe(members)})")

    @staticmethod
    def _describe(members: list[Member]) -> str:
        """What each member reports now, for an error message."""
        out = []
        for m in members:
            s = m.snapshot()
            out.append(f"{m.name} {s.state} generation {s.generation} id ...{s.member_id[-8:]} "
                       f"{len(s.assignment)} partitions" + (f" error {s.error}" if s.error else ""))
        return "; ".join(out)

    def generation(self, members: list[Member]) -> int:
        return max((m.snapshot().generation for m in members), default=-1)

    # --- cleanup ---------------------------------------------------------------------------------
    def cleanup(self) -> None:
        for proc in self.processes:
            try:
                if proc.alive:
                    proc.kill()
            except Exception:
                pass
        threads = []
        for member in self.members:
            if member.alive:
                t = threading.Thread(target=member.stop, daemon=True)
                t.start()
                threads.append(t)
        for t in threads:
            t.join(timeout=25)
        for traffic in self.traffic:
            self.records_produced = getattr(self, "records_produced", 0) + traffic.stop()


@dataclass
class Scenario:
    name: str
    description: str
    run: Callable[[Ctx], None]
    expect: dict
    partitions: int = 6
    estimated_s: int = 30
    notes: tuple = ()
