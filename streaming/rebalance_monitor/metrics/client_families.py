"""The clients' own standard metrics of a group (KIP-714's standard consumer set, core/group/client_standard.py):
kept from the latest `group_status` record of the group (`client_standard_metrics`) and written as the catalogue's
`kafka_consumergroup_client_*` families, one series per client instance. The core's running totals are the
counters; a client the core forgot drops out with its series."""
from __future__ import annotations

from .catalogue import (CLIENT_POLL_IDLE_RATIO, CLIENT_REBALANCE_LATENCY_AVG, CLIENT_REBALANCE_LATENCY_MAX,
                        CLIENT_REBALANCE_LATENCY_TOTAL, CLIENT_REBALANCES)
from .exposition import Family

FAMILIES = (CLIENT_POLL_IDLE_RATIO, CLIENT_REBALANCE_LATENCY_AVG, CLIENT_REBALANCE_LATENCY_MAX, CLIENT_REBALANCES,
            CLIENT_REBALANCE_LATENCY_TOTAL)
# family, the record's field, its scale to the family's unit
_FIELDS = tuple((Family(spec), field, scale) for spec, field, scale in (
    (CLIENT_POLL_IDLE_RATIO, "poll_idle_ratio", 1.0),
    (CLIENT_REBALANCE_LATENCY_AVG, "rebalance_latency_avg_ms", 0.001),
    (CLIENT_REBALANCE_LATENCY_MAX, "rebalance_latency_max_ms", 0.001),
    (CLIENT_REBALANCES, "rebalances_total", None),
    (CLIENT_REBALANCE_LATENCY_TOTAL, "rebalance_latency_total_ms", 0.001)))


def parse(entries) -> list[tuple[tuple[str, str], dict]]:
    """The well-formed entries of a record's `client_standard_metrics`: [((client id, instance id), entry)]."""
    out = []
    for e in entries if isinstance(entries, list) else ():
        if isinstance(e, dict):
            out.append(((str(e.get("client_id") or ""), str(e.get("client_instance_id") or "")), e))
    return sorted(out, key=lambda kv: kv[0])


def lines(group_label: str, clients: list, f: dict[str, str]) -> None:
    """The families' lines of one group's clients into ``f`` ({family name: text})."""
    for fam, field, scale in _FIELDS:
        text = []
        for labels, e in clients:
            v = e.get(field)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            text.append(fam.line(group_label, labels, int(v) if scale is None else float(v) * scale))
        if text:
            f[fam.name] = "".join(text)
