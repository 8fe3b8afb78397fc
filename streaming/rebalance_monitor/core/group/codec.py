"""The group's snapshot: what the Spark job keeps in its state store between micro-batches (as JSON).

One place for the whole format: the group, its members, its rebalance in progress and its storm tracker.
Compact, because every group's snapshot is written after every batch that touched it: short keys for the group,
positional lists for the rest. `STATE_VERSION` names the format; a snapshot of any other version is refused
(`ValueError`) rather than misread. Version 1 is the first format to carry the number (its snapshots without
the key are the same format); version 2 adds the members' report delay and last commit (read from version 1 as None). A change of format raises the version, and reading the older one, if a release
shipped it, goes here.

Group keys: g group, v version, st state, gen generation, p protocol, l leader, m members, rm removed
[[member id, ms]], rb rebalance (or null), o owners [[topic, partition, owner key]], tp partition counts
{topic: n}, cf coordinator feed seen, kf client feed seen, mk membership known, cc coordinator change ms,
s storm, h history, t timer ms, c clock ms, le last event ms, r recent fingerprints, n counters, hd a generation
record held for its members' late syncs (held.py; absent or null: none, as in snapshots before it), cs the clients'
standard metrics {client key: entry} (client_standard.py; absent from older snapshots: none), mp the most members
the coordinator has held at once (expected.coordinator_order; absent from older snapshots: 0), gt the group's
type once known (group_type.py; absent from older snapshots: None), ss a streams group's topology, assignment configs
and last tasks (streams_topology.py; absent from older snapshots: None).
"""
from __future__ import annotations

from collections import deque
from operator import attrgetter

from ..members import Member
from ..settings import CoreSettings
from ..storm import StormTracker
from .rebalance import Rebalance

STATE_VERSION = 5
# version 1 is version 2 without its last member fields: report_delay_ms (None: a member of its own events) and
# last_commit_ms (None: no commit of its partitions seen); version 2 is version 3 without closed_ms (None: its
# client never said it closed)
V2_MEMBER_FIELDS = ("report_delay_ms", "last_commit_ms")
V3_MEMBER_FIELDS = ("closed_ms",)
# version 3 is version 4 without these (None: the source of its session unknown, or its client's; no second host)
V4_MEMBER_FIELDS = ("timeout_source", "client_host")
# version 4 is version 5 without this (None: not a streams group's member; streams groups came with version 5)
V5_MEMBER_FIELDS = ("streams",)
_READABLE_VERSIONS = (1, 2, 3, 4, STATE_VERSION)

# the positions of a member's and a rebalance's fields in their lists
MEMBER_FIELDS = (
    "member_id", "group_instance_id", "client_id", "host", "rack", "protocols", "topics", "owned",
    "owned_generation", "session_timeout_ms", "rebalance_timeout_ms", "heartbeat_interval_ms",
    "last_heartbeat_ms", "last_poll_ms", "last_seen_ms", "gap_max_ms", "sync_generation", "assignment",
    "hb_tracked", "poll_tracked", "joined_ms", "joining_ms", "rejoin_cause", "kip848", "report_delay_ms",
    "last_commit_ms", "closed_ms", "timeout_source", "client_host", "streams",
)
_MEMBER_TUPLES = ("protocols", "topics", "owned", "assignment")  # tuples in memory, lists in JSON
_member_fields = attrgetter(*MEMBER_FIELDS)  # a member's fields, as a tuple
_TUPLES_AT = tuple(MEMBER_FIELDS.index(name) for name in _MEMBER_TUPLES)
REBALANCE_FIELDS = (
    "started_ms", "from_generation", "causes", "joined", "anonymous_joins", "synced", "generation", "protocol",
    "leader", "formed_ms", "last_sync_ms", "coordinator_members", "coordinator_confirmed", "announced",
)
STORM_FIELDS = ("completions", "started_ms", "count_in_storm", "storms", "summaries", "in_storm_summaries",
                "pattern")


def group_to_state(g) -> dict:
    fields = _member_fields
    return {
        "g": g.group, "v": STATE_VERSION, "st": g.state, "gen": g.generation, "p": g.protocol, "l": g.leader,
        "m": [list(fields(m)) for m in g.members.values()],
        "rm": list(g.removed.items()),
        "rb": rebalance_to_state(g.rebalance) if g.rebalance is not None else None,
        "o": [[t, p, k] for (t, p), k in g.owners.items()],
        "tp": g.partitions, "cf": g.coordinator_feed, "kf": g.client_feed, "mk": g.membership_known,
        "cc": g.coordinator_change_ms, "br": g.broker_release, "s": storm_to_state(g.storm), "h": list(g.history),
        "t": g.timer_ms, "c": g.clock_ms, "le": g.last_event_ms, "r": list(g.recent), "n": g.counters,
        "hd": g.held, "wt": g.warned_to,
        "cs": g.client_standard, "mp": g.members_peak, "gc": g.configs,
        "bx": g.broker_release_exact, "gt": g.group_type, "ti": g.topic_ids, "ss": g.streams_state,
        "si": g.share_initialized,
    }


def group_from_state(cls, state: dict, settings: CoreSettings | None = None):
    """A `cls` (GroupMonitor) as the snapshot `state` left it."""
    version = state.get("v", 1)
    _check_version(version, "group")
    g = cls(state["g"], settings)
    g.state = state["st"]
    g.generation = state["gen"]
    g.protocol = state["p"]
    g.leader = state["l"]
    g.members = {}
    for values in state["m"]:
        later = (V2_MEMBER_FIELDS, V3_MEMBER_FIELDS, V4_MEMBER_FIELDS, V5_MEMBER_FIELDS)[version - 1:]
        missing = sum(len(f) for f in later)
        m = member_from_state(values + [None] * missing)
        g.members[m.member_id] = m
    g.removed.update((k, v) for k, v in state["rm"])
    g.rebalance = rebalance_from_state(state["rb"]) if state["rb"] is not None else None
    g.owners = {(t, p): k for t, p, k in state["o"]}
    g.partitions = dict(state["tp"])
    g.coordinator_feed = state["cf"]
    g.client_feed = state["kf"]
    g.membership_known = state["mk"]
    g.coordinator_change_ms = state["cc"]
    g.broker_release = state.get("br")  # (snapshots before it: unknown)
    g.broker_release_exact = state.get("bx", g.broker_release is not None)  # (before it: only log lines named it)
    load_storm(g.storm, state["s"])
    g.history.extend(state["h"])
    g.timer_ms = state["t"]
    g.clock_ms = state["c"]
    g.last_event_ms = state["le"]
    _load_recent(g, state["r"])
    g.counters = dict(state["n"])
    g.held = state.get("hd")
    g.warned_to = state.get("wt", g.clock_ms)  # (snapshots before it: nothing left to warn of before its clock)
    g.client_standard = {k: dict(e) for k, e in (state.get("cs") or {}).items()}
    g.configs = dict(state.get("gc") or {})  # (snapshots before it: the broker has not said)
    g.group_type = state.get("gt")  # (snapshots before it: its members say it again)
    g.streams_state = state.get("ss")  # (snapshots before it: no topology known yet)
    g.share_initialized = state.get("si")  # (snapshots before it: the partitions held stand for them)
    g.members_peak = state.get("mp", 0)  # (snapshots before it: the members the coordinator holds now count)
    g.topic_ids = dict(state.get("ti") or {})  # (snapshots before it: learned again from the next syncs)
    g.dirty = False
    return g


def _load_recent(g, fingerprints: list) -> None:
    """`g.remember` of each fingerprint, in order: at once when they are distinct (as a monitor keeps them)."""
    window = g.settings.dedupe_window
    if len(set(fingerprints)) != len(fingerprints) or g.recent:
        for fp in fingerprints:
            g.remember(fp)
        return
    kept = fingerprints[-window:] if len(fingerprints) > window else fingerprints
    g.recent.extend(kept)
    g.recent_set.update(kept)


def _check_version(version, what: str) -> None:
    if version not in _READABLE_VERSIONS or isinstance(version, bool):
        raise ValueError(f"{what} state of version {version!r}; this build reads versions "
                         f"{', '.join(map(str, _READABLE_VERSIONS))}")


def _check_length(values: list, fields: tuple, what: str) -> None:
    if len(values) != len(fields):
        raise ValueError(f"{what} state with {len(values)} fields; version {STATE_VERSION} has {len(fields)}")


# --- member ----------------------------------------------------------------------------------------
def member_to_state(m: Member) -> list:
    return list(_member_fields(m))


def member_from_state(values: list) -> Member:
    _check_length(values, MEMBER_FIELDS, "member")
    values = list(values)
    for i in _TUPLES_AT:
        value = values[i]
        if isinstance(value, list):
            values[i] = tuple(tuple(x) if isinstance(x, list) else x for x in value)
    m = Member.__new__(Member)
    for name, value in zip(MEMBER_FIELDS, values):
        setattr(m, name, value)
    return m


# --- rebalance -------------------------------------------------------------------------------------
def rebalance_to_state(r: Rebalance) -> list:
    return [r.started_ms, r.from_generation, r.causes, r.joined, r.anonymous_joins,
            {k: (list(map(list, v)) if v is not None else None) for k, v in r.synced.items()},
            r.generation, r.protocol, r.leader, r.formed_ms, r.last_sync_ms,
            r.coordinator_members, r.coordinator_confirmed, r.announced]


def rebalance_from_state(values: list) -> Rebalance:
    _check_length(values, REBALANCE_FIELDS, "rebalance")
    r = Rebalance.__new__(Rebalance)
    (r.started_ms, r.from_generation, r.causes, r.joined, r.anonymous_joins, synced, r.generation,
     r.protocol, r.leader, r.formed_ms, r.last_sync_ms, r.coordinator_members, r.coordinator_confirmed,
     r.announced) = values
    r.synced = {k: (tuple(tuple(x) for x in v) if v is not None else None) for k, v in synced.items()}
    return r


# --- storm tracker ---------------------------------------------------------------------------------
def storm_to_state(s: StormTracker) -> list:
    return [list(s.completions), s.started_ms, s.count_in_storm, s.storms, list(s.summaries),
            s.in_storm_summaries, s.pattern]


def load_storm(s: StormTracker, values: list) -> None:
    """Load a snapshot into `s` (its window and minimum are settings, not state)."""
    _check_length(values, STORM_FIELDS, "storm")
    completions, s.started_ms, s.count_in_storm, s.storms, summaries, in_storm, s.pattern = values
    s.completions = deque(completions)
    s.summaries = deque(_summary(x) for x in summaries)
    s.in_storm_summaries = [_summary(x) for x in in_storm]


def _summary(s):
    """A storm_pattern.summarise() result back from JSON (its tuples came back as lists)."""
    if s is None:
        return None
    return {"members": s["members"], "causes": [tuple(c) for c in s["causes"]]}
