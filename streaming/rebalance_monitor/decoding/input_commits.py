"""The offset commits of `__consumer_offsets` that only matter by their last value, compacted in the decode stage
before any of them is decoded.

A commit-heavy fleet writes an OffsetCommit record per group, topic and partition at every commit: most of that
topic. What the core takes from a commit is the partition's latest committed offset (lag) and the time of the
latest commit of a member's partitions (a sign of life, `core/causes.py`), both the last value per key. So, within
one chunk of records (a decode task's Arrow batch, or a poll of the Python source), the OffsetCommit records are
held by their raw key (key version 0 or 1: group, topic, partition), a later one replacing an earlier one, and
decoded only when the chunk ends or a record that is not a live commit comes (any other `__consumer_offsets`
record, a commit's tombstone: the group's membership may change there, so every commit held is decoded first, in
the order of the input). The decoded events then say exactly what all of the chunk's commits said about the
latest offset of each partition and the latest commit of each owner; what they no longer give is one
`offsets_committed` record per commit record (docs/records.md).

Records are compared as raw key bytes: no decoding happens before the choice. Held records count as read.
"""
from __future__ import annotations

# the records each row of the JVM stage stands for (itself and the commits it replaced): spark/jvm_compaction.py,
# streaming/java/spark-input-stage (CommitCompaction.RECORDS_COLUMN)
RECORDS_COLUMN = "rm_records"
# key versions (record types) of OffsetCommit records
_COMMIT_KEY_PREFIXES = (b"\x00\x00", b"\x00\x01")


def is_live_commit(key, value) -> bool:
    """An OffsetCommit record (key version 0 or 1) with a value (not a tombstone)."""
    return value is not None and isinstance(key, (bytes, bytearray)) and len(key) > 2 and \
        bytes(key[:2]) in _COMMIT_KEY_PREFIXES


class CommitCompactor:
    """The live commits of one chunk, the last per raw key, in the order of their last record."""

    __slots__ = ("held", "superseded")

    def __init__(self):
        self.held: dict[bytes, tuple] = {}
        self.superseded = 0  # commit records replaced by a later one of the same key (never decoded)

    def offer(self, key: bytes, record: tuple) -> None:
        held = self.held
        if key in held:
            del held[key]  # keep the order of last records: the output stays in input order
            self.superseded += 1
        held[key] = record

    def drain(self) -> list[tuple]:
        """The records held, in input order, and forget them."""
        if not self.held:
            return []
        out = list(self.held.values())
        self.held = {}
        return out
