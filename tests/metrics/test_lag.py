import pytest
from hypothesis import given, strategies as st

from rebalance_monitor.metrics.lag import EndOffsetTable, PartitionSamples, offset_lag, time_lag_s


def test_offset_lag_never_negative_and_unknowns():
    assert offset_lag(100, 40) == 60
    assert offset_lag(40, 100) == 0          # commit newer than the end offset we hold
    assert offset_lag(None, 5) is None
    assert offset_lag(5, None) is None
    assert offset_lag(5, -1) is None         # "no committed offset"


def table(*points, max_samples=60):
    s = PartitionSamples(max_samples)
    for t, o in points:
        s.add(t, o)
    return s


def test_idle_partition_has_zero_time_lag():
    s = table((0, 10))
    assert time_lag_s(s, 10, 10, now_ms=1_000_000) == 0.0


def test_fresh_partition_without_history_has_no_value():
    s = table((0, 10))
    assert time_lag_s(s, 10, 4, now_ms=5000) is None
    assert time_lag_s(None, 10, 4, now_ms=5000) is None


def test_interpolates_between_samples():
    # end went 0 -> 100 between t=0 and t=10 s; record 49 was produced at about 5 s
    s = table((0, 0), (10_000, 100))
    assert time_lag_s(s, 100, 49, now_ms=20_000) == pytest.approx(15.0)
    # the newest unconsumed record was produced at the last sample
    assert time_lag_s(s, 100, 99, now_ms=20_000) == pytest.approx(10.0)


def test_extrapolates_before_the_oldest_sample_with_the_table_rate():
    s = table((10_000, 100), (20_000, 200))      # 10 records/s
    # record 49 is 51 records before offset 100 -> produced at ~ 10 s - 5.0 s... -(100-49-1)/10 = 5 s earlier
    assert time_lag_s(s, 200, 49, now_ms=20_000) == pytest.approx(15.0)


def test_flat_table_gives_a_lower_bound():
    s = table((10_000, 100), (20_000, 100), (30_000, 100))
    assert time_lag_s(s, 100, 50, now_ms=40_000) == pytest.approx(30.0)


def test_runs_of_equal_offsets_keep_first_and_last_sample():
    s = table((0, 5), (1000, 10), (2000, 10), (3000, 10), (4000, 10))
    assert list(s.offsets) == [5, 10, 10]
    assert list(s.times) == [0, 1000, 4000]


def test_bounded_and_reset_on_log_truncation():
    s = table(*[(i * 1000, i) for i in range(100)], max_samples=10)
    assert len(s) == 10 and s.offsets[0] == 90
    s.add(200_000, 3)
    assert list(s.offsets) == [3]


def test_out_of_order_samples_ignored():
    s = table((1000, 10), (500, 5))
    assert list(s.offsets) == [10]


@given(st.lists(st.tuples(st.integers(1, 5000), st.integers(0, 50)), min_size=2, max_size=40),
       st.integers(0, 3000))
def test_time_lag_is_monotonic_in_committed_offset(steps, now_extra):
    # the further behind the consumer, the older its oldest unconsumed record
    t, o = 0, 0
    s = PartitionSamples(16)
    for dt, do in steps:
        t += dt
        o += do
        s.add(t, o)
    end = s.latest_end
    now = t + now_extra
    prev = None
    for c in range(end, -1, -max(1, end // 20)):
        v = time_lag_s(s, end, c, now)
        if v is None:
            continue
        assert v >= 0
        if prev is not None:
            assert v >= prev - 1e-6
        prev = v


def test_end_offset_table_expiry():
    e = EndOffsetTable()
    assert e.update("t", 0, 10, ts_ms=1000, seen_ms=1000)
    assert not e.update("t", 0, 10, ts_ms=2000, seen_ms=2000)
    assert e.lag("t", 0, 4) == 6
    assert e.expire(older_than_ms=5000) == [("t", 0)]
    assert e.end("t", 0) is None
