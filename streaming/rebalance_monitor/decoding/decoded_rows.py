"""The rows the decode stage hands on (DECODED_SCHEMA), gathered per input batch by `DecodedRows`.

Rows out (DECODED_SCHEMA), keyed by `shard`: the `__consumer_offsets` partition of the group (see
spark/processor.py), or `CLUSTER_SHARD` for what concerns no group's state:
- `events`: one row per group and input batch, its events packed in `packed` (see `pack_events`): the
  shuffle and the sort before the stateful operator then handle a row per group, not a row per event; `ts`
  its newest event time, `num` the Kafka timestamp of that event's record (events packed in the JVM,
  spark/jvm_packing.py, come as rows of their own: one per group and chunk of that stage);
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

import orjson
import pyarrow as pa

from ..core.coordinator_placement import DEFAULT_OFFSETS_PARTITIONS, offsets_partition_for
from .append_time import append_ms as append_ms_of
from .input_commits import CommitCompactor

DECODED_SCHEMA = ("shard int, group string, ts long, et timestamp, ord long, kind string, num long, payload string, "
                  "packed binary")
_ARROW_SCHEMA = pa.schema([
    ("shard", pa.int32()), ("group", pa.string()), ("ts", pa.int64()), ("et", pa.timestamp("us", tz="UTC")),
    ("ord", pa.int64()),
    ("kind", pa.string()), ("num", pa.int64()), ("payload", pa.string()), ("packed", pa.binary()),
])
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


# at most this many names of groups left out by groups.allow/deny travel in one clock row
FILTERED_NAMES_MAX = 1000


class DecodedRows:
    """The output rows of one input batch: events gathered per group, dead letters, the clock row.
    `keep`: the groups.allow/deny predicate (core/group_filter.py); the events of a group it leaves out are
    dropped here, before the shuffle, and the group's name is reported in the clock row."""

    def __init__(self, keep=None, shards: int = DEFAULT_OFFSETS_PARTITIONS):
        self.keep = keep
        self.shards = shards
        self.unresolved: dict[str, int] = {}  # topic ids of KIP-848 records left as ids (inputs/topic_ids.py)
        self.groups: dict[str, list] = {}
        # group -> (ts, Kafka timestamp) of its newest event's record. Here and in batch_max_append, the Kafka
        # timestamp is as the record came: the Python source's stamps are read only in to_batch (`append_ms_of`)
        self.newest: dict[str, tuple] = {}
        self.cluster: list[tuple] = []  # (shard, ts, order, kind, payload): cluster-wide events
        self.dead: list[tuple] = []
        self.records = 0  # Kafka records read
        self.commits = CommitCompactor()  # the chunk's live offset commits, the last per key (input_commits.py)
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
            add(shard_of(group, self.shards), group, newest, None, 0, "events", append_ms_of(seen[1]) if seen else None,
                None, packed)
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
            add(CLUSTER_SHARD, "", self.batch_max or 0, et, self.records, "tick", append_ms_of(self.batch_max_append),
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
