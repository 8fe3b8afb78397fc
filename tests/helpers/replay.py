"""What `replay` (the core alone) gives for the events the job read, and the records' comparable form: what any
driver of the core must give alike."""
from __future__ import annotations

import json

from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.reconstruct import Reconstructor
from rebalance_monitor.core.vocabulary import DETECTED_KINDS


def replay_records(events, cfg):
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay),
                          group_filter=cfg.group_filter())
    out = []
    for e in events:
        out.extend(recon.feed(parse_event(e)))
    out.extend(recon.finish())
    return out


def comparable(records):
    keep = []
    for r in records:
        if r["kind"] in ("group_status",):
            continue
        r = dict(r)
        if r["kind"] in DETECTED_KINDS:
            r.pop("detected_ms")
            r.pop("ts")
        keep.append(json.dumps(r, sort_keys=True))
    return sorted(keep)
