"""The per-group reconstruction state machine.

`GroupMonitor` consumes the events of one group in event-time order and emits output records (contract
section 2 plus the extensions documented in docs/records.md). Time only moves through event timestamps and
`advance_to(t)`: the caller owns the clock (the replay driver's watermark, or Spark's event-time watermark).

Ordering contract: call `process(event)` with non-decreasing timestamps (the drivers reorder within their
disorder bound first). Timers due strictly before an event's timestamp fire before the event is applied,
so the output does not depend on how the caller interleaves `advance_to` with events.
"""
from __future__ import annotations

import zlib
from collections import OrderedDict, deque

from . import causes as C
from .events import (
    Commit, CoordinatorChange, EndOffsets, Event, GenerationCompleted, GroupDeleted, GroupEmpty, Heartbeat,
    Join, Leave, Lost, MemberRemoved, Poll, RebalanceStarted, Revoked, Sync, TopicPartitions,
)
from .expected import judge_generation
from .members import Member
from .rebalance import Rebalance
from .settings import CoreSettings
from .storm import StormTracker
from .storm_pattern import summarise

EMPTY = "Empty"
PREPARING = "PreparingRebalance"
COMPLETING = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"
STATES = (EMPTY, PREPARING, COMPLETING, STABLE, DEAD)

COORDINATOR_CHANGE_WINDOW_MS = 60_000


def _sorted_tps(tps) -> list:
    return sorted([list(tp) for tp in tps])


def _join_details(ev: Join) -> dict:
    """What an id-less join declared, kept until the member shows up under its id (compact: it is state)."""
    d = {"ts": ev.ts, "topics": list(ev.topics), "protocols": list(ev.protocols)}
    for key, val in (("gi", ev.group_instance_id), ("st", ev.session_timeout_ms), ("rt", ev.rebalance_timeout_ms),
                     ("hi", ev.heartbeat_interval_ms), ("rack", ev.rack), ("reason", ev.reason),
                     ("gp", ev.group_protocol)):
        if val is not None:
            d[key] = val
    if ev.owned:
        d["owned"] = [list(tp) for tp in ev.owned]
        d["og"] = ev.generation
    return d


def _proven_whole(r) -> bool:
    """The coordinator's word on a generation is complete: it named the leader, the members or the assignor.
    A broker log's `Stabilized` line alone proves only that the generation formed: its `Assignment received`
    line (with the leader) normally follows within milliseconds, else the settle timer completes it."""
    return r.leader is not None or r.coordinator_members is not None or r.protocol is not None


def _coordinator_join(ev: Join) -> bool:
    """A join reported by the coordinator's log (no protocols, topics, owned partitions or timeouts: a client
    always sends its subscription)."""
    return not ev.protocols and not ev.topics and not ev.owned and ev.session_timeout_ms is None \
        and ev.rebalance_timeout_ms is None


def _take_timeouts(m: Member, ev: Join) -> None:
    """The member's session / rebalance / heartbeat intervals, from a join that states them."""
    for attr in ("session_timeout_ms", "rebalance_timeout_ms", "heartbeat_interval_ms"):
        val = getattr(ev, attr)
        if val is not None:
            setattr(m, attr, val)


def _fingerprint(ev: Event):
    """A fingerprint stable across processes (it is kept in state), cheap for the frequent events."""
    if type(ev) is Heartbeat:
        text = f"h|{ev.ts}|{ev.member_id}|{ev.generation}|{ev.error}"
    elif type(ev) is Poll:
        text = f"p|{ev.ts}|{ev.member_id}|{ev.records}"
    else:
        text = repr(ev)
    return zlib.crc32(text.encode("utf-8", "replace"))


class GroupMonitor:
    """Reconstructs one consumer group. See the module docstring for the ordering contract."""

    def __init__(self, group: str, settings: CoreSettings | None = None):
        self.group = group
        self.settings = settings or CoreSettings()
        s = self.settings
        self.state = EMPTY
        self.generation: int | None = None
        self.protocol: str | None = None
        self.leader: str | None = None
        self.members: dict[str, Member] = {}
        self.removed: OrderedDict[str, int] = OrderedDict()
        self.rebalance: Rebalance | None = None
        self.owners: dict[tuple, str] = {}  # (topic, partition) -> owner key (instance id or member id)
        self.partitions: dict[str, int] = {}  # explicit partition counts (topic_partitions events)
        self.coordinator_feed = False
        self.client_feed = False
        self.membership_known = False  # from client events, or coordinator member lists
        self.coordinator_change_ms: int | None = None
        self.storm = StormTracker(s.storm_window_ms, s.storm_min_rebalances)
        self.history: deque = deque(maxlen=max(1, s.history_generations))
        self.timer_ms: int | None = None  # lower bound of the earliest member deadline
        self.clock_ms = 0
        self.last_event_ms = 0
        self.recent: deque = deque()
        self.recent_set: set = set()
        self.counters: dict[str, int] = {}
        self.dirty = True

    # ------------------------------------------------------------------------------------------
    # public API
    # ------------------------------------------------------------------------------------------
    def process(self, ev: Event) -> list[dict]:
        """Apply one event (timestamps non-decreasing) and return the records it produced."""
        out: list[dict] = []
        ts = ev.ts
        if (self.timer_ms is not None and self.timer_ms < ts) or self.rebalance is not None \
                or self.storm.started_ms is not None:
            self._fire_timers(ts, out, inclusive=False)
        kind = type(ev)
        # Duplicates (an at-least-once producer's retries) are dropped by fingerprint. Error-free heartbeats
        # and polls are idempotent in the state machine, so they skip the check: most events, no effect.
        if not (kind is Poll or (kind is Heartbeat and ev.error is None)):
            fp = _fingerprint(ev)
            if fp in self.recent_set:
                self._count("duplicates")
                return out
            self._remember(fp)
        if ts > self.clock_ms:
            self.clock_ms = ts
        if ts > self.last_event_ms:
            self.last_event_ms = ts
        self.dirty = True
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, ev, out)
        return out

    def process_beat(self, is_heartbeat: bool, ts: int, member_id: str, generation, error, instance_id,
                     client_id, host) -> bool:
        """The common case of `process` without an event object: an error-free heartbeat (`is_heartbeat`,
        `generation`) or a poll of a member already tracked for it, with no rebalance or storm under way and
        no timer due. Same effect as `process` of the same event (it would return no record). Returns False,
        changing nothing, when the case does not apply: the caller then builds the event and calls `process`.
        Most events of a busy group take this path."""
        if self.rebalance is not None or self.storm.started_ms is not None or \
                (self.timer_ms is not None and self.timer_ms < ts):
            return False
        m = self.members.get(member_id)
        if m is None:
            return False
        if is_heartbeat:
            if error is not None or not m.hb_tracked:
                return False
            self.client_feed = True
            self.membership_known = True
        elif not m.poll_tracked:
            return False
        if ts > self.clock_ms:
            self.clock_ms = ts
        if ts > self.last_event_ms:
            self.last_event_ms = ts
        self.dirty = True
        if instance_id is not None:
            m.group_instance_id = instance_id
        if client_id is not None:
            m.client_id = client_id
        if host is not None:
            m.host = host
        if is_heartbeat:
            m.session_alive(ts)
            if m.sync_generation is None and generation >= 0:
                m.sync_generation = generation
        else:
            m.polled(ts)
        return True

    def _remember(self, fp: int) -> None:
        self.recent.append(fp)
        self.recent_set.add(fp)
        if len(self.recent) > self.settings.dedupe_window:
            self.recent_set.discard(self.recent.popleft())

    def advance_to(self, now_ms: int) -> list[dict]:
        """Fire every timer due at or before `now_ms` (the caller's watermark)."""
        out: list[dict] = []
        self._fire_timers(now_ms, out, inclusive=True)
        if now_ms > self.clock_ms:
            self.clock_ms = now_ms
        return out

    def next_timer_ms(self) -> int | None:
        """The earliest time at which `advance_to` may produce something."""
        cands = [self.timer_ms, self.storm.end_deadline()]
        if self.rebalance is not None:
            cands.append(self.rebalance.settle_deadline(self.settings.settle_ms))
        cands = [c for c in cands if c is not None]
        return min(cands) if cands else None

    def is_idle(self, now_ms: int) -> bool:
        """True when the group can be dropped from state: no event for the idle TTL and nothing pending."""
        return (now_ms - self.last_event_ms > self.settings.group_idle_ttl_ms and self.rebalance is None
                and not self.storm.in_storm)

    def status(self, now_ms: int | None = None) -> dict:
        """The `group_status` record: the group as it stands now. Resets the per-period heartbeat gaps."""
        now = self.clock_ms if now_ms is None else now_ms
        ratios = {}
        for m in self.members.values():
            r = m.gap_ratio(now)
            if r is not None:
                ratios[m.member_id] = r
            m.gap_max_ms = 0
        self.dirty = False
        from .coordinator_placement import offsets_partition_for
        return {
            "kind": "group_status", "group": self.group, "ts": now, "state": self.state,
            "generation": self.generation, "protocol": self.protocol, "leader": self.leader,
            "members": len(self.members),
            "max_heartbeat_gap_ratio": max(ratios.values()) if ratios else None,
            "heartbeat_gap_ratios": ratios, "in_storm": self.storm.in_storm,
            "rebalancing_since_ms": self.rebalance.started_ms if self.rebalance is not None else None,
            "coordinator_partition": offsets_partition_for(self.group, self.settings.offsets_partitions),
        }

    # ------------------------------------------------------------------------------------------
    # timers
    # ------------------------------------------------------------------------------------------
    def _fire_timers(self, limit: int, out: list, inclusive: bool) -> None:
        while True:
            due = self._earliest_due()
            if due is None:
                return
            at, what, member = due
            if at > limit or (at == limit and not inclusive):
                return
            if what == "member":
                self._expire_members(at, limit, out)
            elif what == "settle":
                self._complete(self.rebalance.last_sync_ms or at, out, settled_at=at)
            elif what == "storm":
                for rec in self.storm.advance(at):
                    out.append(self._stamp(rec, at))

    def _earliest_due(self):
        best = None
        if self.timer_ms is not None:
            best = (self.timer_ms, "member", None)
        if self.rebalance is not None:
            sd = self.rebalance.settle_deadline(self.settings.settle_ms)
            if sd is not None and (best is None or sd < best[0]):
                best = (sd, "settle", None)
        se = self.storm.end_deadline()
        if se is not None and (best is None or se < best[0]):
            best = (se, "storm", None)
        return best

    def _recompute_timer(self) -> None:
        best = None
        for m in self.members.values():
            d = m.next_deadline()
            if d is not None and (best is None or d < best):
                best = d
        self.timer_ms = best

    def _lower_timer(self, m: Member) -> None:
        d = m.next_deadline()
        if d is not None and (self.timer_ms is None or d < self.timer_ms):
            self.timer_ms = d

    def _expire_members(self, at: int, detected: int, out: list) -> None:
        """Fire the member deadlines that are really due at `at` (the cached bound may be stale)."""
        expired = []
        for m in self.members.values():
            s = m.session_deadline()
            p = m.poll_deadline()
            if s is not None and s <= at:
                expired.append((s, "session", m))
            elif p is not None and p <= at:
                expired.append((p, "poll", m))
        expired.sort(key=lambda x: (x[0], x[2].member_id))
        for deadline, kind, m in expired:
            self._timeout(m, kind, deadline, detected, out)
        self._recompute_timer()

    def _timeout(self, m: Member, kind: str, deadline: int, detected: int, out: list,
                 trigger: bool = True, reason: str | None = None) -> None:
        last_seen = m.last_heartbeat_ms if kind == "session" else m.last_poll_ms
        rec = {"kind": "member_timeout", "group": self.group, "ts": detected, "member_id": m.member_id,
               "timeout": kind, "last_seen_ms": last_seen, "deadline_ms": deadline, "detected_ms": detected}
        for key in ("client_id", "host", "group_instance_id"):
            val = getattr(m, key)
            if val is not None:
                rec[key] = val
        out.append(rec)
        self._count(f"timeouts_{kind}")
        cause = C.SESSION_TIMEOUT if kind == "session" else C.POLL_TIMEOUT
        if reason is None:
            limit = m.session_timeout_ms if kind == "session" else m.rebalance_timeout_ms
            what = "heartbeat" if kind == "session" else "poll"
            reason = f"no {what} for {limit} ms"
        self._remove_member(m.member_id, deadline)
        if trigger:
            self._trigger(cause, deadline, out, who=m.describe(), reason=reason)

    # ------------------------------------------------------------------------------------------
    # membership
    # ------------------------------------------------------------------------------------------
    def _member(self, ev, create: bool = True) -> Member | None:
        m = self.members.get(ev.member_id)
        if m is None and create:
            if len(self.members) >= self.settings.max_members_per_group:
                self._count("members_capped")
                return None
            m = Member(ev.member_id)
            m.last_seen_ms = ev.ts
            self.members[ev.member_id] = m
            self.removed.pop(ev.member_id, None)
        if m is not None:
            m.update_identity(ev)
        return m

    def _live_member(self, ev) -> Member | None:
        """The member a client event is about (created if new), or None for a straggling event of a member
        already removed (counted) or one past the member cap. The first event under a new member id of a
        static member that is rejoining (its instance sent a JoinGroup without an id) is the same member:
        the coordinator handed the instance a new id."""
        if ev.member_id not in self.members:
            if ev.member_id in self.removed:
                self._count("stale_member_events")
                return None
            twin = self._static_twin(ev)
            if twin is not None and twin.joining_ms is not None:
                self._rename_static(twin, ev)
            elif self.rebalance is not None and self.rebalance.anonymous_joins:
                details = self._match_anonymous(ev)
                m = self._member(ev)
                if m is not None and details:
                    self._adopt_anonymous_join(m, details)
                return m
        return self._member(ev)

    def _remove_member(self, member_id: str, at: int) -> Member | None:
        m = self.members.pop(member_id, None)
        if m is not None:
            self.removed[member_id] = at
            while len(self.removed) > self.settings.removed_members_kept:
                self.removed.popitem(last=False)
        return m

    def _static_twin(self, ev) -> Member | None:
        if not ev.group_instance_id:
            return None
        for m in self.members.values():
            if m.group_instance_id == ev.group_instance_id and m.member_id != ev.member_id:
                return m
        return None

    # ------------------------------------------------------------------------------------------
    # rebalances
    # ------------------------------------------------------------------------------------------
    def _trigger(self, cause: str, at: int | None, out: list, who: dict | None = None,
                 reason: str | None = None) -> None:
        """Something that starts (or joins in) a rebalance happened at `at`."""
        r = self.rebalance
        if r is not None and r.generation is not None and not self.client_feed and not _proven_whole(r):
            # Broker log lines only: the generation formed (Stabilized) but its leader never sent the
            # assignment before this join or leave sent the group back to PreparingRebalance (it was in
            # CompletingRebalance): it never became Stable, and the rebalance goes on to the next one.
            r.generation = None
            r.formed_ms = None
            r.coordinator_confirmed = False
        elif r is not None and r.generation is not None:
            # The current generation already formed: this trigger belongs to the next rebalance. Members whose
            # JoinGroup came while it was completing and that never synced it were not in it (the coordinator
            # sent the group back to PreparingRebalance for them): they carry over to the next round.
            r = self._complete_before_next(r, r.last_sync_ms or r.formed_ms or at, out)
        if not self.members and self.membership_known and cause not in (C.MEMBER_JOINED,):
            # The last member went away (also in the middle of a rebalance): the group becomes Empty and
            # nothing is reassigned. Only when we know the membership: broker log lines alone name members
            # only as they come and go.
            self._go_empty()
            return
        if r is None:
            r = self.rebalance = Rebalance(at, self.generation)
            self.state = PREPARING
            if self.coordinator_change_ms is not None and at is not None and \
                    0 <= at - self.coordinator_change_ms <= COORDINATOR_CHANGE_WINDOW_MS:
                r.add_cause(C.COORDINATOR_CHANGE, reason="coordinator moved shortly before")
                self.coordinator_change_ms = None
        r.trigger(at)
        r.add_cause(cause, who, reason)
        if not r.announced and r.started_ms is not None:
            r.announced = True
            out.append({"kind": "rebalance_started", "group": self.group, "ts": r.started_ms,
                        "generation": self.generation, "started_ms": r.started_ms,
                        "causes": [dict(c) for c in r.causes]})

    def _complete_before_next(self, r: Rebalance, completed_ms: int | None, out: list) -> Rebalance | None:
        """Complete the generation `r` formed, as the next round begins. Members whose JoinGroup came while it
        was completing and that never synced it were not in it (the coordinator sent the group back to
        PreparingRebalance for them): they, and the causes naming them, carry over to the next round, which is
        returned (None when nobody carries over)."""
        late = {mid: t for mid, t in r.joined.items() if mid not in r.synced} if r.synced else {}
        anonymous = list(r.anonymous_joins) if r.synced else []  # joined without an id, not seen since
        moved = [c for c in r.causes if c.get("member_id") in late]
        for mid in late:
            del r.joined[mid]
        if moved:
            r.causes = [c for c in r.causes if c.get("member_id") not in late]
        r.anonymous_joins = [] if anonymous else r.anonymous_joins
        self._complete(completed_ms, out)
        if not late and not anonymous:
            return None
        nxt = self.rebalance = Rebalance(min(late.values()) if late else completed_ms, self.generation)
        self.state = PREPARING
        nxt.joined.update(late)
        nxt.anonymous_joins = anonymous
        for mid, m in self.members.items():  # members whose rejoin waited on the completed generation
            if m.joining_ms is not None and m.rejoin_cause is not None and mid not in nxt.joined:
                nxt.joined[mid] = m.joining_ms
        nxt.causes.extend(moved)
        return nxt

    def _go_empty(self) -> None:
        self.rebalance = None
        self.state = EMPTY
        self.leader = None
        self._recompute_timer()

    def _ensure_rebalance(self, at: int | None) -> Rebalance:
        if self.rebalance is None:
            self.rebalance = Rebalance(at, self.generation)
            self.state = PREPARING
        return self.rebalance

    def _maybe_complete(self, out: list) -> None:
        r = self.rebalance
        if r is None or r.generation is None:
            return
        if self.coordinator_feed and self.client_feed and not r.coordinator_confirmed:
            return  # coordinator facts win: wait for its word (or the settle timer)
        expected = r.expected_ids()
        if expected is None:
            if r.joined:
                # KIP-848 members never rejoin: each live one reaches the new epoch by a sync of its own (a
                # member revoking partitions syncs its old epoch first)
                expected = ({mid for mid in r.joined if mid in self.members} | set(r.synced)
                            | {mid for mid, m in self.members.items() if m.kip848})
            else:
                # No join seen for this round (it was triggered where we cannot see): every live member is
                # expected to sync; one that does not is dropped when the settle timer fires.
                expected = set(self.members) | set(r.synced)
            if r.anonymous_joins:
                return  # someone joined before getting a member id and has not shown up with one yet
        if expected and expected.issubset(r.synced):
            self._complete(r.last_sync_ms or r.formed_ms, out)
        elif r.coordinator_confirmed and not self.client_feed and _proven_whole(r):
            # the latest proof: a log's `Assignment received` after its `Stabilized` (the group is Stable then)
            self._complete(r.last_sync_ms or r.formed_ms, out)

    def _complete(self, completed_ms: int | None, out: list, settled_at: int | None = None) -> None:
        r = self.rebalance
        if r is None:
            return
        if r.generation is None:
            # Settled without ever learning the generation: nothing formed that we can report.
            self.rebalance = None
            self.state = STABLE if self.members else EMPTY
            return
        gen = r.generation
        coord = {m["member_id"]: m for m in r.coordinator_members} if r.coordinator_members is not None else None
        if coord is not None:
            ids = sorted(coord)
        elif not self.client_feed:
            # broker log lines only: every member the coordinator added and has not removed (its log names
            # members as they come and go; a member that did not rejoin is removed by a line of its own)
            ids = sorted(self.members)
        else:
            # KIP-848 members never rejoin: every live one is in the group's new epoch (its own sync for that
            # epoch may follow, or not at all when its assignment did not change)
            ids = sorted(set(r.synced) | {mid for mid in r.joined if mid in self.members}
                         | {mid for mid, m in self.members.items() if m.kip848})
        # Members of the previous generation that never rejoined were dropped by the coordinator.
        if self.client_feed and coord is None and r.joined:
            for mid in [mid for mid, m in self.members.items()
                        if mid not in ids and m.sync_generation is not None and m.sync_generation < gen
                        and not m.kip848]:
                m = self.members[mid]
                r.add_cause(C.JOIN_TIMEOUT, m.describe(), "did not rejoin before the rebalance timeout")
                self._remove_member(mid, completed_ms or gen)
        assignment: dict | None = {}
        for mid in ids:
            tps = r.synced.get(mid)
            if tps is None and coord is not None and coord[mid].get("assignment") is not None:
                tps = tuple(tuple(x) for x in coord[mid]["assignment"])
            m = self.members.get(mid)
            if tps is None and m is not None and m.sync_generation == gen and m.assignment is not None:
                tps = m.assignment
            if tps is None:
                assignment = None
                break
            assignment[mid] = tps
        started = r.started_ms
        if completed_ms is None:
            completed_ms = settled_at if settled_at is not None else self.clock_ms
        for mid in ids:  # the join phase is over: the session timers of its members run again
            m = self.members.get(mid)
            if m is not None and m.joining_ms is not None and m.rejoin_cause is None:
                m.join_done(completed_ms)
                self._lower_timer(m)
        duration = completed_ms - started if started is not None and completed_ms >= started else None
        protocol = r.protocol
        judged = judge_generation(self, ids, assignment, protocol, gen)
        rec = {
            "kind": "generation", "group": self.group, "ts": completed_ms, "generation": gen,
            "protocol": protocol, "leader": r.leader, "started_ms": started, "completed_ms": completed_ms,
            "duration_ms": duration, "causes": r.final_causes(), "members": ids,
            "assignment": ({mid: _sorted_tps(tps) for mid, tps in assignment.items()}
                           if assignment is not None else None),
        }
        rec.update(judged)
        out.append(rec)
        self._count("generations")
        # The group is now Stable on `gen`.
        self.generation = gen
        self.protocol = protocol or self.protocol
        self.leader = r.leader
        self.rebalance = None
        self.state = STABLE if ids else EMPTY
        if assignment is not None:
            for mid, tps in assignment.items():
                m = self.members.get(mid)
                key = m.owner_key if m is not None else mid
                for tp in tps:
                    self.owners[tuple(tp)] = key
                if m is not None:
                    m.assignment = tuple(tps)
                    m.sync_generation = gen
                    m.owned = tuple(tps)
                    m.owned_generation = gen
            if len(self.owners) > self.settings.max_partitions_per_group:
                self._count("partitions_capped")
                self.owners = dict(list(self.owners.items())[-self.settings.max_partitions_per_group:])
        self.history.append([gen, completed_ms, duration, [c["cause"] for c in rec["causes"]]])
        for srec in self.storm.on_generation(completed_ms, summarise(rec)):
            out.append(self._stamp(srec, completed_ms))

    def _stamp(self, rec: dict, ts: int) -> dict:
        rec["group"] = self.group
        rec["ts"] = ts
        return rec

    def _count(self, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1

    # ------------------------------------------------------------------------------------------
    # client-side events
    # ------------------------------------------------------------------------------------------
    def _on_join(self, ev: Join, out: list) -> None:
        if ev.member_id and _coordinator_join(ev):
            self._on_coordinator_join(ev, out)
            return
        self.client_feed = True
        self.membership_known = True
        ts = ev.ts
        who = {k: v for k, v in (("client_id", ev.client_id), ("host", ev.host)) if v is not None}
        if not ev.member_id:
            twin = self._static_twin(ev)
            if twin is not None:
                self._static_rejoin(twin, ev, out)
                return
            r = self.rebalance
            if r is None or r.generation is not None:
                self._trigger(C.MEMBER_JOINED, ts, out, who=who or None, reason=ev.reason)
                r = self.rebalance
            else:
                r.trigger(ts)
                r.add_cause(C.MEMBER_JOINED, who or None, ev.reason)
            if r is not None:
                r.anonymous_joins.append([ev.client_id, ev.host, _join_details(ev)])
            return
        existing = self.members.get(ev.member_id)
        cause = None
        reason = ev.reason
        if existing is None:
            twin = self._static_twin(ev)
            if twin is not None:
                same_topics = twin.topics is not None and set(twin.topics) == set(ev.topics)
                if self.rebalance is None and self.state == STABLE and same_topics:
                    self._replace_static(twin, ev)
                    return
                self._remove_member(twin.member_id, ts)
                cause = C.STATIC_MEMBER_REPLACED
                reason = reason or f"group instance id {ev.group_instance_id} rejoined with a new member id"
            else:
                cause = C.MEMBER_JOINED
                if self._match_anonymous(ev) is not None:
                    cause = None  # already counted when it joined without an id
        else:
            changed = existing.topics is not None and set(existing.topics) != set(ev.topics)
            classified = C.classify_reason(ev.reason, default=None) if ev.reason else None
            r = self.rebalance
            if r is not None and r.generation is not None and ev.member_id in r.synced and not ev.reason \
                    and existing.topics is not None and not changed \
                    and tuple(existing.protocols) == tuple(ev.protocols):
                self._defer_rejoin(existing, ev)
                return
            if self.rebalance is None or self.rebalance.generation is not None:
                if changed:
                    cause = C.SUBSCRIPTION_CHANGE
                elif classified in (C.METADATA_CHANGE, C.SUBSCRIPTION_CHANGE, C.COORDINATOR_CHANGE):
                    cause = classified
                elif ev.member_id == self.leader:
                    cause = C.LEADER_REJOIN
                elif classified and classified != C.MEMBER_JOINED:
                    cause = classified
                else:
                    cause = C.UNKNOWN
            elif changed:
                cause = C.SUBSCRIPTION_CHANGE
        m = self._member(ev)
        if m is None:
            return
        if ev.group_protocol == "consumer":
            m.kip848 = True
        m.protocols = ev.protocols
        m.topics = ev.topics
        if ev.owned or m.owned == ():
            m.owned = ev.owned
        if ev.generation is not None:
            m.owned_generation = ev.generation
        elif ev.owned:
            m.owned_generation = m.sync_generation
        if ev.rack is not None:
            m.rack = ev.rack
        _take_timeouts(m, ev)
        m.joined_ms = ts
        m.session_alive(ts)
        m.polled(ts)
        if cause is not None:
            self._trigger(cause, ts, out, who=m.describe(), reason=reason)
        r = self.rebalance
        if r is None:
            r = self._ensure_rebalance(ts)
            r.trigger(ts)
        r.joined[m.member_id] = ts
        m.join_sent(ts)  # after the trigger: completing the previous round ends only earlier joins
        self._lower_timer(m)

    def _on_coordinator_join(self, ev: Join, out: list) -> None:
        """A broker's log says the coordinator added member M to the group (it names no protocols, topics or
        timeouts). Idempotent: the coordinator may say so twice (the member's own line and the rebalance
        reason); a member already known only shows a sign of life. The log names members as they come and
        go, so the membership is not taken as complete."""
        self.coordinator_feed = True
        m = self.members.get(ev.member_id)
        if m is not None:
            m.update_identity(ev)
            m.session_alive(ev.ts)
            return
        twin = self._static_twin(ev)
        who = {"member_id": ev.member_id}
        who.update({k: v for k, v in (("client_id", ev.client_id), ("host", ev.host)) if v is not None})
        # first the trigger (it completes a generation that formed before this member came), then the member
        self._trigger(C.STATIC_MEMBER_REPLACED if twin is not None else C.MEMBER_JOINED, ev.ts, out, who=who,
                      reason=ev.reason)
        if twin is not None:
            self._remove_member(twin.member_id, ev.ts)
        m = self._member(ev)
        if m is None:
            return
        if ev.group_protocol == "consumer":
            m.kip848 = True  # a KIP-848 log line: the member stays in every group epoch until it goes
        m.joined_ms = ev.ts
        m.session_alive(ev.ts)
        r = self.rebalance
        if r is not None:
            r.joined[m.member_id] = ev.ts

    def _defer_rejoin(self, m: Member, ev: Join) -> None:
        """A member that already synced the generation being completed sends a JoinGroup again, unprompted
        (no reason; kafka-python does so right after a sync when its metadata snapshot moved) and with the
        same subscription and assignors. While a generation completes, the coordinator answers such a join
        with that generation (no new round), so it neither ends the generation nor starts a rebalance here;
        the member waits on it until its next sync. Should a new generation answer it instead, the rejoin
        is that round's cause (see `_on_sync`)."""
        if ev.owned:
            m.owned = ev.owned
        if ev.generation is not None:
            m.owned_generation = ev.generation
        _take_timeouts(m, ev)
        m.joined_ms = ev.ts
        m.polled(ev.ts)
        m.join_sent(ev.ts, rejoin_cause=C.LEADER_REJOIN if ev.member_id == self._leader_of_round() else C.UNKNOWN)
        self._count("deferred_rejoins")

    def _leader_of_round(self) -> str | None:
        r = self.rebalance
        return (r.leader if r is not None and r.leader else None) or self.leader

    def _match_anonymous(self, ev) -> dict | None:
        """The id-less join of this round that `ev` (the first event under a new member id) answers, taken off
        the list: its details ({} if unknown), or None when no such join is pending."""
        r = self.rebalance
        if r is None:
            return None
        for i, entry in enumerate(r.anonymous_joins):
            cid, host = entry[0], entry[1]
            details = entry[2] if len(entry) > 2 and entry[2] else {}
            instance = details.get("gi")
            if (cid is None or ev.client_id is None or cid == ev.client_id) and \
                    (host is None or ev.host is None or host == ev.host) and \
                    (instance is None or ev.group_instance_id is None or instance == ev.group_instance_id):
                del r.anonymous_joins[i]
                # name the member on the cause recorded for its id-less join
                r.add_cause(C.MEMBER_JOINED, {"member_id": ev.member_id,
                                               **({"client_id": ev.client_id} if ev.client_id else {}),
                                               **({"host": ev.host} if ev.host else {})},
                            getattr(ev, "reason", None) or details.get("reason"))
                return details
        return None

    def _adopt_anonymous_join(self, m: Member, details: dict) -> None:
        """A member first seen after its id-less join (the coordinator answered it with an id straight away, as
        for static members): it joined this round with what that join declared."""
        ts = details.get("ts")
        if "topics" in details:
            m.topics = tuple(details["topics"])
        if "protocols" in details:
            m.protocols = tuple(details["protocols"])
        if details.get("owned"):
            m.owned = tuple(tuple(tp) for tp in details["owned"])
            m.owned_generation = details.get("og")
        if details.get("rack") is not None:
            m.rack = details["rack"]
        if details.get("gp") == "consumer":
            m.kip848 = True
        for key, attr in (("st", "session_timeout_ms"), ("rt", "rebalance_timeout_ms"),
                          ("hi", "heartbeat_interval_ms")):
            if details.get(key) is not None:
                setattr(m, attr, details[key])
        if ts is not None:
            m.joined_ms = ts
            m.polled(ts)
            m.join_sent(ts)
            r = self.rebalance
            if r is not None and r.generation is None:
                r.joined.setdefault(m.member_id, ts)

    def _replace_static(self, old: Member, ev: Join) -> None:
        """A static member restarted within its session timeout: same partitions, no rebalance."""
        self._rename_static(old, ev)
        old.topics = ev.topics
        old.joined_ms = ev.ts
        old.join_sent(ev.ts)
        old.polled(ev.ts)
        for attr in ("session_timeout_ms", "rebalance_timeout_ms", "heartbeat_interval_ms"):
            val = getattr(ev, attr)
            if val is not None:
                setattr(old, attr, val)

    def _rename_static(self, old: Member, ev) -> None:
        """The coordinator gave a static member's instance a new member id: the same member (its partitions,
        its deadlines, its place in the rebalance) goes on under the new id."""
        old_id = old.member_id
        self.members.pop(old_id, None)
        self.removed[old_id] = ev.ts
        while len(self.removed) > self.settings.removed_members_kept:
            self.removed.popitem(last=False)
        r = self.rebalance
        if r is not None:
            for seen in (r.joined, r.synced):
                if old_id in seen:
                    seen[ev.member_id] = seen.pop(old_id)
        old.member_id = ev.member_id
        old.update_identity(ev)
        self.members[ev.member_id] = old
        self._count("static_replacements")

    def _static_rejoin(self, twin: Member, ev: Join, out: list) -> None:
        """A static member's instance sent a JoinGroup without a member id (a restarted process) while the
        group still holds the instance. The coordinator keeps the instance's membership while it rejoins, and
        one that honours static membership hands it its assignment back without a rebalance (KIP-345): this
        is no trigger by itself. The member waits on its join until it syncs (under a new member id on
        Apache Kafka: see `_live_member`)."""
        changed = twin.topics is not None and set(twin.topics) != set(ev.topics)
        twin.update_identity(ev)
        twin.protocols = ev.protocols
        twin.topics = ev.topics
        for attr in ("session_timeout_ms", "rebalance_timeout_ms", "heartbeat_interval_ms"):
            val = getattr(ev, attr)
            if val is not None:
                setattr(twin, attr, val)
        twin.joined_ms = ev.ts
        twin.session_alive(ev.ts)
        twin.polled(ev.ts)
        self._count("static_rejoins")
        if changed:
            self._trigger(C.SUBSCRIPTION_CHANGE, ev.ts, out, who=twin.describe(),
                          reason=ev.reason or f"group instance id {ev.group_instance_id} rejoined with other topics")
        r = self.rebalance
        if r is not None and r.generation is None:
            r.joined[twin.member_id] = ev.ts  # a rebalance is under way: the instance joins it
            twin.join_sent(ev.ts)
        else:
            twin.join_sent(ev.ts, rejoin_cause=C.STATIC_MEMBER_REPLACED)

    def _on_sync(self, ev: Sync, out: list) -> None:
        self.client_feed = True
        self.membership_known = True
        m = self._live_member(ev)
        if m is None:
            return
        rejoined = (m.joining_ms, m.rejoin_cause) if m.rejoin_cause is not None else None
        m.session_alive(ev.ts)
        m.polled(ev.ts)
        m.join_done(ev.ts)
        self._lower_timer(m)
        if ev.member_state not in (None, "stable"):
            # a KIP-848 member on its way to its epoch's target (revoking, or waiting for partitions others
            # still hold): alive, but its place in the epoch is proven by its next, stable, record
            return
        gen = ev.generation
        if self.generation is not None and gen <= self.generation:
            if gen == self.generation:  # a late sync or a replaced static member syncing the current generation
                m.sync_generation = gen
                m.assignment = ev.assignment
            return
        r = self.rebalance
        if rejoined is not None and r is not None and r.generation == gen and ev.member_id in r.synced:
            # its rejoin was answered with the generation it had synced already: nothing new for the round
            r.synced[ev.member_id] = ev.assignment
            m.sync_generation = gen
            m.assignment = ev.assignment
            return
        if r is not None and r.generation is not None and gen > r.generation:
            r = self._complete_before_next(r, r.last_sync_ms or r.formed_ms, out)
        if r is None:
            r = self._ensure_rebalance(None)
        if rejoined is not None and not any(c["cause"] != C.UNKNOWN for c in r.causes):
            # a rejoin that belonged to no round was answered with a new generation, and nothing else seen
            # started this round: the rejoin is what we know of its cause
            at, cause = rejoined
            r.trigger(at)
            if cause == C.STATIC_MEMBER_REPLACED:
                why = f"group instance id {m.group_instance_id} rejoined and the coordinator rebalanced"
            else:
                why = "the member rejoined and the coordinator rebalanced"
            r.add_cause(cause, m.describe(), why)
        if r.generation is None:
            r.generation = gen
        r.protocol = ev.protocol or r.protocol
        r.leader = ev.leader or r.leader
        r.synced[ev.member_id] = ev.assignment
        if r.formed_ms is None:
            r.formed_ms = ev.ts
        if r.last_sync_ms is None or ev.ts > r.last_sync_ms:
            r.last_sync_ms = ev.ts
        m.sync_generation = gen
        m.assignment = ev.assignment
        self.state = COMPLETING
        self._maybe_complete(out)

    def _on_heartbeat(self, ev: Heartbeat, out: list) -> None:
        self.client_feed = True
        self.membership_known = True
        m = self._live_member(ev)
        if m is None:
            return
        first = not m.hb_tracked
        m.hb_tracked = True
        m.session_alive(ev.ts)
        if first:
            self._lower_timer(m)
        err = ev.error
        if err is None:
            r = self.rebalance
            if r is not None and r.generation is not None and ev.generation == r.generation \
                    and ev.member_id not in r.synced:
                r.synced[ev.member_id] = None
                self._maybe_complete(out)
            elif m.sync_generation is None and ev.generation >= 0:
                m.sync_generation = ev.generation
        elif err == "REBALANCE_IN_PROGRESS":
            if self.rebalance is None:
                self._trigger(C.UNKNOWN, ev.ts, out, reason="heartbeat answered REBALANCE_IN_PROGRESS")
        elif err == "UNKNOWN_MEMBER_ID":
            self._remove_member(ev.member_id, ev.ts)
            self._trigger(C.UNKNOWN, ev.ts, out, who=m.describe(),
                          reason="heartbeat answered UNKNOWN_MEMBER_ID: the coordinator had removed the member")
        elif err == "FENCED_INSTANCE_ID":
            self._remove_member(ev.member_id, ev.ts)
            self._count("fenced_members")
        elif err in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"):
            self.coordinator_change_ms = ev.ts

    def _on_poll(self, ev: Poll, out: list) -> None:
        m = self._live_member(ev)
        if m is None:
            return
        first = not m.poll_tracked
        m.poll_tracked = True
        m.polled(ev.ts)
        if first:
            self._lower_timer(m)

    def _on_leave(self, ev: Leave, out: list) -> None:
        self.client_feed = True
        self.membership_known = True
        cause = C.classify_reason(ev.reason, default=C.MEMBER_LEFT)
        if cause in (C.MEMBER_JOINED, C.UNKNOWN):
            cause = C.MEMBER_LEFT
        m = self.members.get(ev.member_id)
        if m is None:
            if ev.member_id in self.removed:
                return  # already removed (e.g. our poll timer fired before its leave arrived)
            who = {"member_id": ev.member_id}
            if ev.client_id:
                who["client_id"] = ev.client_id
            if ev.host:
                who["host"] = ev.host
            self._trigger(cause, ev.ts, out, who=who, reason=ev.reason)
            return
        m.update_identity(ev)
        if cause == C.POLL_TIMEOUT:
            deadline = m.poll_deadline() or ev.ts
            self._timeout(m, "poll", min(deadline, ev.ts), ev.ts, out, reason=ev.reason)
            self._recompute_timer()
            return
        self._remove_member(ev.member_id, ev.ts)
        self._recompute_timer()
        self._trigger(cause, ev.ts, out, who=m.describe(), reason=ev.reason)

    def _on_commit(self, ev: Commit, out: list) -> None:
        out.append({"kind": "offsets_committed", "group": self.group, "ts": ev.ts,
                    "member_id": ev.member_id or None, "offsets": [list(o) for o in ev.offsets]})

    def _on_revoked(self, ev, out: list) -> None:
        m = self.members.get(ev.member_id)
        if m is not None:
            m.polled(ev.ts)

    # ------------------------------------------------------------------------------------------
    # coordinator-side events
    # ------------------------------------------------------------------------------------------
    def _on_rebalance_started(self, ev: RebalanceStarted, out: list) -> None:
        self.coordinator_feed = True
        if self.generation is None and ev.generation >= 0:
            self.generation = ev.generation
        cause = C.classify_reason(ev.reason)
        who = None
        if ev.member_id:
            m = self.members.get(ev.member_id)
            who = m.describe() if m is not None else {"member_id": ev.member_id}
        self._trigger(cause, ev.ts, out, who=who, reason=ev.reason)

    def _on_member_removed(self, ev: MemberRemoved, out: list) -> None:
        self.coordinator_feed = True
        cause = C.normalise_cause(ev.cause)
        if cause == C.STATIC_MEMBER_REPLACED and self.rebalance is None and self.state == STABLE \
                and not self.client_feed:
            # A static member rejoined a Stable group under a new member id: the coordinator hands it the old
            # assignment without a rebalance (its log says so on the next line) and does not log the new id.
            self._count("static_replacements")
            return
        m = self.members.get(ev.member_id)
        if m is None:
            if ev.member_id in self.removed:
                return
            m = Member(ev.member_id)
            m.update_identity(ev)
        else:
            m.update_identity(ev)
        if cause == C.SESSION_TIMEOUT and m.member_id in self.members:
            deadline = m.session_deadline() or ev.ts
            self._timeout(m, "session", min(deadline, ev.ts), ev.ts, out, trigger=False, reason=ev.reason)
        elif cause == C.POLL_TIMEOUT and m.member_id in self.members:
            deadline = m.poll_deadline() or ev.ts
            self._timeout(m, "poll", min(deadline, ev.ts), ev.ts, out, trigger=False, reason=ev.reason)
        else:
            self._remove_member(ev.member_id, ev.ts)
        self._recompute_timer()
        self._trigger(cause, ev.ts, out, who=m.describe(), reason=ev.reason)

    def _on_generation_completed(self, ev: GenerationCompleted, out: list) -> None:
        self.coordinator_feed = True
        gen = ev.generation
        if self.generation is not None and gen <= self.generation:
            if gen < self.generation:  # the same generation twice: two log lines proving one generation
                self._count("stale_generations")
            return
        r = self.rebalance
        if r is not None and r.generation is not None and gen > r.generation:
            self._complete(r.last_sync_ms or r.formed_ms, out)
            r = None
        if r is None:
            r = self._ensure_rebalance(None)
        r.generation = gen
        r.protocol = ev.protocol or r.protocol
        r.leader = ev.leader or r.leader
        r.coordinator_confirmed = True
        if r.formed_ms is None or ev.ts < r.formed_ms:
            r.formed_ms = ev.ts
        if r.last_sync_ms is None or ev.ts > r.last_sync_ms:
            r.last_sync_ms = ev.ts
        if ev.members is not None:
            self.membership_known = True
            previous = set(self.members)
            infos = []
            for info in ev.members:
                infos.append(self._apply_member_info(info, ev.ts, gen))
            r.coordinator_members = infos
            now_ids = {i["member_id"] for i in infos}
            for mid in sorted(previous - now_ids):  # sorted: output must not depend on hash order
                if mid in self.members:
                    gone = self._remove_member(mid, ev.ts)
                    r.add_cause(C.UNKNOWN, gone.describe(), f"absent from generation {gen}")
            for mid in sorted(now_ids - previous):
                m = self.members.get(mid)
                if m is not None and mid not in r.joined:
                    r.add_cause(C.MEMBER_JOINED, m.describe())
            self._recompute_timer()
        self.state = COMPLETING
        self._maybe_complete(out)
        if self.rebalance is r and r.coordinator_confirmed and (
                (not self.client_feed and _proven_whole(r)) or (r.coordinator_members is not None and all(
                    i.get("assignment") is not None for i in r.coordinator_members))):
            self._complete(ev.ts, out)

    def _apply_member_info(self, info, ts: int, gen: int) -> dict:
        m = self.members.get(info.member_id)
        if m is None:
            m = Member(info.member_id)
            m.last_seen_ms = ts
            self.members[info.member_id] = m
            self.removed.pop(info.member_id, None)
        for key in ("group_instance_id", "client_id", "host", "rack"):
            val = getattr(info, key)
            if val is not None:
                setattr(m, key, val)
        if info.session_timeout_ms is not None:
            m.session_timeout_ms = info.session_timeout_ms
        if info.rebalance_timeout_ms is not None:
            m.rebalance_timeout_ms = info.rebalance_timeout_ms
        if info.topics is not None:
            m.topics = info.topics
        if info.owned is not None:
            m.owned = info.owned
            m.owned_generation = info.generation
        out = {"member_id": info.member_id}
        if info.assignment is not None:
            out["assignment"] = [list(tp) for tp in info.assignment]
            m.assignment = info.assignment
            m.sync_generation = gen
        return out

    def _on_group_empty(self, ev: GroupEmpty, out: list) -> None:
        self.coordinator_feed = True
        if any(m.kip848 for m in self.members.values()):
            # The KIP-848 log's `Bumped group epoch to E with metadata hash 0` reads as empty, but the hash is
            # also 0 while members are there whose topics do not exist yet. That log names every member that
            # comes and goes (joins, leaves, fencing), so with one still in, the epoch is a rebalance.
            self._count("empty_epoch_with_members")
            self._on_rebalance_started(RebalanceStarted(
                "rebalance_started", ev.ts, ev.group, generation=max(ev.generation - 1, 0),
                reason=f"group epoch bumped to {ev.generation} (no subscribed topic metadata yet)"), out)
            return
        for mid in list(self.members):
            self._remove_member(mid, ev.ts)
        if ev.generation >= 0:
            self.generation = ev.generation
        self._go_empty()

    def _on_group_deleted(self, ev: GroupDeleted, out: list) -> None:
        for mid in list(self.members):
            self._remove_member(mid, ev.ts)
        self.rebalance = None
        self.state = DEAD
        self.timer_ms = None
        self.owners.clear()
        out.append({"kind": "group_deleted", "group": self.group, "ts": ev.ts})

    def _on_coordinator_change(self, ev: CoordinatorChange, out: list) -> None:
        if ev.action == "elected":
            self.coordinator_change_ms = ev.ts
        out.append({"kind": "coordinator", "group": self.group, "ts": ev.ts, "partition": ev.partition,
                    "broker": ev.broker, "action": ev.action})

    def _on_topic_partitions(self, ev: TopicPartitions, out: list) -> None:
        subscribed = set()
        for m in self.members.values():
            if m.topics:
                subscribed.update(m.topics)
        changed = []
        for topic, count in ev.topics.items():
            before = self.partitions.get(topic)
            if before is not None and before != count and topic in subscribed:
                changed.append(f"{topic}: {before} -> {count}")
            self.partitions[topic] = count
        if changed and self.state == STABLE:
            self._trigger(C.METADATA_CHANGE, ev.ts, out, reason="partition count changed: " + ", ".join(changed))

    def _on_end_offsets(self, ev: EndOffsets, out: list) -> None:
        out.append({"kind": "end_offsets", "group": self.group, "ts": ev.ts,
                    "offsets": [list(o) for o in ev.offsets]})

    # ------------------------------------------------------------------------------------------
    # state
    # ------------------------------------------------------------------------------------------
    def to_state(self) -> dict:
        """A compact, JSON-serialisable snapshot (what the Spark job keeps in its state store)."""
        return {
            "g": self.group, "st": self.state, "gen": self.generation, "p": self.protocol, "l": self.leader,
            "m": [m.to_state() for m in self.members.values()],
            "rm": list(self.removed.items()),
            "rb": self.rebalance.to_state() if self.rebalance is not None else None,
            "o": [[t, p, k] for (t, p), k in self.owners.items()],
            "tp": self.partitions, "cf": self.coordinator_feed, "kf": self.client_feed, "mk": self.membership_known,
            "cc": self.coordinator_change_ms, "s": self.storm.to_state(), "h": list(self.history),
            "t": self.timer_ms, "c": self.clock_ms, "le": self.last_event_ms, "r": list(self.recent),
            "n": self.counters,
        }

    @classmethod
    def from_state(cls, state: dict, settings: CoreSettings | None = None) -> "GroupMonitor":
        g = cls(state["g"], settings)
        g.state = state["st"]
        g.generation = state["gen"]
        g.protocol = state["p"]
        g.leader = state["l"]
        g.members = {}
        for values in state["m"]:
            m = Member.from_state(values)
            g.members[m.member_id] = m
        g.removed = OrderedDict((k, v) for k, v in state["rm"])
        g.rebalance = Rebalance.from_state(state["rb"]) if state["rb"] is not None else None
        g.owners = {(t, p): k for t, p, k in state["o"]}
        g.partitions = dict(state["tp"])
        g.coordinator_feed = state["cf"]
        g.client_feed = state["kf"]
        g.membership_known = state.get("mk", g.client_feed)
        g.coordinator_change_ms = state["cc"]
        g.storm.load_state(state["s"])
        g.history.extend(state["h"])
        g.timer_ms = state["t"]
        g.clock_ms = state["c"]
        g.last_event_ms = state["le"]
        for fp in state["r"]:
            g._remember(fp)
        g.counters = dict(state["n"])
        g.dirty = False
        return g


_HANDLERS = {
    Join: GroupMonitor._on_join,
    Sync: GroupMonitor._on_sync,
    Heartbeat: GroupMonitor._on_heartbeat,
    Poll: GroupMonitor._on_poll,
    Leave: GroupMonitor._on_leave,
    Commit: GroupMonitor._on_commit,
    Revoked: GroupMonitor._on_revoked,
    Lost: GroupMonitor._on_revoked,
    RebalanceStarted: GroupMonitor._on_rebalance_started,
    MemberRemoved: GroupMonitor._on_member_removed,
    GenerationCompleted: GroupMonitor._on_generation_completed,
    GroupEmpty: GroupMonitor._on_group_empty,
    GroupDeleted: GroupMonitor._on_group_deleted,
    CoordinatorChange: GroupMonitor._on_coordinator_change,
    TopicPartitions: GroupMonitor._on_topic_partitions,
    EndOffsets: GroupMonitor._on_end_offsets,
}
