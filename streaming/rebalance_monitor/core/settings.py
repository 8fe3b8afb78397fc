"""Settings of the pure core. The configuration layer (rebalance_monitor.config) builds this from the
`storm.*`, `core.*` and `ordering.*` keys of the config file."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CoreSettings:
    # storm: a group is in a storm while at least `storm_min_rebalances` generations completed inside the
    # trailing `storm_window_ms`.
    storm_window_ms: int = 10 * 60 * 1000
    storm_min_rebalances: int = 4
    # How long to wait, after the first evidence that a generation formed, for the assignments of the
    # remaining members before the generation record is emitted with what is known.
    settle_ms: int = 5_000
    # Generation summaries kept per group (the latest is always kept; older ones only feed history output).
    history_generations: int = 8
    # Members removed from a group are forgotten; this many recently removed ids are remembered so that a
    # straggling event from a removed member is recognised rather than taken for a new member.
    removed_members_kept: int = 32
    # A group with no event for this long is dropped from state entirely (its timers included).
    group_idle_ttl_ms: int = 7 * 24 * 3600 * 1000
    # Caps: members tracked per group, partitions tracked per group (bounded state under hostile input).
    max_members_per_group: int = 10_000
    max_partitions_per_group: int = 100_000
    # Exact duplicate events inside this many recent events per group are ignored (and counted).
    dedupe_window: int = 64
    # Compute expected assignments (the assignors) for each generation.
    expected_assignment: bool = True
    # Largest group (members x partitions) for which the expected assignment is computed.
    expected_assignment_max_work: int = 50_000_000
    # offsets.topic.num.partitions of the cluster: where each group's coordinator lives.
    offsets_partitions: int = 50
    # The job reads `__consumer_offsets` as well: a classic generation the coordinator's log proved waits (up to
    # `settle_ms`) for that generation's member list there, so that its record carries the union of what both
    # inputs know (the log's reasons; the protocol, assignments, client ids, hosts and timeouts of the list).
    member_list_input: bool = False
    # The brokers' Apache Kafka release ("4.0.0"), None when unknown: the server (KIP-848) assignors' expected
    # assignments follow its rules (assignors.server_rules_release; unknown: the newest).
    broker_release: str | None = None
    # KIP-848 groups: the session timeout is the group's, not in their records (`__consumer_offsets`): the brokers'
    # group.consumer.session.timeout.ms (Kafka's default 45 s), or a group's own consumer.session.timeout.ms (a
    # dynamic group config, kept in the cluster's metadata log): ((group, ms), ...). Inferred causes read it.
    kip848_session_timeout_ms: int = 45_000
    kip848_session_timeouts: tuple = ()
    # Early warning: a member silent for this percentage of its session timeout (no heartbeat) or of its
    # max.poll.interval.ms (no poll) is reported at risk, once per silence (a `member_at_risk` record); 0: never.
    early_warning_pct: int = 50

    def kip848_session_ms(self, group: str) -> int:
        """The session timeout of KIP-848 group `group`, as its coordinator applies it."""
        for name, ms in self.kip848_session_timeouts:
            if name == group:
                return ms
        return self.kip848_session_timeout_ms
