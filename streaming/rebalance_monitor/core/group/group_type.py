"""A group's type (classic, consumer, streams, share), from what its members say of themselves.

Every input names a member's protocol in its own way, and the core already keeps it on the member: a KIP-848
member (`kip848`), a share member (its assignor is the share groups' own, `is_share`), a streams member (its
join's `group_protocol` streams: `is_streams`). The group's type is its members': a share or streams member makes
the group one (the broker runs one type per group); any KIP-848 member makes it a consumer group (Kafka 4 turns a classic group
into a consumer group when the first KIP-848 member joins, and the classic members stay until they rejoin); members
that are none of these make it classic. A group with no member keeps the type it had, or takes the broker's word
(a `group_described` event) when it never had one. The records that describe the whole group carry it
(`group_status`, `generation`), and the exporter labels the group's series with it.
"""
from __future__ import annotations

from ..members import Member
from ..vocabulary import SHARE_ASSIGNOR, GroupType

_KNOWN = frozenset(t.value for t in GroupType if t != GroupType.UNKNOWN)


def is_share(m: Member) -> bool:
    """A member of a share group (KIP-932): a broker-assigned member whose assignor is the share groups' own."""
    return m.kip848 and tuple(m.protocols or ()) == (SHARE_ASSIGNOR,)


def is_streams(m: Member) -> bool:
    """A member of a streams group (KIP-1071): one whose join said so (its tasks and process are kept)."""
    return m.kip848 and m.streams is not None


def member_type(m: Member) -> GroupType:
    """The type of the group `m` belongs to, as `m` alone tells it."""
    if is_streams(m):
        return GroupType.STREAMS
    if is_share(m):
        return GroupType.SHARE
    return GroupType.CONSUMER if m.kip848 else GroupType.CLASSIC


def current(g) -> str:
    """The group's type now; remembered on the group (`g.group_type`) so that an empty group keeps it."""
    types = {member_type(m) for m in g.members.values()}
    for t in (GroupType.SHARE, GroupType.STREAMS, GroupType.CONSUMER, GroupType.CLASSIC):
        if t in types:
            g.group_type = t.value
            break
    return g.group_type or GroupType.UNKNOWN.value


def described(g, group_type: str | None) -> None:
    """The broker described the group as `group_type`: taken while no member has said otherwise."""
    if group_type in _KNOWN and not g.members:
        g.group_type = group_type
