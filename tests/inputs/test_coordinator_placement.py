"""Coordinator placement: Java String.hashCode over UTF-16 code units and Kafka's Utils.abs(hash) % n."""
from __future__ import annotations

import pytest

from rebalance_monitor.core.coordinator_placement import (
    java_string_hashcode, kafka_utils_abs, offsets_partition_for)


@pytest.mark.parametrize("s,expected", [
    ("", 0),
    ("a", 97),
    ("hello", 99162322),                    # well-known Java value
    ("Aa", 2112), ("BB", 2112),             # the classic Java collision pair
    ("polygenelubricants", -2147483648),    # hashes to Integer.MIN_VALUE
    ("\u00e9", 233),                         # BMP non-ASCII: one UTF-16 unit
    ("\U0001F600", 1772899),                 # non-BMP: surrogates 0xD83D 0xDE00 -> 0xD83D*31 + 0xDE00
    ("a\U0001F600", 97 * 31 * 31 + 1772899),
])
def test_java_string_hashcode(s, expected):
    assert java_string_hashcode(s) == expected


def test_hashcode_wraps_at_32_bits():
    h = java_string_hashcode("x" * 100)
    assert -(1 << 31) <= h < (1 << 31)
    expected = 0
    for ch in "x" * 100:
        expected = (expected * 31 + ord(ch)) % (1 << 32)
    assert h == (expected - (1 << 32) if expected >= (1 << 31) else expected)


def test_utils_abs_maps_min_value_to_zero():
    assert kafka_utils_abs(-(1 << 31)) == 0
    assert kafka_utils_abs(-5) == 5 and kafka_utils_abs(7) == 7


@pytest.mark.parametrize("group,n,expected", [
    ("hello", 50, 22),                   # 99162322 % 50
    ("test-consumer-group", 50, 31),     # |-1793216381| % 50
    ("polygenelubricants", 50, 0),       # Utils.abs(MIN_VALUE) = 0 (Math.abs would give -48)
    ("\U0001F600", 50, 49),              # 1772899 % 50
    ("my-group", 50, 12),
    ("my-group", 3, 1906497762 % 3),
])
def test_offsets_partition_for(group, n, expected):
    assert offsets_partition_for(group, n) == expected


def test_offsets_partition_rejects_bad_count():
    with pytest.raises(ValueError):
        offsets_partition_for("g", 0)
