"""The decode stage's decoder: Kafka records to canonical events (or dead letters), gathered as the rows it hands
on (decoded_rows.py, `DecodedRows`). It runs in Spark's workers: in mapInArrow (row_batches.py, over the rows of
Spark's Kafka connector) or in the Python source as it reads (spark/kafka_source/, option "decode").

Heartbeats, polls and commits take the fast path (`event_columns.hot_fields`) and travel as columns; other events
take the reference decoder (`reference.decode_record`). `__consumer_offsets`' live commits are compacted over a
chunk (input_commits.py). The job's wake-up records are read by their key and dropped (wake_records.py). Chunks
that went through the JVM stages first (`Compacted`) carry the commits compacted there and the events packed
there, which are taken as they are.
"""
from __future__ import annotations

import json
import time
from typing import Iterable, Iterator

import orjson
import pyarrow as pa

from ..core import records
from ..core.coordinator_placement import DEFAULT_OFFSETS_PARTITIONS
from ..core.events import Rejected, event_to_dict
from ..core.group_filter import GroupFilter
from ..core.runner import REASON_NO_GROUP, cluster_route, end_offsets_record
from ..gc_pause import gc_paused
from .append_time import append_ms as append_ms_of
from .decoded_rows import CLUSTER_SHARD, DecodedRows
from .event_columns import hot_fields
from .input_commits import CommitCompactor, is_live_commit
from .json_parser import use_fastest_available
from .reference import decode_record
from .wake_records import WAKE_KEY, wake_marker


def _cluster_event(out: DecodedRows, ev, order: int, payload: str) -> str | None:
    """Route a cluster-wide event (group ""): to the shards it concerns, or through as a record. Returns the
    reject reason of an event that needs a group, else None."""
    route = cluster_route(ev.type, ev.group)
    if route == "reject":
        return REASON_NO_GROUP
    if route == "record":
        out.cluster.append((CLUSTER_SHARD, ev.ts, order, "record", orjson.dumps(end_offsets_record(ev)).decode()))
    elif ev.type == "coordinator_change":
        if 0 <= ev.partition < out.shards:  # a partition the cluster does not have moves no group
            out.cluster.append((ev.partition, ev.ts, order, "cluster", payload))
    else:
        out.cluster.extend((shard, ev.ts, order, "cluster", payload) for shard in range(out.shards))
    return None


def decode_records(out: DecodedRows, records: Iterable[tuple], topic_sources: dict[str, str], max_bytes: int,
                   max_future_ms: int, topic_names=None) -> None:
    """Decode Kafka records `(topic, partition, offset, append_ms, key, value)` into `out` (`append_ms`: the
    record's Kafka timestamp in epoch ms, None if it has none, or a stamp read only where it is needed:
    `decoding.append_time.append_ms`). `topic_names`: see `topic_names_of`. The live
    offset commits of `__consumer_offsets` are compacted over the chunk, the last per key
    (decoding/input_commits.py)."""
    now = int(time.time() * 1000)
    groups, newest = out.groups, out.newest
    top, top_append = out.batch_max, out.batch_max_append
    commits = out.commits
    n = 0
    for topic, partition, offset, append_ms, key, value in records:
        n += 1
        source = topic_sources.get(topic, "events")
        if source == "offsets-topic":
            if is_live_commit(key, value):
                commits.offer(bytes(key), (topic, partition, offset, append_ms, key, value))
                continue
            if commits.held:  # the group's membership may change here: the commits before it first
                out.batch_max, out.batch_max_append = top, top_append
                _decode_held(out, commits, topic_sources, now, max_bytes, max_future_ms, topic_names)
                top, top_append = out.batch_max, out.batch_max_append
        order = (partition << 40) | offset
        if source == "events":
            hot = hot_fields(value, max_bytes, now, max_future_ms)
            if hot is not None and hot[2]:  # (a heartbeat or poll without a group takes the full path)
                etype, ts, group, member, num, err, inst, client, host, offsets = hot
                row = (ts, order, etype, member, num, err, inst, client, host, offsets)
                rows = groups.get(group)
                if rows is None:
                    groups[group] = [row]
                else:
                    rows.append(row)
                seen = newest.get(group)
                if seen is None or ts > seen[0]:
                    newest[group] = (ts, append_ms)
                if top is None or ts > top:
                    top, top_append = ts, append_ms
                continue
        out.batch_max, out.batch_max_append = top, top_append
        if key == WAKE_KEY:
            n -= 1  # not an input record
            marker = wake_marker(value, topic, partition)
            if marker is not None:  # every shard counts the markers of the job's start (spark/processor.py)
                out.cluster.extend((shard, 0, order, "wake", marker) for shard in range(out.shards))
            continue
        _decode_slow(out, source, topic, partition, offset, order, append_ms, now, key, value, max_bytes,
                     max_future_ms, topic_names)
        top, top_append = out.batch_max, out.batch_max_append
    out.batch_max, out.batch_max_append = top, top_append
    if commits.held:
        _decode_held(out, commits, topic_sources, now, max_bytes, max_future_ms, topic_names)
    out.records += n
    if topic_names is not None:
        for tid, count in topic_names.take_unresolved().items():
            out.unresolved[tid] = out.unresolved.get(tid, 0) + count


def _decode_held(out: DecodedRows, commits: CommitCompactor, topic_sources, now, max_bytes, max_future_ms,
                 topic_names) -> None:
    for topic, partition, offset, append_ms, key, value in commits.drain():
        _decode_slow(out, topic_sources[topic], topic, partition, offset, (partition << 40) | offset, append_ms, now,
                     key, value, max_bytes, max_future_ms, topic_names)


def topic_names_of(topic_ids: tuple | None):
    """The process's topic id -> name map (inputs/topic_ids.py) for `topic_ids` = (kafka.topic_ids, the
    `KafkaConnection` of the cluster read, or a file's content), or None."""
    if topic_ids is None:
        return None
    from ..inputs.topic_ids import resolver_for

    spec, source = topic_ids
    return resolver_for(spec, source)


class Compacted:
    """A chunk of records that went through the JVM stages: the records, how many more the chunk stood for
    (commits replaced by a later one of the same key, spark/jvm_compaction.py), and the events packed there
    (`DecodedRows.take_packs`, spark/jvm_packing.py)."""

    __slots__ = ("records", "superseded", "packs")

    def __init__(self, records: Iterable[tuple], superseded: int, packs: list | None = None):
        self.records = records
        self.superseded = superseded
        self.packs = packs or ()


def make_record_decoder(topic_sources: dict[str, str], max_bytes: int, max_future_ms: int, pack_records: int = 0,
                        groups: dict | None = None, shards: int = DEFAULT_OFFSETS_PARTITIONS,
                        topic_ids: tuple | None = None):
    """The decoder over chunks of Kafka records `(topic, partition, offset, append_ms, key, value)` (what the
    Python source reads: no Arrow on the way in); `topic_sources` maps each topic to its input format. Events
    are packed per group over chunks until `pack_records` records have been read (0: per chunk): bigger
    packs mean fewer rows for the JVM to move, shuffle and sort. `groups`: groups.allow/deny as
    `GroupFilter.to_options()` gives them (None: every group). `shards`: the cluster's `__consumer_offsets`
    partitions (`kafka.offsets_topic_partitions`), the key of the rows. `topic_ids`: (kafka.topic_ids, the
    KafkaConnection of the cluster read) to name KIP-848 records' topics (None: they stay ids); resolved in the
    worker, once per process (`topic_names_of`)."""
    keep = GroupFilter.from_options(groups)

    def decode(chunks: Iterable[Iterable[tuple]]) -> Iterator[pa.RecordBatch]:
        use_fastest_available()  # (in the Python worker that runs the stage)
        out = DecodedRows(keep, shards)
        names = topic_names_of(topic_ids) if "offsets-topic" in topic_sources.values() else None
        # the rows of up to pack_records records stay alive until packed: a collector running meanwhile would
        # walk them again and again (gc_pause.py). They are let go before each batch is handed on, so
        # that they are freed, not walked by the collection that follows the pause.
        with gc_paused():
            for records in chunks:
                if isinstance(records, Compacted):  # the JVM stages' rows: the commits they left out count as read
                    out.records += records.superseded
                    out.take_packs(records.packs)
                    records = records.records
                decode_records(out, records, topic_sources, max_bytes, max_future_ms, names)
                if out.records >= pack_records:
                    batch, out = out.to_batch(), DecodedRows(keep, shards)
                    yield batch
            last = out.to_batch() if out.records or out.cluster else None  # (wake-up records alone: none read)
            out = batch = None
            if last is not None:
                yield last

    return decode


def _decode_slow(out: DecodedRows, source, topic, partition, offset, order, append_ms, now, key, value, max_bytes,
                 max_future_ms, topic_names=None) -> None:
    append_ms = append_ms_of(append_ms)
    kafka_ts = now if append_ms is None else append_ms  # a record's time for formats without their own
    events, rejects = decode_record(source, value, key, kafka_ts, max_bytes=max_bytes,
                                    now_ms=now, max_future_ms=max_future_ms, topic_names=topic_names)
    rejects = list(rejects)
    for ev in events:
        if source == "events" and len(events) == 1 and getattr(ev, "received_ms", None) != ev.ts:
            # already canonical and validated: pass the record through, do not re-serialise. (An event at its
            # `received_ms` may have taken it as its time, its own `ts` too far ahead, parse_event: it travels as
            # it came out, so that the processor's parse, without the skew, gives the same event.)
            payload = value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else value
        else:
            payload = json.dumps(event_to_dict(ev), separators=(",", ":"))
        out.saw(ev.ts, append_ms)
        if ev.group == "":
            reason = _cluster_event(out, ev, order, payload)
            if reason is not None:
                rejects.append(Rejected(reason, payload, f"a {ev.type} event needs a group"))
            continue
        # No event time on event rows: Spark would silently drop rows behind its watermark;
        # the processor decides lateness itself and dead-letters late events.
        out.event(ev.group, (ev.ts, order, None, None, None, None, None, None, None, payload), append_ms)
    for rej in rejects:
        raw = rej.raw
        if isinstance(raw, (bytes, bytearray)):
            raw = bytes(raw).decode("utf-8", "backslashreplace")
        elif not isinstance(raw, str):
            raw = json.dumps(raw, default=str)
        rec = records.dead_letter("", kafka_ts, reason=rej.reason, detail=rej.detail, raw=raw[:max_bytes],
                                  origin={"topic": topic, "partition": int(partition), "offset": int(offset)})
        out.dead.append(("", kafka_ts, order, json.dumps(rec, separators=(",", ":"))))
