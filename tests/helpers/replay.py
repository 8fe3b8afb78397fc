"""What `replay` (the core alone) gives for the events the job read, and the records' comparable form: what any
driver of the core must give alike."""
from __future__ import annotations

# the records' comparable form is the job tests' own (no detection times, no group_status snapshots)
from helpers.job_output import comparable  # noqa: F401

from rebalance_monitor.core.events import parse_event
from rebalance_monitor.inputs.offsets_topic import OffsetsTopicDecoder
from rebalance_monitor.testing.witnesses import read_topic
from rebalance_monitor.core.reconstruct import Reconstructor


def replay_records(events, cfg):
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay),
                          group_filter=cfg.group_filter())
    out = []
    for e in events:
        out.extend(recon.feed(parse_event(e)))
    out.extend(recon.finish())
    return out


def group_records(events, cfg, group: str, status: bool = False) -> list[dict]:
    """The core's records of `group` from decoded events (any order: sorted by time first), as replay gives them."""
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay), emit_status=status,
                          offsets_partitions=cfg.kafka.offsets_topic_partitions)
    out = []
    for ev in sorted(events, key=lambda e: e.ts):
        out.extend(recon.feed(ev))
    out.extend(recon.finish())
    return [r for r in out if r.get("group") == group]


def decode_offsets_topic(bootstrap: str) -> tuple[set[str], OffsetsTopicDecoder]:
    """Every record of the broker's `__consumer_offsets` decoded, none rejected: (the record types seen, the
    decoder, which holds the topic ids' names the topic's own records gave)."""
    decoder = OffsetsTopicDecoder()
    kinds = set()
    for key, value, ts in read_topic(bootstrap, "__consumer_offsets"):
        d = decoder.decode(key, value, ts)
        assert d.rejected_reason is None, (d.rejected_reason, d.detail)
        kinds.add(d.record_type)
    return kinds, decoder
