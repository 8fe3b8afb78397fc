"""The decoding stage of the job: raw Kafka rows to canonical events (or dead letters), in mapInArrow.

Rows out (DECODED_SCHEMA), keyed by `shard`: the `__consumer_offsets` partition of the group (see
spark/processor.py), or `CLUSTER_SHARD` for what concerns no group's state:
- `events`: one row per group and input batch, its events packed in `packed` (see `pack_events`): the
  shuffle and the sort before the stateful operator then handle a row per group, not a row per event; `ts`
  its newest event time, `num` the Kafka timestamp of that event's record;
- `cluster`: a cluster-wide event (group "") that reaches groups, once per shard it concerns (a coordinator
  move: the shard of its partition; partition counts: every shard), as canonical JSON text in `payload`;
- `wake`: a wake-up record's marker (`wake_marker`), once per shard;
- `record` (CLUSTER_SHARD): a record passed through (a cluster-wide `end_offsets`);
- `dead_letter` (CLUSTER_SHARD): one per rejected record (group "", the dead-letter record as JSON in `payload`);
- `tick` (CLUSTER_SHARD): one per input batch, `et` its highest event time, `num` the Kafka timestamp of the
  record that carried it (so the driver can relate event time to the wall clock) and `ord` the number of
  records read; `payload` the groups groups.allow/deny left out (a JSON list), or, when KIP-848 records named
  topic ids that could not be resolved, `{"left_out": [...], "unresolved_topic_ids": {id: references}}`. Only
  tick rows carry event time, so they alone move the watermark, and Spark never drops events as late:
  lateness is the processor's call.

A packed event is a heartbeat, poll or commit in columns (`etype` set, see `event_columns`; a commit's offsets in
`payload`, as a list), or any other event as its canonical JSON text (`payload`).
"""
from __future__ import annotations

import json
import time
from typing import Iterable, Iterator

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ..core import records
from ..core.coordinator_placement import DEFAULT_OFFSETS_PARTITIONS, offsets_partition_for
from ..core.events import Rejected, event_to_dict
from ..core.group_filter import GroupFilter
from ..core.runner import REASON_NO_GROUP, cluster_route, end_offsets_record
from ..decode import decode_record
from ..event_columns import hot_fields
from .commit_compaction import RECORDS_COLUMN, CommitCompactor, is_live_commit
from .gc_pause import gc_paused
from .jvm_packing import GROUP_COLUMN, PACK_COLUMN, TS_COLUMN

DECODED_SCHEMA = ("shard int, group string, ts long, et timestamp, ord long, kind string, num long, payload string, "
                  "packed binary")
_ARROW_SCHEMA = pa.schema([
    ("shard", pa.int32()), ("group", pa.string()), ("ts", pa.int64()), ("et", pa.timestamp("us", tz="UTC")),
    ("ord", pa.int64()),
    ("kind", pa.string()), ("num", pa.int64()), ("payload", pa.string()), ("packed", pa.binary()),
])
# The key of the record the job writes to its input at start (see `job.wake_input`): it makes Spark run a
# batch after a restart on a quiet input (from then on it runs one at every trigger). Read and dropped here.
WAKE_KEY = b"rebalance-monitor/wake"


def wake_marker(value, topic: str, partition: int) -> str | None:
    """The marker a wake-up record carries ({"start", "n"}: the job's start and how many it wrote, see
    `job.wake_input`) with the record's topic and partition, as JSON text; None for a bare wake-up."""
    try:
        note = orjson.loads(value) if value else None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(note, dict) or type(note.get("start")) is not int or type(note.get("n")) is not int:
        return None
    return orjson.dumps({"start": note["start"], "n": note["n"], "tp": f"{topic}:{partition}"}).decode()


# the key of the rows that concern no group's state (clock rows, dead letters, records passed through)
CLUSTER_SHARD = -1
# the columns of a pack, in order
PACK_COLUMNS = ("ts", "ord", "etype", "member", "num", "err", "inst", "client", "host", "payload")


def pack_events(rows: list[tuple]) -> tuple[int, bytes]:
    """One group's events (tuples in PACK_COLUMNS order): their highest time, and the events as JSON (a list
    per column)."""
    cols = list(zip(*rows))
    return max(cols[0]), orjson.dumps(cols)


def unpack_events(packed: bytes) -> list[list]:
    """The columns (PACK_COLUMNS order) of a pack."""
    return orjson.loads(packed)


def _kafka_ts_ms(column: pa.Array) -> list[int | None]:
    """Record timestamps in epoch ms (None where a record has none)."""
    if pa.types.is_timestamp(column.type):
        mul, div = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}[column.type.unit]
        raw = pc.cast(column, pa.int64()).to_pylist()
        return [None if x is None or x < 0 else x * mul // div for x in raw]
    return [None if x is None or x < 0 else int(x) for x in column.to_pylist()]


# at most this many names of groups left out by groups.allow/deny travel in one clock row
FILTERED_NAMES_MAX = 1000


class _Rows:
    """The output rows of one input batch: events gathered per group, dead letters, the clock row.
    `keep`: the groups.allow/deny predicate (core/group_filter.py); the events of a group it leaves out are
    dropped here, before the shuffle, and the group's name is reported in the clock row."""

    def __init__(self, keep=None, shards: int = DEFAULT_OFFSETS_PARTITIONS):
        self.keep = keep
        self.shards = shards
        self.unresolved: dict[str, int] = {}  # topic ids of KIP-848 records left as ids (inputs/topic_ids.py)
        self.groups: dict[str, list] = {}
        self.newest: dict[str, tuple] = {}  # group -> (ts, Kafka timestamp) of its newest event's record
        self.cluster: list[tuple] = []  # (shard, ts, order, kind, payload): cluster-wide events
        self.dead: list[tuple] = []
        self.records = 0  # Kafka records read
        self.commits = CommitCompactor()  # the chunk's live offset commits, the last per key (commit_compaction.py)
        self.batch_max: int | None = None
        self.batch_max_append: int | None = None  # the Kafka timestamp of the record with the highest time
        self.packs: list[tuple] = []  # (group, newest ts, its Kafka timestamp, packed): packed in the JVM

    def event(self, group: str, row: tuple, append_ms: int | None) -> None:
        rows = self.groups.get(group)
        if rows is None:
            self.groups[group] = [row]
        else:
            rows.append(row)
        seen = self.newest.get(group)
        if seen is None or row[0] > seen[0]:
            self.newest[group] = (row[0], append_ms)

    def take_packs(self, packs) -> None:
        """Events packed in the JVM (spark/jvm_packing.py): `(group, newest ts, its Kafka timestamp, packed,
        records)` each."""
        for group, ts, append_ms, packed, records in packs:
            self.records += records
            self.saw(ts, append_ms)
            self.packs.append((group, ts, append_ms, packed))

    def saw(self, ts: int, append_ms: int | None) -> None:
        if self.batch_max is None or ts > self.batch_max:
            self.batch_max = ts
            self.batch_max_append = append_ms

    def to_batch(self) -> pa.RecordBatch:
        cols: dict[str, list] = {name: [] for name in _ARROW_SCHEMA.names}

        def add(shard, group, ts, et, order, kind, num, payload, packed):
            for name, value in zip(_ARROW_SCHEMA.names, (shard, group, ts, et, order, kind, num, payload, packed)):
                cols[name].append(value)

        keep = self.keep
        left_out: dict[str, None] = {}
        for group, rows in self.groups.items():
            if keep is not None and not keep(group):
                left_out[group] = None
                continue
            newest, packed = pack_events(rows)
            # num: the Kafka timestamp of the record of the group's newest event (the processor's idle clock)
            seen = self.newest.get(group)
            add(shard_of(group, self.shards), group, newest, None, 0, "events", seen[1] if seen else None, None,
                packed)
        for group, newest, append_ms, packed in self.packs:
            if keep is not None and not keep(group):
                left_out[group] = None
                continue
            add(shard_of(group, self.shards), group, newest, None, 0, "events", append_ms, None, packed)
        for shard, ts, order, kind, payload in self.cluster:
            add(shard, "", ts, None, order, kind, None, payload, None)
        for group, ts, order, payload in self.dead:
            add(CLUSTER_SHARD, group, ts, None, order, "dead_letter", None, payload, None)
        if self.records:
            # one clock row per batch: its highest event time (it alone moves the watermark), the Kafka
            # timestamp of that event's record, how many records the batch read, and the groups left out
            et = None if self.batch_max is None else self.batch_max * 1000
            note = list(left_out)[:FILTERED_NAMES_MAX]
            if self.unresolved:
                note = {"left_out": note, "unresolved_topic_ids": self.unresolved}
            add(CLUSTER_SHARD, "", self.batch_max or 0, et, self.records, "tick", self.batch_max_append,
                orjson.dumps(note).decode() if note else "", None)
        return pa.RecordBatch.from_arrays([pa.array(cols[n], type=f.type)
                                           for n, f in zip(_ARROW_SCHEMA.names, _ARROW_SCHEMA)],
                                          schema=_ARROW_SCHEMA)


_SHARD_CACHE: dict = {}


def shard_of(group: str, shards: int) -> int:
    """The `__consumer_offsets` partition of a group (the processor's key), memoised per process."""
    key = (group, shards)
    shard = _SHARD_CACHE.get(key)
    if shard is None:
        if len(_SHARD_CACHE) > 100_000:
            _SHARD_CACHE.clear()
        shard = _SHARD_CACHE[key] = offsets_partition_for(group, shards)
    return shard


def _cluster_event(out: _Rows, ev, order: int, payload: str) -> str | None:
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


def decode_records(out: _Rows, records: Iterable[tuple], topic_sources: dict[str, str], max_bytes: int,
                   max_future_ms: int, topic_names=None) -> None:
    """Decode Kafka records `(topic, partition, offset, append_ms, key, value)` into `out` (`append_ms`: the
    record's Kafka timestamp in epoch ms, None if it has none). `topic_names`: see `topic_names_of`. The live
    offset commits of `__consumer_offsets` are compacted over the chunk, the last per key (commit_compaction.py)."""
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


def _decode_held(out: _Rows, commits: CommitCompactor, topic_sources, now, max_bytes, max_future_ms,
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
    (`_Rows.take_packs`, spark/jvm_packing.py)."""

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
        out = _Rows(keep, shards)
        names = topic_names_of(topic_ids) if "offsets-topic" in topic_sources.values() else None
        # the rows of up to pack_records records stay alive until packed: a collector running meanwhile would
        # walk them again and again (spark/gc_pause.py). They are let go before each batch is handed on, so
        # that they are freed, not walked by the collection that follows the pause.
        with gc_paused():
            for records in chunks:
                if isinstance(records, Compacted):  # the JVM stages' rows: the commits they left out count as read
                    out.records += records.superseded
                    out.take_packs(records.packs)
                    records = records.records
                decode_records(out, records, topic_sources, max_bytes, max_future_ms, names)
                if out.records >= pack_records:
                    batch, out = out.to_batch(), _Rows(keep, shards)
                    yield batch
            last = out.to_batch() if out.records or out.cluster else None  # (wake-up records alone: none read)
            out = batch = None
            if last is not None:
                yield last

    return decode


def make_decoder(topic_sources: dict[str, str], max_bytes: int, max_future_ms: int, pack_records: int = 0,
                 groups: dict | None = None, shards: int = DEFAULT_OFFSETS_PARTITIONS,
                 topic_ids: tuple | None = None):
    """The same decoder as a mapInArrow function over Kafka rows (Spark's connector, or the Python source
    without `decode`)."""
    decode_chunks = make_record_decoder(topic_sources, max_bytes, max_future_ms, pack_records, groups, shards,
                                        topic_ids)

    def records(batch: pa.RecordBatch):
        packs = None
        if PACK_COLUMN in batch.schema.names:  # events packed in the JVM (spark/jvm_packing.py)
            is_pack = pc.is_valid(batch.column(PACK_COLUMN))
            packed = batch.filter(is_pack)
            batch = batch.filter(pc.invert(is_pack))
            packs = zip(packed.column(GROUP_COLUMN).to_pylist(), packed.column(TS_COLUMN).to_pylist(),
                        _kafka_ts_ms(packed.column("timestamp")), packed.column(PACK_COLUMN).to_pylist(),
                        packed.column(RECORDS_COLUMN).to_pylist())
        rows = zip(batch.column("topic").to_pylist(), batch.column("partition").to_pylist(),
                   batch.column("offset").to_pylist(), _kafka_ts_ms(batch.column("timestamp")),
                   batch.column("key").to_pylist(), batch.column("value").to_pylist())
        if RECORDS_COLUMN not in batch.schema.names:
            return rows
        # through the JVM stages: the commits compacted there count as read
        superseded = (pc.sum(batch.column(RECORDS_COLUMN)).as_py() or 0) - batch.num_rows
        return Compacted(rows, superseded, packs)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return decode_chunks(records(b) for b in batches)

    return decode


def _decode_slow(out: _Rows, source, topic, partition, offset, order, append_ms, now, key, value, max_bytes,
                 max_future_ms, topic_names=None) -> None:
    kafka_ts = now if append_ms is None else append_ms  # a record's time for formats without their own
    events, rejects = decode_record(source, value, key, kafka_ts, max_bytes=max_bytes,
                                    now_ms=now, max_future_ms=max_future_ms, topic_names=topic_names)
    rejects = list(rejects)
    for ev in events:
        if source == "events" and len(events) == 1:
            # already canonical and validated: pass the record through, do not re-serialise
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
