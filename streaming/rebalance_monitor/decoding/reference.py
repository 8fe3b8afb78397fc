"""The reference decoder: one input record into canonical events, for the three input formats.

One entry point, used by `replay` and by the Spark job alike:
`decode_record(source, value, key=None, ts_ms=None) -> (events, rejects)`.
Never raises: anything wrong becomes a `Rejected` with a reason. The fast paths beside it (event_columns.py, and
the decode stage's rows, decoded_rows.py) give exactly what it gives
(tests/decoding/test_fast_paths_equal_reference.py).
Its JSON parser is the core's, as `json_parser.use_fastest_available` set it (or `json` alone).

`topic_names` (offsets-topic and offsets-dump only): how KIP-848 records' topic ids become names, a
`inputs.topic_ids.TopicNames` (`topic_names_for(cfg)` gives the one `kafka.topic_ids` configures). Without it
they stay ids.
"""
from __future__ import annotations

from ..core.events import DEFAULT_MAX_BYTES, Rejected, parse_event

SOURCES = ("events", "coordinator-log", "offsets-topic")


def decode_record(source: str, value, key: bytes | None = None, ts_ms: int | None = None, *,
                  max_bytes: int = DEFAULT_MAX_BYTES, now_ms: int | None = None,
                  max_future_ms: int | None = None, topic_names=None) -> tuple[list, list]:
    try:
        if source == "events":
            ev = parse_event(value, max_bytes=max_bytes, now_ms=now_ms, max_future_ms=max_future_ms)
            return ([], [ev]) if isinstance(ev, Rejected) else ([ev], [])
        if source == "coordinator-log":
            from ..inputs.coordinator_log import decode_log_record

            if value is not None and len(value) > max_bytes:
                return [], [Rejected("too_large", value, f"{len(value)} bytes > {max_bytes}")]
            decoded = decode_log_record(value, ts_ms)
        elif source == "offsets-topic":
            from ..inputs.offsets_topic import decode_offsets_record

            decoded = decode_offsets_record(key, value, ts_ms if ts_ms is not None else 0, topic_names)
        elif source == "offsets-dump":
            from ..inputs.offsets_topic import decode_dump_line

            decoded = decode_dump_line(value if isinstance(value, str) else bytes(value).decode("utf-8", "replace"),
                                       topic_names)
        else:
            raise ValueError(f"unknown source {source!r}; allowed: {', '.join(SOURCES)}")
    except ValueError:
        raise
    except Exception as exc:  # an adapter bug must not stop the stream: dead-letter the record
        return [], [Rejected("decoder_error", value, f"{type(exc).__name__}: {exc}"[:300])]
    if decoded.skipped:
        return [], []
    if decoded.rejected_reason:
        return [], [Rejected(decoded.rejected_reason, value, decoded.detail)]
    events, rejects = [], []
    for obj in decoded.events:
        ev = parse_event(obj, now_ms=now_ms, max_future_ms=max_future_ms)
        (rejects if isinstance(ev, Rejected) else events).append(ev)
    return events, rejects


def topic_names_for(cfg):
    """The topic id -> name map of `kafka.topic_ids` (`cluster`: the cluster at kafka.bootstrap_servers;
    `none`; or a JSON file {id: name}), one per process. What replay and the Spark decode stage resolve
    KIP-848 records' topic ids with."""
    from ..inputs.topic_ids import CLUSTER, resolver_for

    spec = cfg.kafka.topic_ids
    if spec == CLUSTER:
        return resolver_for(spec, cfg.kafka.connection())
    return resolver_for(spec)
