"""Small builders for scenario tests written as event lists (canonical JSON dicts)."""
from __future__ import annotations

from rebalance_monitor.core.events import Rejected, parse_event
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.settings import CoreSettings

SESSION = 10_000
POLL = 30_000


def ev(type_, ts, group="g", **fields):
    return {"v": 1, "type": type_, "ts": ts, "group": group, **fields}


def join(ts, member, topics=("t",), group="g", protocols=("range",), owned=(), session=SESSION, poll=POLL,
         **kw):
    return ev("join", ts, group, member_id=member, protocols=list(protocols), topics=list(topics),
              owned=[list(tp) for tp in owned], session_timeout_ms=session, rebalance_timeout_ms=poll,
              heartbeat_interval_ms=3000, client_id=kw.pop("client_id", f"client-{member}"),
              host=kw.pop("host", f"/10.0.0.{abs(hash(member)) % 200}"), **kw)


def sync(ts, member, gen, assignment, leader, group="g", protocol="range", **kw):
    return ev("sync", ts, group, member_id=member, generation=gen, protocol=protocol, leader=leader,
              assignment=[list(tp) for tp in assignment], **kw)


def hb(ts, member, gen, group="g", error=None):
    return ev("heartbeat", ts, group, member_id=member, generation=gen, error=error)


def poll(ts, member, group="g", records=10):
    return ev("poll", ts, group, member_id=member, records=records)


def leave(ts, member, reason="the consumer is being closed", group="g"):
    return ev("leave", ts, group, member_id=member, reason=reason)


def heartbeats(members, gen, start, end, every=3000, group="g"):
    out = []
    t = start
    while t <= end:
        for i, m in enumerate(members):
            out.append(hb(t + i, m, gen, group))
        t += every
    return out


def tps(topic, *parts):
    return [(topic, p) for p in parts]


def run(events, settings=None, disorder=2000, status=False):
    """Replay canonical event dicts through the core; return the output records."""
    recon = Reconstructor(settings or CoreSettings(), max_disorder_ms=disorder, emit_status=status)
    out = []
    for e in events:
        parsed = parse_event(e)
        assert not isinstance(parsed, Rejected), (parsed, e)
        out.extend(recon.feed(parsed))
    out.extend(recon.finish())
    return out


def kinds(records, kind):
    return [r for r in records if r["kind"] == kind]


def causes_of(gen_record):
    return sorted(c["cause"] for c in gen_record["causes"])


def stable_group(members=("a", "b"), parts=4, start=1000, group="g", protocol="range"):
    """Events of a group that forms generation 1 with `members` sharing topic t (range-like split)."""
    out = [join(start + i * 10, m, group=group, protocols=(protocol,)) for i, m in enumerate(members)]
    per = parts // len(members)
    extra = parts % len(members)
    p = 0
    for i, m in enumerate(members):
        n = per + (1 if i < extra else 0)
        out.append(sync(start + 500 + i, m, 1, tps("t", *range(p, p + n)), members[0], group, protocol))
        p += n
    return out
