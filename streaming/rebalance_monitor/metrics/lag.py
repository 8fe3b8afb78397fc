"""Consumer lag: offset lag and time lag.

Offset lag of a group on a partition is ``end - committed`` where ``end`` is the partition's log-end offset
(high watermark) and ``committed`` the group's committed offset (the next offset it will read), clamped at 0:
the two offsets are read at different moments, so a fresh commit can exceed an older end offset. It is
defined whatever the group state (Empty, rebalancing, ...): it only needs the two offsets.

Time lag estimates how old the oldest unconsumed record is: ``now - t(committed)``, where ``t(o)`` is the time
the log end passed offset ``o`` (the produce time of record ``o``). ``t`` is interpolated from a bounded
per-partition table of ``(time, end offset)`` samples, the way kafka-lag-exporter does:

* idle partition (``committed >= end``): 0 s;
* ``committed`` inside the table: linear interpolation between the two samples around it;
* ``committed`` older than the oldest sample and the table shows the end advancing (two samples with
  different offsets): extrapolate backwards with the table's mean produce rate (oldest to newest sample);
* ``committed`` older than the oldest sample and the end has not moved during the table: ``now - oldest``,
  a lower bound (the records were produced before the table starts);
* a fresh partition (fewer than two samples) with ``committed < end``: no value (``None``): one sample does
  not tell when records were produced.

The table keeps at most ``max_samples`` points. Runs of equal end offsets are compressed to their first and
last sample (the first tells when the end reached that value), so an idle partition does not flush the
history. A log end that goes backwards (topic re-created, truncated) resets the table.
"""
from __future__ import annotations

from bisect import bisect_right as _bisect_right


def offset_lag(end: int | None, committed: int | None) -> int | None:
    """``end - committed``, never negative; None when either is unknown (or committed is -1, "none")."""
    if end is None or committed is None or committed < 0 or end < 0:
        return None
    return end - committed if end > committed else 0


class PartitionSamples:
    """The (time_ms, end_offset) samples of one partition, oldest first, at most ``max_samples``."""

    __slots__ = ("times", "offsets", "max_samples")

    def __init__(self, max_samples: int = 60) -> None:
        if max_samples < 2:
            raise ValueError("max_samples must be >= 2")
        self.max_samples = max_samples
        self.times: list[int] = []
        self.offsets: list[int] = []

    def __len__(self) -> int:
        return len(self.times)

    def add(self, time_ms: int, end: int) -> None:
        times, offsets = self.times, self.offsets
        if times:
            if time_ms <= times[-1]:       # not newer than the last sample: keep the higher end only
                if end > offsets[-1] and time_ms == times[-1]:
                    offsets[-1] = end
                return
            if end < offsets[-1]:          # log end went backwards: a new log
                times.clear()
                offsets.clear()
            elif len(offsets) >= 2 and offsets[-1] == end and offsets[-2] == end:
                times[-1] = time_ms        # extend a run of equal offsets: keep its first and last sample
                return
        times.append(time_ms)
        offsets.append(end)
        if len(times) > self.max_samples:
            del times[0]
            del offsets[0]

    @property
    def latest_end(self) -> int | None:
        return self.offsets[-1] if self.offsets else None

    def produce_time_ms(self, offset: int) -> float | None:
        """Estimated time the log end passed ``offset`` (record ``offset`` was produced); None if unknown.

        Only meaningful for ``offset < latest_end``.
        """
        offsets = self.offsets
        n = len(offsets)
        if n < 2:
            return None
        times = self.times
        # first sample whose end is > offset: record `offset` was produced before that sample
        i = _bisect_right(offsets, offset)
        if i >= n:
            return None                     # not produced yet as far as the table knows
        if i == 0:
            span_o = offsets[-1] - offsets[0]
            if span_o <= 0:
                return float(times[0])      # end did not move during the table: lower bound of the age
            rate = span_o / (times[-1] - times[0])       # offsets per ms
            return times[0] - (offsets[0] - offset - 1) / rate
        o1, o2 = offsets[i - 1], offsets[i]
        t1, t2 = times[i - 1], times[i]
        # records o1 .. o2-1 were produced in (t1, t2]; record k at about t1 + (k - o1 + 1) / (o2 - o1) * dt
        return t1 + (offset - o1 + 1) * (t2 - t1) / (o2 - o1)


def time_lag_s(samples: PartitionSamples | None, end: int | None, committed: int | None,
               now_ms: int) -> float | None:
    """Time lag in seconds of a consumer at ``committed`` on a partition whose log end is ``end``."""
    lag = offset_lag(end, committed)
    if lag is None:
        return None
    if lag == 0:
        return 0.0
    if samples is None:
        return None
    t = samples.produce_time_ms(committed)
    if t is None:
        return None
    return max(0.0, (now_ms - t) / 1000.0)


class EndOffsetTable:
    """Log-end offsets of partitions with their sample history, for offset and time lag."""

    def __init__(self, max_samples: int = 60) -> None:
        self.max_samples = max_samples
        self.ends: dict[tuple[str, int], int] = {}
        self.samples: dict[tuple[str, int], PartitionSamples] = {}
        self.updated_ms: dict[tuple[str, int], int] = {}

    def update(self, topic: str, partition: int, end: int, ts_ms: int, seen_ms: int | None = None) -> bool:
        """Record an end offset read at ``ts_ms`` (event time); True when the known end changed.

        ``seen_ms`` (default ``ts_ms``) is the wall time of the update, used by :meth:`expire`.
        """
        key = (topic, partition)
        s = self.samples.get(key)
        if s is None:
            s = self.samples[key] = PartitionSamples(self.max_samples)
        s.add(ts_ms, end)
        seen = ts_ms if seen_ms is None else seen_ms
        self.updated_ms[key] = max(seen, self.updated_ms.get(key, seen))
        new_end = s.latest_end
        if self.ends.get(key) != new_end:
            self.ends[key] = new_end
            return True
        return False

    def end(self, topic: str, partition: int) -> int | None:
        return self.ends.get((topic, partition))

    def lag(self, topic: str, partition: int, committed: int | None) -> int | None:
        return offset_lag(self.ends.get((topic, partition)), committed)

    def time_lag_s(self, topic: str, partition: int, committed: int | None, now_ms: int) -> float | None:
        key = (topic, partition)
        return time_lag_s(self.samples.get(key), self.ends.get(key), committed, now_ms)

    def lag_sum(self, committed: dict[tuple[str, int], int]) -> int | None:
        """The offset lag summed over the partitions of ``committed`` with a known end; None when none is known."""
        total = None
        ends = self.ends
        for key, c in committed.items():
            lag = offset_lag(ends.get(key), c)
            if lag is not None:
                total = lag if total is None else total + lag
        return total

    def drop(self, key: tuple[str, int]) -> None:
        self.ends.pop(key, None)
        self.samples.pop(key, None)
        self.updated_ms.pop(key, None)

    def expire(self, older_than_ms: int) -> list[tuple[str, int]]:
        """Forget partitions whose end offset was not refreshed since ``older_than_ms``; returns them."""
        gone = [k for k, t in self.updated_ms.items() if t < older_than_ms]
        for k in gone:
            self.drop(k)
        return gone
