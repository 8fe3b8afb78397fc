"""Which `__consumer_offsets` partition (and so which coordinator) a group lives on.

Kafka places a group on partition `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`
(GroupMetadataManager.partitionFor in the classic coordinator, GroupCoordinatorService.partitionFor in the new
one; the same formula in every release since 0.9). Two details matter for an exact port:

* `String.hashCode()` runs over UTF-16 code units, so a character outside the Basic Multilingual Plane counts
  as its two surrogates, and the arithmetic wraps at 32 bits (Java `int`).
* `org.apache.kafka.common.utils.Utils.abs` maps `Integer.MIN_VALUE` to 0, unlike `Math.abs`, which would
  leave it negative (and `%` would then give a negative partition).

Pure code: no Kafka client needed.
"""
from __future__ import annotations

from functools import lru_cache

DEFAULT_OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions default
_INT_MIN = -(1 << 31)


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hashcode(s: str) -> int:
    """Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, as a signed int32."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _to_int32(h)


def kafka_utils_abs(n: int) -> int:
    """`Utils.abs`: absolute value, except that Integer.MIN_VALUE maps to 0."""
    return 0 if n == _INT_MIN else abs(n)


@lru_cache(maxsize=1 << 16)  # (every group_status record names it: a loop over the name's characters)
def offsets_partition_for(group_id: str, num_partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The `__consumer_offsets` partition that holds `group_id` (its coordinator is that partition's leader)."""
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    return kafka_utils_abs(java_string_hashcode(group_id)) % num_partitions
