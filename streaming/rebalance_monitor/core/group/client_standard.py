"""A client's own standard metrics (KIP-714's standard consumer set: rebalance latency, rebalances, poll idle ratio),
kept per client of a group as the client reports them, for what they are: the client's account of itself.

They come in `client_metrics` events, from any client that pushes them: librdkafka (confluent-kafka) pushes only
these, with the group (and, from 2.16, once joined, its member id) but no heartbeat or poll clock, so they are never
evidence of a member's heartbeats or polls and never touch a member (`client_metrics.on_client_metrics`); Java
clients push them beside their clocks. Per client (its client instance id, or its client id when the source has none): the latest
gauges, and running totals of the sums, which clients push as the change since their previous push. A client that
sends nothing for `TTL_MS` is forgotten. `view` is what the `group_status` record carries
(`client_standard_metrics`).
"""
from __future__ import annotations

from ..events import ClientMetrics

TTL_MS = 300_000
GAUGES = ("poll_idle_ratio", "rebalance_latency_avg_ms", "rebalance_latency_max_ms", "assigned_partitions")
# event field (the change since the client's previous push) -> running total in the view
SUMS = {"rebalances": "rebalances_total", "rebalance_latency_ms": "rebalance_latency_total_ms"}
STANDARD_FIELDS = ("poll_idle_ratio", "rebalance_latency_avg_ms", "rebalance_latency_max_ms", *SUMS)


def has_standard_metrics(ev: ClientMetrics) -> bool:
    return any(getattr(ev, f) is not None for f in STANDARD_FIELDS)


def has_clocks(ev: ClientMetrics) -> bool:
    """Whether the snapshot says anything of heartbeats or polls (what makes it evidence of a member)."""
    return ev.last_heartbeat_ms_ago is not None or ev.last_poll_ms_ago is not None


def take(g, ev: ClientMetrics) -> None:
    """Keep the standard metrics of one snapshot (no-op without any)."""
    if not has_standard_metrics(ev):
        return
    key = ev.client_instance_id or ev.client_id or ""
    entry = g.client_standard.get(key)
    if entry is None:
        entry = g.client_standard[key] = {"client_id": ev.client_id, "client_instance_id": ev.client_instance_id,
                                          "host": ev.host, "source": ev.source, "ts": ev.ts}
        for total in SUMS.values():
            entry[total] = None
    entry["ts"] = max(entry["ts"], ev.ts)
    for f in ("client_id", "host", "source"):
        if getattr(ev, f) is not None:
            entry[f] = getattr(ev, f)
    if ev.member_id:
        entry["member_id"] = ev.member_id
    for f in GAUGES:
        v = getattr(ev, f)
        if v is not None:
            entry[f] = v
    for f, total in SUMS.items():
        v = getattr(ev, f)
        if v is not None and v >= 0:
            entry[total] = (entry[total] or 0) + v


def prune(g, now_ms: int) -> None:
    stale = [k for k, e in g.client_standard.items() if now_ms - e["ts"] > TTL_MS]
    for k in stale:
        del g.client_standard[k]


def view(g, now_ms: int) -> list[dict]:
    """The clients' standard metrics, sorted by client id and instance (after forgetting the silent ones)."""
    prune(g, now_ms)
    return [dict(e) for _k, e in sorted(g.client_standard.items(),
                                         key=lambda kv: (kv[1].get("client_id") or "", kv[0]))]
