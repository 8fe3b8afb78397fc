"""The `offsets_committed` records of one group's run in the job, without the commits a later one superseded.

A client commits its partitions every few seconds, so commits are a steady share of a busy events topic (5 % of the
benchmark's mix) and each gives an `offsets_committed` record (docs/records.md). What reads those records takes
each partition's latest commit only: the metrics keep, per group, topic and partition, the offset of the newest
commit (`metrics/apply.apply_offsets_committed`: an older commit than the one held is ignored, a newer one or one
of the same time replaces it). Moving every record through the stateful step's output, the driver's collect and
the metrics updater cost about a quarter of a busy micro-batch (measured: docs/operations.md), for values that
the next record of the same partitions replaces.

So the processor hands on, of one group's run (records in the order the core gave them, that is time order), each
partition's last commit: an entry `[topic, partition, offset]` goes when a later record of the run commits a
valid offset (an integer >= 0: what the metrics take, `metrics/apply.committed_entry`) for the same topic and
partition, and a record goes when all its entries went. The metrics end in the same state: same offsets, same commit times, same partitions
known. The core still applies every commit (a member's commits are its sign of life, `core/causes.py`); `replay`
keeps every record. Records of any other kind, and entries in a form the metrics skip, pass untouched.
"""
from __future__ import annotations

from ..core.vocabulary import RecordKind
from ..metrics.apply import committed_entry

_COMMITTED = RecordKind.OFFSETS_COMMITTED


def _key(entry):
    """(topic, partition) of an entry whose offset the metrics take (`committed_entry`), else None."""
    e = committed_entry(entry)
    if e is None:
        return None
    key = e[0], e[1]
    try:
        hash(key)
    except TypeError:  # (the metrics could not key it either)
        return None
    return key


def _fast_key(entry):
    """`_key` of an entry, at once for the usual `[topic, partition, offset]` (the same result)."""
    if type(entry) is list and len(entry) == 3:
        t, p, o = entry
        if type(o) is int and o >= 0 and type(t) is str and type(p) is int:
            return t, p
    return _key(entry)


def last_commits(records: list[dict]) -> list[dict]:
    """`records` without the `offsets_committed` entries that a later entry of the list supersedes (the same
    topic and partition, a valid offset, a commit time at least as late: see the module docstring); a list with
    fewer than two such records, or in which no partition is committed twice, comes back as it is."""
    commits = [r for r in records if r.get("kind") == _COMMITTED]
    if len(commits) < 2:
        return records
    seen: set = set()
    valid = 0
    for r in commits:
        offsets = r.get("offsets")
        if type(offsets) is list:
            for entry in offsets:
                key = _fast_key(entry)
                if key is not None:
                    valid += 1
                    seen.add(key)
    if len(seen) == valid:  # (a live group's members each commit their own partitions)
        return records
    later: dict = {}  # (topic, partition) -> the latest commit time of the valid entries after this point
    out: list[dict] = []
    for r in reversed(records):
        offsets = r.get("offsets")
        if r.get("kind") != _COMMITTED or type(offsets) is not list or not offsets:
            out.append(r)
            continue
        ts = r.get("ts") or 0
        kept = []
        for entry in reversed(offsets):
            key = _fast_key(entry)
            if key is None:
                kept.append(entry)
                continue
            newest = later.get(key)
            if newest is not None and newest >= ts:
                continue  # a later commit of the partition, as late or later: the metrics end with it
            kept.append(entry)
            later[key] = ts
        if len(kept) == len(offsets):
            out.append(r)
        elif kept:
            kept.reverse()
            out.append({**r, "offsets": kept})
    out.reverse()
    return out
