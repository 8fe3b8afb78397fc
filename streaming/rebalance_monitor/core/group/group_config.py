"""A group's settings as the broker holds them: what a KIP-848 member's session timeout is, and which server
assignor a KIP-848 group uses when its members name none.

Since KIP-848 the session timeout, heartbeat interval and assignor of a `consumer` group are the broker's, not the
client's: the brokers' `group.consumer.session.timeout.ms`, `group.consumer.heartbeat.interval.ms` and
`group.consumer.assignors` (the first is the default), or a group's own `consumer.session.timeout.ms` and
`consumer.heartbeat.interval.ms`. They reach the core as `group_config` events (the broker's answers to
DescribeConfigs, published by `broker_facts/`): `source` "broker" (group "", fanned out to every group) and
"group" (one group's overrides). A group's own value wins over the brokers'; where neither said, the
configuration's fallback (`core.kip848_session_timeout(s)`) applies. Each member keeps where its timeout came
from (`Member.timeout_source`): its timeouts, warnings and inferred causes say it.

The `share` family (KIP-932 share groups: `group.share.session.timeout.ms`, `group.share.heartbeat.interval.ms`,
a group's `share.session.timeout.ms`) is applied alike to share members (`is_share`), and the `streams` family
(KIP-1071: `group.streams.session.timeout.ms`, `group.streams.heartbeat.interval.ms`, a group's
`streams.session.timeout.ms`) to streams members (`is_streams`), each kept apart from the consumer family's.
"""
from __future__ import annotations

from ..events import GroupConfig, Join
from ..members import Member
from ..vocabulary import SHARE_ASSIGNOR, ConfigSource, GroupProtocol, TimeoutSource
from . import broker_view, deadlines, streams_topology
from .group_type import is_share, is_streams

FAMILY = "consumer"
SHARE = GroupProtocol.SHARE.value
STREAMS = GroupProtocol.STREAMS.value
BROKER_SOURCES = (TimeoutSource.GROUP, TimeoutSource.BROKER)
# the keys of a source's entry in `g.configs`
SESSION, HEARTBEAT, ASSIGNORS, STANDBYS = "st", "hb", "as", "sb"


def on_group_config(g, ev: GroupConfig, out: list) -> None:
    """Keep what the broker said (a `group` event replaces the group's overrides as a whole), then give every
    KIP-848 member the session timeout that now applies."""
    if ev.group_type != FAMILY:
        g.count(f"group_config_{ev.group_type}")
        if ev.group_type not in (SHARE, STREAMS):
            return
    entry = {}
    if ev.session_timeout_ms is not None:
        entry[SESSION] = ev.session_timeout_ms
    if ev.heartbeat_interval_ms is not None:
        entry[HEARTBEAT] = ev.heartbeat_interval_ms
    if ev.assignors:
        entry[ASSIGNORS] = list(ev.assignors)
    if ev.num_standby_replicas is not None:
        entry[STANDBYS] = ev.num_standby_replicas
    key = _key(ev.group_type, ConfigSource.GROUP if ev.source == ConfigSource.GROUP else ConfigSource.BROKER)
    if g.configs.get(key) == entry:
        return
    g.configs[key] = entry
    if ev.group_type == STREAMS:
        streams_topology.note_configured_standbys(g, streams_standbys(g))
    changed = False
    for m in g.members.values():
        if m.kip848 and family_of(m) == ev.group_type:
            changed = apply_session(g, m) or changed
    if changed:
        deadlines.recompute(g)


def streams_standbys(g) -> tuple[int, str] | None:
    """(num.standby.replicas, "group" or "broker") as the broker's settings say it for this streams group, or None."""
    for source in (ConfigSource.GROUP, ConfigSource.BROKER):
        n = (g.configs.get(_key(STREAMS, source)) or {}).get(STANDBYS)
        if n is not None:
            return n, source.value
    return None


def _key(family: str, source: str) -> str:
    """The key of `g.configs` for a family's settings from `source` (the consumer family's: the source alone)."""
    return source if family == FAMILY else f"{family}.{source}"


def family_of(m: Member) -> str:
    """The family of broker settings KIP-848-style member `m` takes: streams, share or consumer."""
    return STREAMS if is_streams(m) else SHARE if is_share(m) else FAMILY


def take_streams(m: Member, ev: Join) -> None:
    """A streams member's join (`group_protocol` streams): keep its process, topology epoch and client tags
    (its tasks, which its syncs give, stay). Before `apply_session`: the member's family depends on it."""
    if ev.group_protocol != STREAMS:
        return
    state = dict(m.streams or {})
    for key in ("process_id", "topology_epoch", "client_tags"):
        value = getattr(ev, key)
        if value is not None or key not in state:
            state[key] = dict(value) if isinstance(value, dict) else value
    m.streams = state


def kip848_session(g, family: str = FAMILY) -> tuple[int, str]:
    """(the session timeout the coordinator applies to the group's KIP-848 members, or of `family` `share` or
    `streams` its members of that family, where it came from)."""
    for key, source in ((ConfigSource.GROUP, TimeoutSource.GROUP), (ConfigSource.BROKER, TimeoutSource.BROKER)):
        ms = (g.configs.get(_key(family, key)) or {}).get(SESSION)
        if ms is not None:
            return ms, source
    return g.settings.kip848_session_ms(g.group), TimeoutSource.CONFIG


def member_session(g, m: Member) -> tuple[int, str]:
    """`kip848_session` of KIP-848 (share, streams) member `m`'s family."""
    return kip848_session(g, family_of(m))


def heartbeat_interval(g, family: str = FAMILY) -> int | None:
    """The heartbeat interval the coordinator gives the group's KIP-848 (or share) members, when the broker said."""
    for key in (ConfigSource.GROUP, ConfigSource.BROKER):
        ms = (g.configs.get(_key(family, key)) or {}).get(HEARTBEAT)
        if ms is not None:
            return ms
    return None


def default_assignor(g) -> str | None:
    """The server assignor the brokers give a KIP-848 group whose members name none: the first of their
    `group.consumer.assignors`; None when the broker did not say."""
    names = (g.configs.get(ConfigSource.BROKER) or {}).get(ASSIGNORS)
    return names[0] if names else None


def broker_assignor(g, ids) -> str | None:
    """The assignor of a KIP-848 generation whose members (`ids`) name none: the brokers' default; None when
    a member is not a KIP-848 one, one names an assignor, or the broker did not say."""
    if not ids:
        return None
    for mid in ids:
        m = g.members.get(mid)
        if m is None or not m.kip848 or m.protocols:
            return None
    return broker_view.assignor(g) or default_assignor(g)


def apply_session(g, m: Member) -> bool:
    """Give KIP-848 member `m` the group's session timeout (a KIP-848 client's own session.timeout.ms is not
    used by the coordinator): the broker's word first; where the broker did not say, what the member's own
    instrumentation stated (`client`), else the configuration's fallback. True when it changed."""
    family = family_of(m)
    ms, source = member_session(g, m)
    if source == TimeoutSource.CONFIG and m.session_timeout_ms is not None \
            and m.timeout_source in (None, TimeoutSource.CLIENT):
        return False
    hb = heartbeat_interval(g, family)
    changed = m.session_timeout_ms != ms or m.timeout_source != source
    m.session_timeout_ms = ms
    m.timeout_source = source
    if hb is not None:
        m.heartbeat_interval_ms = hb
    return changed
