"""`GroupMonitor`: one consumer group's reconstruction, the facade of the `core.group` package.

It consumes the events of one group in event-time order and emits output records (contract section 2 plus the
extensions documented in docs/records.md). Time only moves through event timestamps and `advance_to(t)`: the
caller owns the clock (the replay driver's watermark, or the Spark job's group clock).

Ordering contract: call `process(event)` with non-decreasing timestamps (the drivers reorder within their
disorder bound first). Timers due strictly before an event's timestamp fire before the event is applied, so
the output does not depend on how the caller interleaves `advance_to` with events.

The monitor holds the group's fields and dispatches each event to its handler (`client_events`,
`coordinator_events`); duplicates are dropped by fingerprint first. `process_beat` is the heartbeat / poll
fast path, with the same effect as `process`.
"""
from __future__ import annotations

import zlib
from collections import OrderedDict, deque

from .. import records
from ..coordinator_placement import offsets_partition_for
from ..events import (
    BrokerRelease, ClientMetrics, GroupConfig, GroupDescribed, Commit, CoordinatorChange, EndOffsets, Event, GenerationCompleted, GroupDeleted, GroupEmpty,
    Heartbeat,
    Join, Leave, Lost, MemberRemoved, Poll, RebalanceStarted, Revoked, SharePartitions, StreamsTopology, Sync,
    TopicPartitions, SCHEMA_VERSION,
)
from ..members import Member
from ..settings import CoreSettings
from ..storm import StormTracker
from . import (broker_view, client_events as client, client_metrics, client_standard, codec, coordinator_events as coordinator,
               deadlines, group_config, group_type, streams_topology, timers)
from .rebalance import Rebalance
from .states import EMPTY


def _fingerprint(ev: Event) -> int:
    """A fingerprint stable across processes (it is kept in state), cheap for the frequent events."""
    if type(ev) is Heartbeat:
        text = f"h|{ev.ts}|{ev.member_id}|{ev.generation}|{ev.error}"
    else:
        text = repr(ev)
    return zlib.crc32(text.encode("utf-8", "replace"))


def commit_fingerprint(ts: int, group: str, member_id: str, instance_id, client_id, host, offsets: tuple,
                       generation) -> int:
    """`_fingerprint` of the `Commit` of these fields, as the job's columns give it (type "commit", the current
    schema version): its repr written out, without building the event."""
    text = (f"Commit(type='commit', ts={ts!r}, group={group!r}, v={SCHEMA_VERSION!r}, member_id={member_id!r}, "
            f"group_instance_id={instance_id!r}, client_id={client_id!r}, host={host!r}, offsets={offsets!r}, "
            f"generation={generation!r})")
    return zlib.crc32(text.encode("utf-8", "replace"))


class GroupMonitor:
    """Reconstructs one consumer group. See the module docstring for the ordering contract."""

    def __init__(self, group: str, settings: CoreSettings | None = None):
        self.group = group
        self.settings = settings or CoreSettings()
        s = self.settings
        self.state = EMPTY  # one of states.STATES
        self.generation: int | None = None  # the generation the group is Stable on (or last was)
        self.protocol: str | None = None  # its assignor
        self.leader: str | None = None
        self.members: dict[str, Member] = {}  # see membership.py
        self.client_standard: dict[str, dict] = {}  # clients' own standard metrics (client_standard.py)
        self.removed: OrderedDict[str, int] = OrderedDict()
        self.members_peak = 0  # the most members the coordinator held at once (expected.coordinator_order)
        self.rebalance: Rebalance | None = None  # the rebalance under way
        self.owners: dict[tuple, str] = {}  # (topic, partition) -> owner key (instance id or member id)
        self.partitions: dict[str, int] = {}  # explicit partition counts (topic_partitions events)
        self.topic_ids: dict[str, str] = {}  # topic name -> Kafka Uuid, as a share member's sync gave it
        self.coordinator_feed = False  # events from the coordinator seen
        self.client_feed = False  # events from the clients seen
        self.membership_known = False  # from client events, or coordinator member lists
        self.coordinator_change_ms: int | None = None  # when the coordinator last moved (causes window)
        self.broker_release: str | None = None  # the brokers' release as learned (broker_release events)
        self.broker_release_exact = False  # a log line named it (an ApiVersions guess does not replace it)
        self.group_type: str | None = None  # classic, consumer, streams or share, once known (group_type.py)
        self.configs: dict[str, dict] = {}  # the group's settings as the broker said them (group_config.py)
        self.streams_state: dict | None = None  # a streams group's topology and last tasks (streams_topology.py)
        self.share_initialized: dict | None = None  # a share group's initialised partitions {topic: [partitions]}
        self.storm = StormTracker(s.storm_window_ms, s.storm_min_rebalances)
        self.history: deque = deque(maxlen=max(1, s.history_generations))  # [gen, completed, duration, causes]
        self.timer_ms: int | None = None  # lower bound of the earliest member deadline (see timers.py)
        self.clock_ms = 0  # the group's event time: its latest event or advance_to
        self.last_event_ms = 0
        self.recent: deque = deque()  # fingerprints of the latest events (duplicates are dropped)
        self.recent_set: set = set()
        self.counters: dict[str, int] = {}  # what was dropped or capped, by name
        self.dirty = True  # changed since the last `status`
        self.held: dict | None = None  # a generation record waiting for its members' late syncs (held.py)
        self.warned_to = 0  # early warnings due up to this time were given (timers.warn_members)

    # --- events --------------------------------------------------------------------------------
    def process(self, ev: Event) -> list[dict]:
        """Apply one event (timestamps non-decreasing) and return the records it produced."""
        if self.try_beat(ev):  # most events: the fast path when it applies
            return []
        return self.process_full(ev)

    def try_beat(self, ev: Event) -> bool:
        """`process_beat` of an error-free heartbeat or a poll event; False (nothing changed) for any other event
        or when the fast path does not apply."""
        kind = type(ev)
        if kind is Heartbeat:
            return ev.error is None and self.process_beat(True, ev.ts, ev.member_id, ev.generation, None,
                                                          ev.group_instance_id, ev.client_id, ev.host)
        if kind is Poll:
            return self.process_beat(False, ev.ts, ev.member_id, None, None, ev.group_instance_id, ev.client_id,
                                     ev.host)
        return False

    def process_full(self, ev: Event) -> list[dict]:
        """`process` by the event's handler, without the heartbeat / poll fast path (which is held equal to it)."""
        kind = type(ev)
        out: list[dict] = []
        if kind is GroupConfig or kind is GroupDescribed or kind is StreamsTopology:
            # what the broker says of the group, not an occurrence in it: applied as the group stands, whatever its
            # time (it moves no clock and fires no timer); a group known by it alone so far is kept for its idle
            # TTL (its settings would be lost with it)
            _HANDLERS[kind](self, ev, out)
            if ev.ts > self.last_event_ms:
                self.last_event_ms = ev.ts
            self.dirty = True
            return out
        ts = ev.ts
        self._fire_due(ts, out)
        # Duplicates (an at-least-once producer's retries) are dropped by fingerprint. Error-free heartbeats
        # and polls are idempotent in the state machine, so they skip the check: most events, no effect.
        if not (kind is Poll or (kind is Heartbeat and ev.error is None)) and self._duplicate(_fingerprint(ev)):
            return out
        self._advance(ts)
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, ev, out)
        if kind is Join:  # a member says what it is when it joins (group_type.py)
            group_type.current(self)
        return out

    def process_commit(self, ts: int, member_id: str, instance_id, client_id, host, offsets: tuple,
                       generation) -> list[dict]:
        """`process` of a commit from its fields (`offsets`: a tuple of (topic, partition, offset, ...) tuples, as
        the event holds them), without the event object: the same steps as `process_full`, the same records and
        state. About a fifth of a live group's events are commits."""
        out: list[dict] = []
        self._fire_due(ts, out)
        if self._duplicate(commit_fingerprint(ts, self.group, member_id, instance_id, client_id, host, offsets,
                                              generation)):
            return out
        self._advance(ts)
        client.committed(self, ts, member_id, offsets, out)
        return out

    def _fire_due(self, ts: int, out: list) -> None:
        """Before an event at `ts`: the timers due before it (and a rebalance's, storm's or held work's checks)."""
        if (self.timer_ms is not None and self.timer_ms < ts) or self.rebalance is not None \
                or self.storm.started_ms is not None or self.held is not None:
            timers.fire(self, ts, out, inclusive=False)

    def _duplicate(self, fp) -> bool:
        """An event seen before (an at-least-once producer's retry), by its fingerprint: counted; else kept."""
        if fp in self.recent_set:
            self.count("duplicates")
            return True
        self.remember(fp)
        return False

    def _advance(self, ts: int) -> None:
        """An event at `ts` is applied: the group's clock and last event move to it, its state is to be written."""
        if ts > self.clock_ms:
            self.clock_ms = ts
        if ts > self.last_event_ms:
            self.last_event_ms = ts
        self.dirty = True

    def process_beat(self, is_heartbeat: bool, ts: int, member_id: str, generation, error, instance_id,
                     client_id, host) -> bool:
        """The common case of `process` without an event object: an error-free heartbeat (`is_heartbeat`,
        `generation`) or a poll of a member already tracked for it, with no rebalance or storm under way and
        no timer due. Same effect as `process` of the same event (it would return no record). Returns False,
        changing nothing, when the case does not apply: the caller then builds the event and calls `process`.
        Most events of a busy group take this path."""
        if self.rebalance is not None or self.storm.started_ms is not None or self.held is not None:
            return False
        if self.timer_ms is not None and self.timer_ms < ts:
            # the bound is kept low (deadlines.py): the beats since may have moved every deadline and warning
            # point later. Only a timer really due before `ts` needs the full path.
            deadlines.recompute(self)
            if self.timer_ms is not None and self.timer_ms < ts:
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

    def remember(self, fp: int) -> None:
        """Keep an event's fingerprint among the latest `settings.dedupe_window`."""
        self.recent.append(fp)
        self.recent_set.add(fp)
        if len(self.recent) > self.settings.dedupe_window:
            self.recent_set.discard(self.recent.popleft())

    def count(self, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1

    # --- time ----------------------------------------------------------------------------------
    def advance_to(self, now_ms: int) -> list[dict]:
        """Fire every timer due at or before `now_ms` (the caller's watermark)."""
        out: list[dict] = []
        timers.fire(self, now_ms, out, inclusive=True)
        if now_ms > self.clock_ms:
            self.clock_ms = now_ms
        return out

    def next_timer_ms(self) -> int | None:
        """The earliest time at which `advance_to` may produce something."""
        # (runs once or twice per run of the group: no lists)
        best = self.timer_ms
        if self.rebalance is None and self.held is None and self.storm.started_ms is None:
            return best  # only member deadlines (timers.earliest_due)
        end = self.storm.end_deadline()
        if end is not None and (best is None or end < best):
            best = end
        if self.rebalance is not None:
            settle = self.rebalance.settle_deadline(self.settings.settle_ms)
            if settle is not None and (best is None or settle < best):
                best = settle
        if self.held is not None and (best is None or self.held["until"] < best):
            best = self.held["until"]
        return best

    def is_idle(self, now_ms: int) -> bool:
        """True when the group can be dropped from state: no event for the idle TTL and nothing pending."""
        return (now_ms - self.last_event_ms > self.settings.group_idle_ttl_ms and self.rebalance is None
                and not self.storm.in_storm and self.held is None)

    # --- views ---------------------------------------------------------------------------------
    def status(self, now_ms: int | None = None) -> dict:
        """The `group_status` record: the group as it stands now. Resets the per-period heartbeat gaps."""
        now = self.clock_ms if now_ms is None else now_ms
        ratios = {}
        poll_ratios = {}
        # Per member: the heartbeat gap ratio, its longest heartbeat gap of the period (including the one still open
        # at `now`) over its session timeout, once its heartbeats are tracked; the poll gap ratio, the time since its
        # last poll over max.poll.interval.ms (the rebalance timeout; 1: about to be removed for not polling), once
        # its polls are tracked (poll events, or the last-poll clock of client_metrics snapshots).
        for m in self.members.values():
            last, limit = m.last_heartbeat_ms, m.session_timeout_ms
            if m.hb_tracked and limit and last is not None:
                ratios[m.member_id] = round(max(m.gap_max_ms, now - last) / limit, 4)
            m.gap_max_ms = 0
            last, limit = m.last_poll_ms, m.rebalance_timeout_ms
            if m.poll_tracked and limit and last is not None:
                poll_ratios[m.member_id] = round(max(0, now - last) / limit, 4)
        self.dirty = False
        return records.group_status(
            self.group, now, state=self.state, generation=self.generation, protocol=self.protocol,
            leader=self.leader, members=len(self.members), heartbeat_gap_ratios=ratios,
            in_storm=self.storm.in_storm,
            rebalancing_since_ms=self.rebalance.started_ms if self.rebalance is not None else None,
            coordinator_partition=offsets_partition_for(self.group, self.settings.offsets_partitions),
            poll_gap_ratios=poll_ratios,
            client_standard_metrics=client_standard.view(self, now) if self.client_standard else [],
            group_type=group_type.current(self), members_at_risk=timers.at_risk_now(self, now))

    def to_state(self) -> dict:
        """A compact, JSON-serialisable snapshot (what the Spark job keeps in its state store; see codec.py)."""
        return codec.group_to_state(self)

    @classmethod
    def from_state(cls, state: dict, settings: CoreSettings | None = None) -> "GroupMonitor":
        return codec.group_from_state(cls, state, settings)


_HANDLERS = {
    Join: client.on_join,
    Sync: client.on_sync,
    Heartbeat: client.on_heartbeat,
    Poll: client.on_poll,
    Leave: client.on_leave,
    ClientMetrics: client_metrics.on_client_metrics,
    Commit: client.on_commit,
    Revoked: client.on_revoked,
    Lost: client.on_revoked,
    RebalanceStarted: coordinator.on_rebalance_started,
    MemberRemoved: coordinator.on_member_removed,
    GenerationCompleted: coordinator.on_generation_completed,
    GroupEmpty: coordinator.on_group_empty,
    GroupDeleted: coordinator.on_group_deleted,
    CoordinatorChange: coordinator.on_coordinator_change,
    TopicPartitions: coordinator.on_topic_partitions,
    BrokerRelease: coordinator.on_broker_release,
    GroupConfig: group_config.on_group_config,
    GroupDescribed: broker_view.on_group_described,
    StreamsTopology: streams_topology.on_streams_topology,
    SharePartitions: coordinator.on_share_partitions,
    EndOffsets: coordinator.on_end_offsets,
}
