"""The idle clock's tick arithmetic (the source itself runs in tests/spark_job, idle-clock test)."""
from __future__ import annotations

from rebalance_monitor.spark.clock_source import ClockReader, current_tick, next_trigger_ms, write_tick

IDLE = {"tick": 100, "event_ms": 1_000_000, "wall_ms": 2_000_000, "idle": True, "delay_ms": 2_000,
        "interval_ms": 5_000}


def test_next_trigger_is_the_next_multiple_of_the_interval():
    assert next_trigger_ms(10_000, 5_000) == 15_000
    assert next_trigger_ms(12_345, 5_000) == 15_000
    assert next_trigger_ms(14_999, 5_000) == 15_000


def test_an_idle_clock_names_the_next_trigger_in_event_time():
    # read at wall 2_003_000: the watermark applies from the trigger at 2_005_000, 5 s of wall time after
    # the newest event's own wall time, so event time 1_005_000 (the watermark stays 2 s behind it)
    assert current_tick(IDLE, 2_003_000) == 1_005_000
    # the watermark (tick - delay) stays the delay behind the wall clock at the start of that trigger
    for now in range(2_000_000, 2_030_000, 777):
        applies_at = next_trigger_ms(now, 5_000)
        assert current_tick(IDLE, now) - 2_000 - IDLE["event_ms"] <= applies_at - IDLE["wall_ms"] - 2_000


def test_a_busy_or_incomplete_clock_keeps_its_fixed_tick():
    assert current_tick({**IDLE, "idle": False}, 2_003_000) == 100
    assert current_tick({"tick": 7}, 2_003_000) == 7
    assert current_tick({**IDLE, "interval_ms": "x"}, 2_003_000) == 100
    assert current_tick({**IDLE, "tick": 10 ** 13}, 2_003_000) == 10 ** 13  # never goes back


def test_the_reader_never_goes_back(tmp_path):
    path = str(tmp_path / "clock.json")
    write_tick(path, 0, **{k: v for k, v in IDLE.items() if k != "tick"})
    reader = ClockReader(path)
    first = reader.latestOffset()["tick"]
    assert first > 1_000_000
    write_tick(path, 5)  # e.g. run --once writing a plain, lower tick
    assert reader.latestOffset()["tick"] == first


def test_rewriting_the_clock_keeps_the_tick_it_had_reached(tmp_path):
    from rebalance_monitor.spark.clock_source import read_tick_file, write_clock

    path = str(tmp_path / "clock.json")
    fields = {k: v for k, v in IDLE.items() if k != "tick"}
    write_clock(path, IDLE, 2_008_000, 5_000, **{**fields, "idle": False})
    # what the idle clock had reached one trigger ago stays as the fixed tick once the input is busy
    assert read_tick_file(path) == {"tick": current_tick(IDLE, 2_003_000), **fields, "idle": False}
    assert current_tick(read_tick_file(path), 2_009_000) == current_tick(IDLE, 2_003_000)
