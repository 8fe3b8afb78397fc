"""The members at risk of a group (the core's early warning, core/group/timers.py): one series per member past its
early-warning point, its value the deadline at which it will be removed, written as the catalogue's
`kafka_consumergroup_member_at_risk_deadline_*` family.

* set by a `member_at_risk` record (member id and risk: session or poll; its client id and host as labels);
* removed by the member's `member_timeout` (either risk: the core removes the member), and by a `group_status` whose
  `members_at_risk` no longer lists it (heard from again before its deadline, left, removed by the coordinator);
  a `group_status` of a core that does not say `members_at_risk` removes nothing;
* gone with the group (`group_deleted`, the idle TTL), and kept in the snapshot with the group's other gauges.

So the family holds as many series as members are at risk now, never one per member seen.
"""
from __future__ import annotations

from .catalogue import MEMBER_AT_RISK_DEADLINE
from .exposition import Family

FAMILIES = (MEMBER_AT_RISK_DEADLINE,)
_AT_RISK = Family(MEMBER_AT_RISK_DEADLINE)


def set_at_risk(s, r: dict) -> None:
    """A `member_at_risk` record: the member's series, with its deadline (epoch seconds)."""
    member, risk, deadline = r.get("member_id"), r.get("risk"), r.get("deadline_ms")
    if not isinstance(member, str) or not isinstance(risk, str) or isinstance(deadline, bool) \
            or not isinstance(deadline, (int, float)):
        return
    s.at_risk[(risk, member)] = (str(r.get("client_id") or ""), str(r.get("host") or ""), deadline / 1000.0)
    s.stale_meta = True


def drop_member(s, member_id) -> None:
    """The member timed out (of either risk): its series go."""
    gone = [k for k in s.at_risk if k[1] == member_id]
    for k in gone:
        del s.at_risk[k]
    if gone:
        s.stale_meta = True


def keep_listed(s, listed) -> None:
    """A `group_status`'s `members_at_risk` ([member id, risk] of those at risk now): the others' series go (none
    when the record does not say it)."""
    if not s.at_risk or not isinstance(listed, list):
        return
    now = {(e[1], e[0]) for e in listed if isinstance(e, (list, tuple)) and len(e) == 2}
    gone = [k for k in s.at_risk if k not in now]
    for k in gone:
        del s.at_risk[k]
    if gone:
        s.stale_meta = True


def lines(s, f: dict[str, str]) -> None:
    """The family's lines of group series `s` into ``f`` ({family name: text}), by risk then member id."""
    if s.at_risk:
        f[MEMBER_AT_RISK_DEADLINE.name] = "".join(
            _AT_RISK.line(s.label, (risk, member, *s.at_risk[(risk, member)][:2]), s.at_risk[(risk, member)][2])
            for risk, member in sorted(s.at_risk))


# ---- the snapshot (series.py) ---------------------------------------------------------------------------------
def to_state(at_risk: dict) -> list:
    return [[risk, member, client, host, deadline] for (risk, member), (client, host, deadline) in at_risk.items()]


def from_state(entries) -> dict:
    return {(str(risk), str(member)): (str(client), str(host), float(deadline))
            for risk, member, client, host, deadline in entries or ()}
