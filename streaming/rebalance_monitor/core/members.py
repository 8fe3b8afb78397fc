"""What the core knows about one member of a group, and its session / poll-interval deadlines.

Members enter and leave their group through core/group/membership.py; their state is kept with their group's
(core/group/codec.py)."""
from __future__ import annotations


class Member:
    """One live member. Times are event-time milliseconds.

    The session deadline is tracked only once the member has sent a heartbeat (otherwise the source simply
    does not report heartbeats, and silence means nothing); likewise the poll deadline needs a poll.
    """

    __slots__ = (
        "member_id", "group_instance_id", "client_id", "host", "rack", "protocols", "topics", "owned",
        "owned_generation", "session_timeout_ms", "rebalance_timeout_ms", "heartbeat_interval_ms",
        "last_heartbeat_ms", "last_poll_ms", "last_seen_ms", "gap_max_ms", "sync_generation", "assignment",
        "hb_tracked", "poll_tracked", "joined_ms", "joining_ms", "rejoin_cause", "kip848", "report_delay_ms",
        "last_commit_ms", "closed_ms", "timeout_source", "client_host", "streams",
    )

    def __init__(self, member_id: str):
        self.member_id = member_id
        self.group_instance_id: str | None = None
        self.client_id: str | None = None
        self.host: str | None = None
        self.rack: str | None = None
        self.protocols: tuple = ()
        self.topics: tuple | None = None
        self.owned: tuple = ()
        self.owned_generation: int | None = None
        self.session_timeout_ms: int | None = None
        self.rebalance_timeout_ms: int | None = None
        self.heartbeat_interval_ms: int | None = None
        self.last_heartbeat_ms: int | None = None
        self.last_poll_ms: int | None = None
        self.last_seen_ms = 0
        self.gap_max_ms = 0
        self.sync_generation: int | None = None
        self.assignment: tuple | None = None
        self.hb_tracked = False
        self.poll_tracked = False
        self.joined_ms: int | None = None
        # when the member sent the JoinGroup it still waits on (None: not joining). The coordinator keeps a
        # member alive while its join (and then its sync) is pending: the session timer does not run then.
        self.joining_ms: int | None = None
        # for a join that belongs to no round under way (a rejoin answered, as a rule, with the current
        # generation): the cause to give the round if the coordinator starts one for it instead
        self.rejoin_cause: str | None = None
        self.kip848 = False  # a KIP-848 member: it never rejoins; its syncs carry its member epoch
        # how late the evidence of its liveness may arrive: None when its events are its own heartbeats and polls;
        # for a member known by periodic snapshots of its clocks (client_metrics), about their period. A deadline
        # is only concluded that long after it passed (the next snapshot may yet show a later heartbeat).
        self.report_delay_ms: int | None = None
        # the latest commit (in `__consumer_offsets`) of a partition the member owned: the evidence of
        # causes.cause_of_departure when the coordinator does not say why the member went
        self.last_commit_ms: int | None = None
        # when its Java client's telemetry said it closed (a leave with a `source`), while the coordinator still
        # lists it: it may have left the group or closed without leaving (causes.cause_of_closed_departure)
        self.closed_ms: int | None = None
        # where its session timeout came from (vocabulary.TimeoutSource): None while it has none, or one its own
        # client stated before the core knew where it came from (session_source reads it as "client")
        self.timeout_source: str | None = None
        # the address the broker saw it connect from (Kafka's ClientHost), kept beside `host` when its own client
        # named its host otherwise (a host name where the broker sees an address): one member, both names
        self.client_host: str | None = None
        # a streams group's member (KIP-1071), else None: {"process_id", "topology_epoch", "client_tags"} from its
        # join, and "tasks" ({"active", "standby", "warmup": [[subtopology id, partition], ...]}) with "tasks_epoch"
        # from its latest sync that named them
        self.streams: dict | None = None

    # --- identity -------------------------------------------------------------------------------
    def describe(self) -> dict:
        """member_id, client_id and host for a cause or a timeout record (omitting what is unknown)."""
        out = {"member_id": self.member_id}
        if self.client_id is not None:
            out["client_id"] = self.client_id
        if self.host is not None:
            out["host"] = self.host
        if self.client_host is not None and self.client_host != self.host:
            out["client_host"] = self.client_host
        return out

    def take_client_host(self, own_host: str | None) -> None:
        """What its client calls its host, where the broker's inputs named it by the address they saw."""
        if own_host is not None and own_host != self.host:
            if self.host is not None and self.client_host is None:
                self.client_host = self.host
            self.host = own_host

    def session_source(self) -> str | None:
        """Where its session timeout came from: as recorded, else its client's where it has one."""
        if self.timeout_source is not None:
            return self.timeout_source
        return "client" if self.session_timeout_ms is not None else None

    def identity(self, kind: str | None = None) -> tuple:
        """(key, value) pairs for a timeout or warning record: client id, host, instance id and, for a `kind`
        ("session" or "poll") limit, where that limit came from (a poll limit is always the client's)."""
        pairs = (("client_id", self.client_id), ("host", self.host), ("group_instance_id", self.group_instance_id))
        if kind is None:
            return pairs
        if kind == "session":
            source = self.session_source()
        else:
            source = "client" if self.rebalance_timeout_ms is not None else None
        return pairs + (("timeout_source", source),)

    @property
    def owner_key(self) -> str:
        """Who owns partitions: a static member keeps ownership across restarts under its instance id."""
        return self.group_instance_id or self.member_id

    def update_identity(self, ev) -> None:
        if ev.group_instance_id is not None:
            self.group_instance_id = ev.group_instance_id
        if ev.client_id is not None:
            self.client_id = ev.client_id
        if ev.host is not None:
            self.host = ev.host

    # --- liveness -------------------------------------------------------------------------------
    def session_alive(self, ts: int) -> None:
        """Any request from the member resets its session on the coordinator (join, sync, heartbeat)."""
        last = self.last_heartbeat_ms
        if last is not None and ts > last:
            gap = ts - last
            if gap > self.gap_max_ms:
                self.gap_max_ms = gap
        if last is None or ts > last:
            self.last_heartbeat_ms = ts
        if ts > self.last_seen_ms:
            self.last_seen_ms = ts

    def heartbeat_snapshot(self, at: int, open_gap_ms: int, ts: int) -> None:
        """A snapshot at `ts` of the client's own clock: its last heartbeat was at `at`, a gap of `open_gap_ms` open
        then. Only that open gap is a gap seen (the heartbeats between two snapshots are not shown)."""
        if self.last_heartbeat_ms is None or at > self.last_heartbeat_ms:
            self.last_heartbeat_ms = at
        if open_gap_ms > self.gap_max_ms:
            self.gap_max_ms = open_gap_ms
        if ts > self.last_seen_ms:
            self.last_seen_ms = ts

    def polled(self, ts: int) -> None:
        if self.last_poll_ms is None or ts > self.last_poll_ms:
            self.last_poll_ms = ts
        if ts > self.last_seen_ms:
            self.last_seen_ms = ts

    def join_sent(self, ts: int, rejoin_cause: str | None = None) -> None:
        """The member sent a JoinGroup: from now on it waits for the rebalance, not on its session.
        `rejoin_cause`: see the attribute (None for a join that takes part in the round under way)."""
        self.joining_ms = ts
        self.rejoin_cause = rejoin_cause
        self.session_alive(ts)

    def join_done(self, ts: int) -> None:
        """Its join round is over (it synced, or the generation it joined completed): the session timer
        runs again from `ts`."""
        if self.joining_ms is None:
            return
        self.joining_ms = None
        self.rejoin_cause = None
        if self.last_heartbeat_ms is None or ts > self.last_heartbeat_ms:
            self.last_heartbeat_ms = ts

    def session_deadline(self) -> int | None:
        if not self.hb_tracked or self.session_timeout_ms is None or self.last_heartbeat_ms is None:
            return None
        if self.joining_ms is not None:
            # Waiting in JoinGroup / SyncGroup: the coordinator ends the join phase within the rebalance
            # timeout and restarts the session timer then. A member silent for longer than both is gone.
            since = max(self.joining_ms, self.last_heartbeat_ms)
            return since + (self.rebalance_timeout_ms or 0) + self.session_timeout_ms
        return self.last_heartbeat_ms + self.session_timeout_ms

    def poll_deadline(self) -> int | None:
        if not self.poll_tracked or self.rebalance_timeout_ms is None or self.last_poll_ms is None:
            return None
        return self.last_poll_ms + self.rebalance_timeout_ms

    def next_deadline(self) -> int | None:
        s = self.session_deadline()
        p = self.poll_deadline()
        if s is None:
            return p
        if p is None:
            return s
        return s if s < p else p

    def next_due(self, warn_pct: int = 0, warned_to: int = 0) -> int | None:
        """When a deadline of the member may be concluded passed: its next deadline plus its report delay; or,
        earlier, its next early-warning point after `warned_to` (`warn_points`), plus that delay."""
        # (warn_points and next_deadline in one pass: every member's first heartbeat and poll, every recompute)
        delay = self.report_delay_ms or 0
        s = self.session_deadline()
        p = self.poll_deadline()
        d = s if p is None or (s is not None and s < p) else p
        if d is not None:
            d += delay
        if warn_pct:
            if s is not None:
                w = warn_at(s, self.session_timeout_ms, warn_pct) + delay
                if warned_to < w and (d is None or w < d):
                    d = w
            if p is not None:
                w = warn_at(p, self.rebalance_timeout_ms, warn_pct) + delay
                if warned_to < w and (d is None or w < d):
                    d = w
        return d

    def warn_points(self, pct: int) -> tuple:
        """((kind, when, deadline, limit) or None for the session, the same for the poll): when the member will
        have been silent for `pct` percent of its session timeout / max.poll.interval.ms (its deadline less the
        rest of that limit), as its deadlines stand now."""
        s = self.session_deadline()
        p = self.poll_deadline()
        st, rt = self.session_timeout_ms, self.rebalance_timeout_ms
        return (("session", warn_at(s, st, pct), s, st) if s is not None else None,
                ("poll", warn_at(p, rt, pct), p, rt) if p is not None else None)


def warn_at(deadline_ms: int, limit_ms: int, pct: int) -> int:
    """A member's early-warning point: when it will have been silent for `pct` percent of `limit_ms` (its session
    timeout or max.poll.interval.ms), `deadline_ms` being when it will have been silent for all of it."""
    return deadline_ms - limit_ms * (100 - pct) // 100
