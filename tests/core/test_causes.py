"""Every cause-attribution rule of core/causes.py, from one table: a row per case, with the rule, its inputs and
what it decides (Burrow's evaluator tests are the model). Scenario tests show the rules at work in the state
machine; this table shows each rule alone."""
from __future__ import annotations

import pytest

from rebalance_monitor.core import causes as C
from rebalance_monitor.core.causes import Found

A = {"member_id": "a", "client_id": "ca", "host": "/h1"}
TEN_SECONDS = 10_000

ROWS = [
    # --- merging: one entry per cause and member; a reason fills in; placeholders go ------------------------
    ("first cause", C.add_cause, dict(causes=[], cause="member_joined", who=A, reason="hello"),
     [{"cause": "member_joined", **A, "reason": "hello"}]),
    ("same cause, same member: kept once, reason filled in", C.add_cause,
     dict(causes=[{"cause": "member_left", "member_id": "a"}], cause="member_left", who={"member_id": "a"},
          reason="bye"), [{"cause": "member_left", "member_id": "a", "reason": "bye"}]),
    ("a member named later replaces the unnamed entry of its client", C.add_cause,
     dict(causes=[{"cause": "member_joined", "client_id": "ca", "reason": "r"}], cause="member_joined", who=A,
          reason=None), [{"cause": "member_joined", **A, "reason": "r"}]),
    ("an unnamed entry of another client stays, the member is added", C.add_cause,
     dict(causes=[{"cause": "member_joined", "client_id": "cb"}], cause="member_joined", who=A, reason=None),
     [{"cause": "member_joined", "client_id": "cb"}, {"cause": "member_joined", **A}]),
    ("an unnamed cause merges into a named one", C.add_cause,
     dict(causes=[{"cause": "member_joined", **A}], cause="member_joined", who=None, reason=None),
     [{"cause": "member_joined", **A}]),
    ("a second member with the same cause is added", C.add_cause,
     dict(causes=[{"cause": "member_left", "member_id": "a"}], cause="member_left", who={"member_id": "b"},
          reason=None), [{"cause": "member_left", "member_id": "a"}, {"cause": "member_left", "member_id": "b"}]),
    ("reasons are cut to 300 characters", C.add_cause, dict(causes=[], cause="unknown", who=None, reason="x" * 400),
     [{"cause": "unknown", "reason": "x" * 300}]),
    ("unknown placeholders go when a concrete cause is known", C.final_causes,
     dict(causes=[{"cause": "unknown", "reason": "r"}, {"cause": "member_left"}]), [{"cause": "member_left"}]),
    ("only unknowns: the first one", C.final_causes,
     dict(causes=[{"cause": "unknown", "reason": "1"}, {"cause": "unknown", "reason": "2"}]),
     [{"cause": "unknown", "reason": "1"}]),
    ("nothing known", C.final_causes, dict(causes=[]), [{"cause": "unknown"}]),
    # --- reason texts --------------------------------------------------------------------------------------
    ("Java client's poll-interval leave", C.classify_reason,
     dict(text="consumer poll timeout has expired. This means the time between subsequent calls to poll() was "
               "longer than the configured max.poll.interval.ms"), "poll_timeout"),
    ("coordinator's removal after a missed heartbeat", C.classify_reason,
     dict(text="removing member x on heartbeat expiration"), "session_timeout"),
    ("the first pattern wins", C.classify_reason, dict(text="leader rejoined: cached metadata has changed"),
     "leader_rejoin"),
    ("nothing matches", C.classify_reason, dict(text="who knows"), "unknown"),
    ("nothing matches, a default", C.classify_reason, dict(text="who knows", default=None), None),
    ("no text", C.classify_reason, dict(text=None, default="member_left"), "member_left"),
    ("a cause of the vocabulary", C.normalise_cause, dict(cause="admin_removal"), "admin_removal"),
    ("a cause outside it", C.normalise_cause, dict(cause="weird"), "unknown"),
    # --- a new member id joins -----------------------------------------------------------------------------
    ("a new member", C.cause_of_new_member, dict(static_twin=False, answers_id_less_join=False),
     Found("member_joined")),
    ("the answer to an id-less join: counted already", C.cause_of_new_member,
     dict(static_twin=False, answers_id_less_join=True), None),
    ("a static member's instance under a new id", C.cause_of_new_member,
     dict(static_twin=True, answers_id_less_join=False, instance_id="i-1"),
     Found("static_member_replaced", "group instance id i-1 rejoined with a new member id")),
    ("static restart into a Stable group, same topics: no rebalance", C.static_restart_is_silent,
     dict(rebalancing=False, stable=True, old_topics=("t", "u"), new_topics=("u", "t")), True),
    ("static restart with other topics", C.static_restart_is_silent,
     dict(rebalancing=False, stable=True, old_topics=("t",), new_topics=("t", "u")), False),
    ("static restart while rebalancing", C.static_restart_is_silent,
     dict(rebalancing=True, stable=True, old_topics=("t",), new_topics=("t",)), False),
    ("static restart into a group not Stable", C.static_restart_is_silent,
     dict(rebalancing=False, stable=False, old_topics=("t",), new_topics=("t",)), False),
    ("static restart of a member whose topics we never saw", C.static_restart_is_silent,
     dict(rebalancing=False, stable=True, old_topics=None, new_topics=("t",)), False),
    # --- a live member joins again: the precedence chain -----------------------------------------------------
    ("subscription changed", C.cause_of_rejoin,
     dict(subscription_changed=True, reason="leader rejoin", is_leader=True, joins_open_round=False),
     "subscription_change"),
    ("reason names a metadata change, even from the leader", C.cause_of_rejoin,
     dict(subscription_changed=False, reason="cached metadata has changed", is_leader=True,
          joins_open_round=False), "metadata_change"),
    ("reason names a coordinator change", C.cause_of_rejoin,
     dict(subscription_changed=False, reason="coordinator moved", is_leader=False, joins_open_round=False),
     "coordinator_change"),
    ("the leader rejoins", C.cause_of_rejoin,
     dict(subscription_changed=False, reason="need to revoke partitions", is_leader=True,
          joins_open_round=False), "leader_rejoin"),
    ("reason names another cause", C.cause_of_rejoin,
     dict(subscription_changed=False, reason="session timeout", is_leader=False, joins_open_round=False),
     "session_timeout"),
    ("a rejoin's reason that says 'joined' is no new member", C.cause_of_rejoin,
     dict(subscription_changed=False, reason="Adding new member", is_leader=False, joins_open_round=False),
     "unknown"),
    ("no reason, not the leader", C.cause_of_rejoin,
     dict(subscription_changed=False, reason=None, is_leader=False, joins_open_round=False), "unknown"),
    ("into a round collecting joins: takes part", C.cause_of_rejoin,
     dict(subscription_changed=False, reason="coordinator moved", is_leader=True, joins_open_round=True), None),
    ("into a round collecting joins, other topics", C.cause_of_rejoin,
     dict(subscription_changed=True, reason=None, is_leader=False, joins_open_round=True), "subscription_change"),
    # --- a rejoin the coordinator answers with the generation being completed --------------------------------
    ("synced, no reason, same topics and assignors: deferred", C.rejoin_is_deferred,
     dict(synced_forming_generation=True, reason=None, old_topics=("t",), new_topics=("t",),
          old_protocols=("range",), new_protocols=["range"]), True),
    ("not synced the forming generation", C.rejoin_is_deferred,
     dict(synced_forming_generation=False, reason=None, old_topics=("t",), new_topics=("t",),
          old_protocols=("range",), new_protocols=("range",)), False),
    ("with a reason", C.rejoin_is_deferred,
     dict(synced_forming_generation=True, reason="metadata changed", old_topics=("t",), new_topics=("t",),
          old_protocols=("range",), new_protocols=("range",)), False),
    ("other topics", C.rejoin_is_deferred,
     dict(synced_forming_generation=True, reason=None, old_topics=("t",), new_topics=("t", "u"),
          old_protocols=("range",), new_protocols=("range",)), False),
    ("assignors in another order", C.rejoin_is_deferred,
     dict(synced_forming_generation=True, reason=None, old_topics=("t",), new_topics=("t",),
          old_protocols=("range", "roundrobin"), new_protocols=("roundrobin", "range")), False),
    ("topics never seen", C.rejoin_is_deferred,
     dict(synced_forming_generation=True, reason=None, old_topics=None, new_topics=("t",),
          old_protocols=(), new_protocols=()), False),
    ("a deferred rejoin of the round's leader", C.cause_of_deferred_rejoin,
     dict(member_id="a", leader_of_round="a"), "leader_rejoin"),
    ("a deferred rejoin of another member", C.cause_of_deferred_rejoin,
     dict(member_id="b", leader_of_round="a"), "unknown"),
    ("a deferred rejoin, leader not known", C.cause_of_deferred_rejoin,
     dict(member_id="b", leader_of_round=None), "unknown"),
    ("static instance rejoins without an id, same topics: no trigger", C.cause_of_static_rejoin,
     dict(old_topics=("t",), new_topics=("t",), instance_id="i-1", reason=None), None),
    ("static instance rejoins with other topics", C.cause_of_static_rejoin,
     dict(old_topics=("t",), new_topics=("u",), instance_id="i-1", reason=None),
     Found("subscription_change", "group instance id i-1 rejoined with other topics")),
    ("static instance rejoins with other topics and a reason", C.cause_of_static_rejoin,
     dict(old_topics=("t",), new_topics=("u",), instance_id="i-1", reason="subscribed to u"),
     Found("subscription_change", "subscribed to u")),
    ("a rejoin answered with a new generation nothing else explains", C.cause_of_answered_rejoin,
     dict(rejoin_cause="leader_rejoin", round_causes=[{"cause": "unknown"}], instance_id=None),
     Found("leader_rejoin", "the member rejoined and the coordinator rebalanced")),
    ("a static instance's rejoin answered with a new generation", C.cause_of_answered_rejoin,
     dict(rejoin_cause="static_member_replaced", round_causes=[], instance_id="i-1"),
     Found("static_member_replaced", "group instance id i-1 rejoined and the coordinator rebalanced")),
    ("a rejoin answered with a generation something else started", C.cause_of_answered_rejoin,
     dict(rejoin_cause="unknown", round_causes=[{"cause": "member_left"}], instance_id=None), None),
    # --- heartbeat errors and leaves -----------------------------------------------------------------------
    ("REBALANCE_IN_PROGRESS: a rebalance we did not see start", C.cause_of_heartbeat_error,
     dict(error="REBALANCE_IN_PROGRESS", rebalancing=False),
     Found("unknown", "heartbeat answered REBALANCE_IN_PROGRESS")),
    ("REBALANCE_IN_PROGRESS during a rebalance we see", C.cause_of_heartbeat_error,
     dict(error="REBALANCE_IN_PROGRESS", rebalancing=True), None),
    ("UNKNOWN_MEMBER_ID: the coordinator had removed the member", C.cause_of_heartbeat_error,
     dict(error="UNKNOWN_MEMBER_ID", rebalancing=True),
     Found("unknown", "heartbeat answered UNKNOWN_MEMBER_ID: the coordinator had removed the member")),
    ("FENCED_INSTANCE_ID: no cause (the instance lives on elsewhere)", C.cause_of_heartbeat_error,
     dict(error="FENCED_INSTANCE_ID", rebalancing=False), None),
    ("ILLEGAL_GENERATION: no cause", C.cause_of_heartbeat_error,
     dict(error="ILLEGAL_GENERATION", rebalancing=False), None),
    ("NOT_COORDINATOR: the coordinator moved", C.error_means_coordinator_moved, dict(error="NOT_COORDINATOR"), True),
    ("COORDINATOR_LOAD_IN_PROGRESS: the coordinator moved", C.error_means_coordinator_moved,
     dict(error="COORDINATOR_LOAD_IN_PROGRESS"), True),
    ("REBALANCE_IN_PROGRESS: the coordinator did not move", C.error_means_coordinator_moved,
     dict(error="REBALANCE_IN_PROGRESS"), False),
    ("no error", C.error_means_coordinator_moved, dict(error=None), False),
    ("a leave without a reason", C.cause_of_leave, dict(reason=None), "member_left"),
    ("a leave closing the consumer", C.cause_of_leave, dict(reason="the consumer is being closed"), "member_left"),
    ("a leave for the poll interval", C.cause_of_leave, dict(reason="consumer poll timeout has expired."),
     "poll_timeout"),
    ("a leave's reason saying 'joined' is still a leave", C.cause_of_leave, dict(reason="member joined"),
     "member_left"),
    ("a leave's unreadable reason is still a leave", C.cause_of_leave, dict(reason="bye"), "member_left"),
    # --- the coordinator's word ----------------------------------------------------------------------------
    ("coordinator prepares a rebalance for a new member", C.cause_of_coordinator_rebalance,
     dict(reason="Adding new member x with group instance id None"), "member_joined"),
    ("coordinator prepares a rebalance, reason unknown", C.cause_of_coordinator_rebalance, dict(reason=None),
     "unknown"),
    ("a streams member initialised the group's topology", C.cause_of_coordinator_rebalance,
     dict(reason="member initialized the topology with epoch 0"), "topology_change"),
    ("a streams group's assignment configurations changed", C.cause_of_coordinator_rebalance,
     dict(reason="assignment configurations changed to {num.standby.replicas=1} (seen on member m's heartbeat)"),
     "assignment_config_change"),
    ("a streams group's epoch bumped, no more said", C.cause_of_coordinator_rebalance,
     dict(reason="streams group epoch bumped to 3"), "unknown"),
    ("a removal for a cause of the vocabulary", C.cause_of_removal, dict(reported="session_timeout"),
     "session_timeout"),
    ("a removal for a cause outside it", C.cause_of_removal, dict(reported="weird"), "unknown"),
    ("broker log: a static member replaced in a Stable group, no rebalance", C.removal_is_silent_static_restart,
     dict(cause="static_member_replaced", rebalancing=False, stable=True, client_feed=False), True),
    ("the same with the clients' events: they show what happened", C.removal_is_silent_static_restart,
     dict(cause="static_member_replaced", rebalancing=False, stable=True, client_feed=True), False),
    ("a static member replaced during a rebalance", C.removal_is_silent_static_restart,
     dict(cause="static_member_replaced", rebalancing=True, stable=False, client_feed=False), False),
    ("another removal", C.removal_is_silent_static_restart,
     dict(cause="member_left", rebalancing=False, stable=True, client_feed=False), False),
    ("a member list: dropped members, then new ones not seen joining, each sorted", C.causes_of_member_list,
     dict(previous={"b", "a", "c"}, listed={"c", "e", "d", "f"}, joined={"f": 1}, generation=7),
     [("a", "unknown", "absent from generation 7"), ("b", "unknown", "absent from generation 7"),
      ("d", "member_joined", None), ("e", "member_joined", None)]),
    ("a member list as expected", C.causes_of_member_list,
     dict(previous={"a"}, listed={"a", "b"}, joined={"b"}, generation=2), []),
    # --- the group's own view: timeouts, missing rejoins, partition counts, the coordinator window ----------
    ("session deadline passed", C.cause_of_timeout, dict(kind="session", limit_ms=TEN_SECONDS),
     Found("session_timeout", "no heartbeat for 10000 ms")),
    ("poll deadline passed", C.cause_of_timeout, dict(kind="poll", limit_ms=300_000),
     Found("poll_timeout", "no poll for 300000 ms")),
    ("session timeout the coordinator reported", C.cause_of_timeout,
     dict(kind="session", limit_ms=None, reported="removing member on heartbeat expiration"),
     Found("session_timeout", "removing member on heartbeat expiration")),
    ("poll timeout reported with an empty reason", C.cause_of_timeout,
     dict(kind="poll", limit_ms=300_000, reported=""), Found("poll_timeout", "")),
    ("an absent member whose session deadline had passed", C.timeout_of_absent_member,
     dict(session_deadline_ms=9000, poll_deadline_ms=5000, at_ms=9000, resolution_ms=0), "session"),
    ("an absent member whose poll deadline alone had passed", C.timeout_of_absent_member,
     dict(session_deadline_ms=12_000, poll_deadline_ms=8000, at_ms=9000, resolution_ms=0), "poll"),
    ("an absent member within its deadlines", C.timeout_of_absent_member,
     dict(session_deadline_ms=9500, poll_deadline_ms=None, at_ms=9000, resolution_ms=0), None),
    ("a member known by whole-second snapshots: its deadline may be a second earlier", C.timeout_of_absent_member,
     dict(session_deadline_ms=9500, poll_deadline_ms=None, at_ms=9000, resolution_ms=1000), "session"),
    ("an absent member with no deadline tracked", C.timeout_of_absent_member,
     dict(session_deadline_ms=None, poll_deadline_ms=None, at_ms=9000, resolution_ms=1000), None),
    ("a member of generation 3 missing from generation 4", C.cause_of_missing_rejoin,
     dict(synced_generation=3, generation=4, kip848=False),
     Found("join_timeout", "did not rejoin before the rebalance timeout")),
    ("a member that synced this generation already", C.cause_of_missing_rejoin,
     dict(synced_generation=4, generation=4, kip848=False), None),
    ("a member that never synced", C.cause_of_missing_rejoin, dict(synced_generation=None, generation=4, kip848=False),
     None),
    ("a KIP-848 member never rejoins", C.cause_of_missing_rejoin, dict(synced_generation=3, generation=4, kip848=True),
     None),
    ("partitions added to a subscribed topic of a Stable group", C.cause_of_partition_counts,
     dict(known={"t": 4, "u": 2, "v": 1}, counts={"u": 3, "t": 6, "v": 5, "w": 9}, subscribed={"t", "u", "w"},
          stable=True), Found("metadata_change", "partition count changed: u: 2 -> 3, t: 4 -> 6")),
    ("the same while rebalancing", C.cause_of_partition_counts,
     dict(known={"t": 4}, counts={"t": 6}, subscribed={"t"}, stable=False), None),
    ("a topic nobody subscribes to", C.cause_of_partition_counts,
     dict(known={"t": 4}, counts={"t": 6}, subscribed={"u"}, stable=True), None),
    ("a first count is no change", C.cause_of_partition_counts,
     dict(known={}, counts={"t": 6}, subscribed={"t"}, stable=True), None),
    ("the same count", C.cause_of_partition_counts,
     dict(known={"t": 6}, counts={"t": 6}, subscribed={"t"}, stable=True), None),
    ("a rebalance as the coordinator moves", C.coordinator_moved_recently, dict(moved_ms=50_000, at_ms=50_000), True),
    ("a rebalance a minute after", C.coordinator_moved_recently, dict(moved_ms=50_000, at_ms=110_000), True),
    ("a rebalance a minute and a millisecond after", C.coordinator_moved_recently,
     dict(moved_ms=50_000, at_ms=110_001), False),
    ("a rebalance before the move", C.coordinator_moved_recently, dict(moved_ms=50_000, at_ms=49_999), False),
    ("no move seen", C.coordinator_moved_recently, dict(moved_ms=None, at_ms=50_000), False),
    ("a rebalance whose start is unknown", C.coordinator_moved_recently, dict(moved_ms=50_000, at_ms=None), False),
]


@pytest.mark.parametrize("case, rule, inputs, expected", ROWS, ids=[row[0] for row in ROWS])
def test_rule(case, rule, inputs, expected):
    assert rule(**inputs) == expected


def test_every_rule_has_a_row():
    assert {rule.__name__ for rule in C.RULES} == {row[1].__name__ for row in ROWS}


@pytest.mark.parametrize("last_commit, gone, session, rebalance, cause", [
    (None, 10_000, 10_000, 300_000, C.UNKNOWN),            # never committed: cannot tell
    (9_000, 10_000, 10_000, 300_000, C.MEMBER_LEFT),       # committed until the rebalance
    (0, 12_000, 10_000, 300_000, C.SESSION_TIMEOUT),       # commits stopped a session timeout before
    (0, 8_500, 10_000, 300_000, C.SESSION_TIMEOUT),        # ... about one (80%)
    (0, 7_000, 10_000, 300_000, C.UNKNOWN),                # in between: neither
    (0, 290_000, 10_000, 300_000, C.POLL_TIMEOUT),         # about max.poll.interval.ms, well above the session
    (0, 12_000, 10_000, 12_000, C.SESSION_TIMEOUT),        # poll interval close to the session: a session timeout
    (0, 4_948, 10_000, 5_000, C.POLL_TIMEOUT),             # past a poll interval shorter than the session, short of it
    (0, 3_900, 10_000, 5_000, C.MEMBER_LEFT),              # short of 80% of that poll interval: within half a session
    (0, 9_000, 10_000, 5_000, C.SESSION_TIMEOUT),          # about the session: it crashed (or hung)
    (9_000, 10_000, None, None, C.UNKNOWN),                # timeouts unknown
])
def test_cause_of_departure(last_commit, gone, session, rebalance, cause):
    found = C.cause_of_departure(last_commit, gone, session, rebalance, generation=4)
    assert found.cause == cause
    if cause != C.UNKNOWN:
        assert found.reason.startswith("inferred: ") and "generation 4" in found.reason
