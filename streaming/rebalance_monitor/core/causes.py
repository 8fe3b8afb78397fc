"""The cause vocabulary (contract section 2) and the mapping of free reason texts onto it.

Reason texts come from three places: the `reason` of a client's LeaveGroup / JoinGroup (KIP-800), the
reason a coordinator logs when it prepares a rebalance, and the `member_removed` events of the adapters.
The table is ordered: the first pattern that matches wins.
"""
from __future__ import annotations

import re

MEMBER_JOINED = "member_joined"
MEMBER_LEFT = "member_left"
SESSION_TIMEOUT = "session_timeout"
POLL_TIMEOUT = "poll_timeout"
JOIN_TIMEOUT = "join_timeout"
SYNC_TIMEOUT = "sync_timeout"
LEADER_REJOIN = "leader_rejoin"
METADATA_CHANGE = "metadata_change"
SUBSCRIPTION_CHANGE = "subscription_change"
STATIC_MEMBER_REPLACED = "static_member_replaced"
ADMIN_REMOVAL = "admin_removal"
COORDINATOR_CHANGE = "coordinator_change"
UNKNOWN = "unknown"

CAUSES = (
    MEMBER_JOINED, MEMBER_LEFT, SESSION_TIMEOUT, POLL_TIMEOUT, JOIN_TIMEOUT, SYNC_TIMEOUT, LEADER_REJOIN,
    METADATA_CHANGE, SUBSCRIPTION_CHANGE, STATIC_MEMBER_REPLACED, ADMIN_REMOVAL, COORDINATOR_CHANGE, UNKNOWN,
)

_RULES: list[tuple[re.Pattern, str]] = [(re.compile(p, re.I), c) for p, c in [
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
