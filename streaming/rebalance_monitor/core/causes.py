"""Why a rebalance happened: the cause vocabulary (contract section 2) and every rule that picks a cause.

The state machine (`core/group/`) decides *that* a rebalance starts; the rules here decide *why*. Each rule is a
small function of what the handler knows at that moment, times passed explicitly where a rule reads them (the
model is Burrow's evaluator rules), and each is one row or more of the table in `tests/core/test_causes.py`:

- merging: `add_cause` (one entry per cause and member) and `final_causes` (placeholders go);
- client feed: `cause_of_new_member`, `static_restart_is_silent`, `cause_of_rejoin`, `rejoin_is_deferred`,
  `cause_of_deferred_rejoin`, `cause_of_static_rejoin`, `cause_of_answered_rejoin`, `cause_of_heartbeat_error`,
  `error_means_coordinator_moved`, `cause_of_leave`;
- coordinator feed: `cause_of_coordinator_rebalance`, `cause_of_removal`, `removal_is_silent_static_restart`,
  `causes_of_member_list`, `cause_of_departure` (`__consumer_offsets` alone: inferred from commits);
- the group's own view: `timeout_of_absent_member`, `cause_of_timeout`, `cause_of_missing_rejoin`,
  `cause_of_partition_counts`,
  `coordinator_moved_recently`.

Free reason texts come from three places: the `reason` of a client's LeaveGroup / JoinGroup (KIP-800), the
reason a coordinator logs when it prepares a rebalance, and the `member_removed` events of the adapters.
`classify_reason` maps them onto the vocabulary; its table is ordered: the first pattern that matches wins.
"""
from __future__ import annotations

import re
from typing import Collection, Iterable, Mapping, NamedTuple

from .vocabulary import Cause, TimeoutKind

# the rules' short names for the vocabulary's causes
MEMBER_JOINED = Cause.MEMBER_JOINED
MEMBER_LEFT = Cause.MEMBER_LEFT
SESSION_TIMEOUT = Cause.SESSION_TIMEOUT
POLL_TIMEOUT = Cause.POLL_TIMEOUT
JOIN_TIMEOUT = Cause.JOIN_TIMEOUT
SYNC_TIMEOUT = Cause.SYNC_TIMEOUT
LEADER_REJOIN = Cause.LEADER_REJOIN
METADATA_CHANGE = Cause.METADATA_CHANGE
SUBSCRIPTION_CHANGE = Cause.SUBSCRIPTION_CHANGE
STATIC_MEMBER_REPLACED = Cause.STATIC_MEMBER_REPLACED
ADMIN_REMOVAL = Cause.ADMIN_REMOVAL
COORDINATOR_CHANGE = Cause.COORDINATOR_CHANGE
UNKNOWN = Cause.UNKNOWN
CAUSES = tuple(Cause)

# A rebalance that starts this long after the group's coordinator moved also has the `coordinator_change` cause.
COORDINATOR_CHANGE_WINDOW_MS = 60_000
# Heartbeat errors by which a client learns that its coordinator moved (or is loading the group).
COORDINATOR_ERRORS = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS")
REASON_MAX_CHARS = 300  # a cause entry keeps this much of a reason text

_RULES: list[tuple[re.Pattern, str]] = [(re.compile(p, re.I), c) for p, c in [
    # a streams group's (KIP-1071 coordinator lines): before the metadata and subscription rules
    (r"initiali[sz]ed the topology|topology (?:epoch )?(?:changed|updated)", Cause.TOPOLOGY_CHANGE),
    (r"assignment configurations? changed", Cause.ASSIGNMENT_CONFIG_CHANGE),
    # poll interval: the Java client's heartbeat thread leaves with this text (KIP-800 and later)
    (r"poll timeout has expired|max\.poll\.interval|poll.interval", POLL_TIMEOUT),
    (r"heartbeat expiration|session (timeout|expired|has expired)|session\.timeout|expired session", SESSION_TIMEOUT),
    (r"pending (join|member).*expir|not joining in time|join expiration|failed to rejoin|"
     r"did not rejoin|rebalance timeout|joining in time|pending member", JOIN_TIMEOUT),
    (r"sync expiration|not syncing|sync.*in time|pending sync|failed to sync", SYNC_TIMEOUT),
    (r"removed by an? admin|admin(istrator)? (request|removal)|removeMembersFromConsumerGroup|"
     r"RemoveMembersFromGroup|removing member.*admin", ADMIN_REMOVAL),
    (r"static member.*(replac|fenc)|replaced by|group instance id .* (replaced|fenced)|"
     r"instance id.*already|fenced instance", STATIC_MEMBER_REPLACED),
    (r"leader .*re-?join|re-?join.*leader|leader.*during stable|updating metadata for (the )?leader",
     LEADER_REJOIN),
    (r"cached metadata has changed|metadata (has )?changed|partition count|number of partitions|"
     r"topic(s)? (created|deleted|changed)|partitions? (added|changed)|metadata.*updated|"
     r"new partitions", METADATA_CHANGE),
    (r"subscription (has )?changed|unsubscribed|subscribed topics|updating metadata for member|"
     r"protocol.*changed|changed subscription", SUBSCRIPTION_CHANGE),
    (r"coordinator (moved|changed|failover|elected|resigned|loading|unloading)|not.coordinator|"
     r"coordinator (is )?not available|new coordinator", COORDINATOR_CHANGE),
    (r"being closed|consumer is closing|closing the consumer|leaving the group|pro-?actively leaving|"
     r"on leavegroup|leave ?group|left the group|shut ?down|shutting down", MEMBER_LEFT),
    (r"adding new (static )?member|new member.*join|member.*joined|joining group|initial join|"
     r"adding member", MEMBER_JOINED),
]]


class Found(NamedTuple):
    """A cause a rule found, with the reason text the rule gives it (None: the event's own reason, if any)."""

    cause: str
    reason: str | None = None


def classify_reason(text: str | None, default: str = UNKNOWN) -> str:
    """Map a free reason text onto the cause vocabulary; `default` when nothing matches."""
    if not text:
        return default
    for pattern, cause in _RULES:
        if pattern.search(text):
            return cause
    return default


def normalise_cause(cause: str | None) -> str:
    """A cause name from the vocabulary; anything else (a typo, a newer name) becomes `unknown`."""
    return cause if cause in CAUSES else UNKNOWN


# --- merging: what a rebalance's list of causes keeps ----------------------------------------------
def add_cause(causes: list, cause: str, who: dict | None = None, reason: str | None = None) -> list:
    """Add a cause to `causes` (in place; returned) once. A cause without a member merges into the same cause
    with a member of the same client and the other way round; a reason fills in one that had none."""
    entry = {"cause": cause}
    if who:
        entry.update(who)
    if reason:
        entry["reason"] = reason[:REASON_MAX_CHARS]
    mid = entry.get("member_id")
    for i, existing in enumerate(causes):
        if existing["cause"] != cause:
            continue
        other = existing.get("member_id")
        if other == mid:
            if reason and "reason" not in existing:
                existing["reason"] = entry["reason"]
            return causes
        if other is None and mid is not None and _same_client(existing, entry):
            if "reason" in existing and "reason" not in entry:
                entry["reason"] = existing["reason"]
            causes[i] = entry
            return causes
        if mid is None:
            return causes
    causes.append(entry)
    return causes


def final_causes(causes: list) -> list:
    """The causes a generation record names: `unknown` placeholders go when a concrete cause is known."""
    concrete = [c for c in causes if c["cause"] != UNKNOWN]
    if concrete:
        return concrete
    return causes[:1] if causes else [{"cause": UNKNOWN}]


def _same_client(a: dict, b: dict) -> bool:
    """Whether two cause entries may describe the same client (unknown fields match anything)."""
    for key in ("client_id", "host"):
        if key in a and key in b and a[key] != b[key]:
            return False
    return True


# --- client feed -----------------------------------------------------------------------------------
def cause_of_new_member(static_twin: bool, answers_id_less_join: bool, instance_id: str | None = None) -> Found | None:
    """A member id the group has not seen joins. Under the group instance id of a live member: that static
    member was replaced (the reason, unless the event gives one). The answer to a join sent without a member id:
    counted when that join came (None). Otherwise a member joined."""
    if static_twin:
        return Found(STATIC_MEMBER_REPLACED, f"group instance id {instance_id} rejoined with a new member id")
    return None if answers_id_less_join else Found(MEMBER_JOINED)


def static_restart_is_silent(rebalancing: bool, stable: bool, old_topics: Collection | None,
                             new_topics: Collection) -> bool:
    """A static member restarted under a new member id, into a Stable group with no rebalance under way and with
    the same topics: the coordinator hands it its assignment back (KIP-345). No cause: no rebalance."""
    return not rebalancing and stable and old_topics is not None and set(old_topics) == set(new_topics)


def cause_of_rejoin(subscription_changed: bool, reason: str | None, is_leader: bool,
                    joins_open_round: bool) -> str | None:
    """A live member sends a JoinGroup again. Into a round still collecting joins it only takes part (a cause
    only if its subscription changed). Otherwise, first that holds: its subscription changed; its reason names
    a metadata, subscription or coordinator change; it is the leader (a leader's rejoin rebalances the group);
    its reason names another cause; else `unknown`."""
    if joins_open_round:
        return SUBSCRIPTION_CHANGE if subscription_changed else None
    if subscription_changed:
        return SUBSCRIPTION_CHANGE
    classified = classify_reason(reason, default=None)
    if classified in (METADATA_CHANGE, SUBSCRIPTION_CHANGE, COORDINATOR_CHANGE):
        return classified
    if is_leader:
        return LEADER_REJOIN
    if classified and classified != MEMBER_JOINED:
        return classified
    return UNKNOWN


def rejoin_is_deferred(synced_forming_generation: bool, reason: str | None, old_topics: Collection | None,
                       new_topics: Collection, old_protocols: Iterable, new_protocols: Iterable) -> bool:
    """A member that already synced the generation being completed joins again without a reason, with the same
    topics and assignors (kafka-python does, when its metadata snapshot moved): the coordinator answers it
    with that generation. No cause now; see `cause_of_deferred_rejoin` should a new generation answer it."""
    return (synced_forming_generation and not reason and old_topics is not None
            and set(old_topics) == set(new_topics) and tuple(old_protocols) == tuple(new_protocols))


def cause_of_deferred_rejoin(member_id: str, leader_of_round: str | None) -> str:
    """The cause a deferred rejoin gives the round if the coordinator starts one for it: the leader's rejoin
    rebalances the group; anyone else's, for all we know, did not."""
    return LEADER_REJOIN if member_id == leader_of_round else UNKNOWN


def cause_of_static_rejoin(old_topics: Collection | None, new_topics: Collection, instance_id: str | None,
                           reason: str | None) -> Found | None:
    """A static member's new instance joins without a member id while the group holds the instance. That
    starts no rebalance (KIP-345) unless it subscribes to other topics."""
    if old_topics is None or set(old_topics) == set(new_topics):
        return None
    return Found(SUBSCRIPTION_CHANGE, reason or f"group instance id {instance_id} rejoined with other topics")


def cause_of_answered_rejoin(rejoin_cause: str, round_causes: list, instance_id: str | None) -> Found | None:
    """A rejoin that belonged to no round was answered with a new generation: when nothing else seen started
    that round (no concrete cause yet), the rejoin is what we know of its cause."""
    if any(c["cause"] != UNKNOWN for c in round_causes):
        return None
    if rejoin_cause == STATIC_MEMBER_REPLACED:
        return Found(rejoin_cause, f"group instance id {instance_id} rejoined and the coordinator rebalanced")
    return Found(rejoin_cause, "the member rejoined and the coordinator rebalanced")


def cause_of_heartbeat_error(error: str, rebalancing: bool) -> Found | None:
    """A heartbeat answered with an error. REBALANCE_IN_PROGRESS starts a rebalance we did not see start (none
    under way); UNKNOWN_MEMBER_ID means the coordinator had removed the member, for a reason it did not say."""
    if error == "REBALANCE_IN_PROGRESS":
        return None if rebalancing else Found(UNKNOWN, "heartbeat answered REBALANCE_IN_PROGRESS")
    if error == "UNKNOWN_MEMBER_ID":
        return Found(UNKNOWN, "heartbeat answered UNKNOWN_MEMBER_ID: the coordinator had removed the member")
    return None


def error_means_coordinator_moved(error: str | None) -> bool:
    """A heartbeat error that says the group's coordinator moved: see `coordinator_moved_recently`."""
    return error in COORDINATOR_ERRORS


def cause_of_leave(reason: str | None) -> str:
    """A member leaves (LeaveGroup): what its reason names, else `member_left` (a leave is no join, and a
    reason we cannot read is still a leave)."""
    cause = classify_reason(reason, default=MEMBER_LEFT)
    return MEMBER_LEFT if cause in (MEMBER_JOINED, UNKNOWN) else cause


# --- coordinator feed ------------------------------------------------------------------------------
def cause_of_coordinator_rebalance(reason: str | None) -> str:
    """The coordinator prepares a rebalance: what its logged reason names."""
    return classify_reason(reason)


def cause_of_removal(reported: str | None) -> str:
    """The coordinator removed a member, for the cause the adapter read (`unknown` if not in the vocabulary)."""
    return normalise_cause(reported)


def removal_is_silent_static_restart(cause: str, rebalancing: bool, stable: bool, client_feed: bool) -> bool:
    """Broker log lines only: a static member rejoined a Stable group under a new member id; the coordinator
    hands it the old assignment without a rebalance (its log says so on the next line). No cause."""
    return cause == STATIC_MEMBER_REPLACED and not rebalancing and stable and not client_feed


def causes_of_member_list(previous: Collection[str], listed: Collection[str], joined: Collection[str],
                          generation: int) -> list[tuple[str, str, str | None]]:
    """The coordinator listed generation `generation`'s members: (member id, cause, reason) for each member it
    dropped (absent: the coordinator removed it, for a reason it did not say), then for each it added that we
    did not see join. Sorted within each part: output must not depend on hash order."""
    out: list[tuple[str, str, str | None]] = [
        (mid, UNKNOWN, f"absent from generation {generation}") for mid in sorted(set(previous) - set(listed))]
    out += [(mid, MEMBER_JOINED, None) for mid in sorted(set(listed) - set(previous)) if mid not in joined]
    return out


# --- __consumer_offsets alone: why a member went, from its partitions' commits ----------------------------
# A member's partitions committed this close to the generation without it: it committed until the rebalance
# (a graceful leave commits on close); this share of its session timeout at least: it crashed or hung.
LEFT_MAX_GAP_SHARE = 0.5
TIMEOUT_MIN_GAP_SHARE = 0.8
INFERRED = "inferred"  # a cause entry's `cause_source` when a rule inferred it from indirect evidence


def cause_of_departure(last_commit_ms: int | None, gone_ms: int, session_timeout_ms: int | None,
                       rebalance_timeout_ms: int | None, generation: int | None = None) -> Found:
    """A member left the group and the coordinator did not say why (`__consumer_offsets` alone: it is absent
    from a generation's member list, or its KIP-848 record was deleted at `gone_ms`). The commits of the
    partitions it owned tell: commits that stopped about one session timeout before (or, with a rebalance
    timeout well above the session timeout, about one poll interval before) mean it crashed or hung (it
    stopped polling), as do commits that stopped one poll interval shorter than the session before (a KIP-848
    client leaves its group when its poll interval passes); commits until the rebalance mean it left. The reason holds the evidence. A member that
    never committed (or commits rarely) cannot be told: `unknown`."""
    where = f"generation {generation}" if generation is not None else "the group"
    if last_commit_ms is None:
        return Found(UNKNOWN, f"absent from {where}; no commit of its partitions seen, so a crash cannot be told "
                              "from a leave")
    gap = gone_ms - last_commit_ms
    evidence = f"its partitions were last committed {gap} ms before it was gone from {where}"
    if session_timeout_ms and rebalance_timeout_ms and rebalance_timeout_ms > 1.5 * session_timeout_ms \
            and gap >= TIMEOUT_MIN_GAP_SHARE * rebalance_timeout_ms:
        return Found(POLL_TIMEOUT, f"inferred: {evidence}, about its max.poll.interval.ms ({rebalance_timeout_ms} "
                                   "ms): it stopped polling")
    if session_timeout_ms and rebalance_timeout_ms and rebalance_timeout_ms < session_timeout_ms \
            and TIMEOUT_MIN_GAP_SHARE * rebalance_timeout_ms <= gap < TIMEOUT_MIN_GAP_SHARE * session_timeout_ms:
        # a poll interval shorter than the session: past the one, short of the other (its session lived on)
        return Found(POLL_TIMEOUT, f"inferred: {evidence}, about its max.poll.interval.ms ({rebalance_timeout_ms} "
                                   f"ms) and short of its session timeout ({session_timeout_ms} ms): it stopped "
                                   "polling")
    if session_timeout_ms and gap >= TIMEOUT_MIN_GAP_SHARE * session_timeout_ms:
        return Found(SESSION_TIMEOUT, f"inferred: {evidence}, at least about its session timeout "
                                      f"({session_timeout_ms} ms): it crashed or hung")
    limit = session_timeout_ms or rebalance_timeout_ms
    if limit and 0 <= gap <= LEFT_MAX_GAP_SHARE * limit:
        return Found(MEMBER_LEFT, f"inferred: {evidence}: it committed until the rebalance, so it left")
    return Found(UNKNOWN, f"{evidence}, which tells neither a leave nor a timeout"
                          + ("" if limit else " (its timeouts are unknown)"))


def cause_of_closed_departure(closed_ms: int, gone_ms: int, session_timeout_ms: int | None) -> Found:
    """A member whose Java client said it closed (its telemetry's last word) at `closed_ms` is gone from the
    coordinator's view at `gone_ms`. A client that sent a LeaveGroup is gone at once; one that closed without
    leaving (Kafka Streams' default close, a static member) stays until its session timeout expires it."""
    gap = gone_ms - closed_ms
    evidence = f"its client closed (its telemetry's last word) {gap} ms before the coordinator dropped it"
    if session_timeout_ms and gap >= TIMEOUT_MIN_GAP_SHARE * session_timeout_ms:
        return Found(SESSION_TIMEOUT, f"{evidence}, about its session timeout ({session_timeout_ms} ms): it closed "
                                      "without leaving the group (Kafka Streams' default close, or a static member)")
    if not session_timeout_ms or gap <= LEFT_MAX_GAP_SHARE * session_timeout_ms:
        return Found(MEMBER_LEFT, f"{evidence}: it left the group")
    return Found(UNKNOWN, f"{evidence}, which tells neither a leave nor a timeout")


def cause_of_silent_departure(last_heard_ms: int, gone_ms: int, session_timeout_ms: int | None,
                              generation: int | None = None) -> Found:
    """A Java member known by its client's telemetry snapshots is gone from the coordinator's view at `gone_ms`
    without a word that it closed (no terminating push: a Java client sends none while it waits for a new
    subscription, nor when it is killed). Its last sign of life was at `last_heard_ms` (its last snapshot). The
    coordinator drops a member one session timeout after its last heartbeat: a silence of about one session
    timeout means it crashed, hung or closed without leaving; one much shorter, that it left. (A silence past its
    heartbeat or poll deadline is concluded by the member's own timers first.)"""
    where = f"generation {generation}" if generation is not None else "the group"
    gap = gone_ms - last_heard_ms
    evidence = (f"its client's telemetry was last heard {gap} ms before it was gone from {where}, with no word "
                "that it closed")
    if session_timeout_ms:
        if gap >= TIMEOUT_MIN_GAP_SHARE * session_timeout_ms:
            return Found(SESSION_TIMEOUT, f"inferred: {evidence}, about its session timeout ({session_timeout_ms} "
                                          "ms): it crashed or hung")
        if 0 <= gap <= LEFT_MAX_GAP_SHARE * session_timeout_ms:
            return Found(MEMBER_LEFT, f"inferred: {evidence}: it was heard from until the rebalance, so it left")
    return Found(UNKNOWN, f"{evidence}, which tells neither a leave nor a timeout"
                          + ("" if session_timeout_ms else " (its session timeout is unknown)"))


# --- the group's own view --------------------------------------------------------------------------
def cause_of_timeout(kind: str, limit_ms: int | None, reported: str | None = None) -> Found:
    """A member's `kind` ("session" or "poll") deadline passed: the matching timeout, with the reason the
    coordinator or client reported (even an empty one), else how long the member was silent."""
    if kind == TimeoutKind.SESSION:
        return Found(SESSION_TIMEOUT, f"no heartbeat for {limit_ms} ms" if reported is None else reported)
    return Found(POLL_TIMEOUT, f"no poll for {limit_ms} ms" if reported is None else reported)


def timeout_of_absent_member(session_deadline_ms: int | None, poll_deadline_ms: int | None, at_ms: int,
                             resolution_ms: int) -> str | None:
    """The coordinator dropped a member from the generation it wrote at `at_ms`: the member's deadline that had
    passed by then (`session` first), if one had, else None. `resolution_ms` is how much earlier than its
    evidence says the member's last heartbeat or poll may have been (a member known by snapshots that count
    whole seconds: 1000; a member of its own events: 0)."""
    if session_deadline_ms is not None and session_deadline_ms - resolution_ms <= at_ms:
        return TimeoutKind.SESSION
    if poll_deadline_ms is not None and poll_deadline_ms - resolution_ms <= at_ms:
        return TimeoutKind.POLL
    return None


def cause_of_missing_rejoin(synced_generation: int | None, generation: int, kip848: bool) -> Found | None:
    """A member of an earlier generation is not in `generation`, which completed: it did not rejoin in time, and
    the coordinator dropped it (KIP-848 members never rejoin: not them)."""
    if kip848 or synced_generation is None or synced_generation >= generation:
        return None
    return Found(JOIN_TIMEOUT, "did not rejoin before the rebalance timeout")


def cause_of_partition_counts(known: Mapping[str, int], counts: Mapping[str, int], subscribed: Collection[str],
                              stable: bool) -> Found | None:
    """New partition counts of topics: a Stable group subscribed to a topic whose count changed rebalances."""
    changed = [f"{topic}: {known[topic]} -> {count}" for topic, count in counts.items()
               if known.get(topic) is not None and known[topic] != count and topic in subscribed]
    if not changed or not stable:
        return None
    return Found(METADATA_CHANGE, "partition count changed: " + ", ".join(changed))


def coordinator_moved_recently(moved_ms: int | None, at_ms: int | None) -> bool:
    """A rebalance starting at `at_ms` within COORDINATOR_CHANGE_WINDOW_MS after the group's coordinator moved
    (at `moved_ms`: a coordinator record, or a client told NOT_COORDINATOR) has the `coordinator_change` cause."""
    return moved_ms is not None and at_ms is not None and 0 <= at_ms - moved_ms <= COORDINATOR_CHANGE_WINDOW_MS


RULES = (
    add_cause, final_causes, cause_of_new_member, static_restart_is_silent, cause_of_rejoin, rejoin_is_deferred,
    cause_of_deferred_rejoin, cause_of_static_rejoin, cause_of_answered_rejoin, cause_of_heartbeat_error,
    error_means_coordinator_moved, cause_of_leave, cause_of_coordinator_rebalance, cause_of_removal,
    removal_is_silent_static_restart, causes_of_member_list, timeout_of_absent_member, cause_of_timeout,
    cause_of_missing_rejoin,
    cause_of_partition_counts, coordinator_moved_recently, classify_reason, normalise_cause,
)
