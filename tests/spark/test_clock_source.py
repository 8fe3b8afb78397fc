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


# --- the Kafka source's marker: idle within the trigger that finds nothing new ---------------------------

BUSY = {**IDLE, "idle": False}  # the driver's flag: it has not seen the input go quiet yet
CAUGHT_UP = {"caught_up": True, "backlog": False, "wall_ms": 2_002_999}  # a millisecond before the ask
BACKLOG = {"caught_up": False, "backlog": True, "wall_ms": 2_002_999}
READS_ALL = {"caught_up": False, "backlog": False, "wall_ms": 2_002_999}


def test_a_marker_of_this_trigger_decides_whether_the_input_is_idle():
    # no new record: the clock follows the wall clock though the driver has not noticed yet, with the tick
    # an idle driver flag gives
    assert current_tick(BUSY, 2_003_000, CAUGHT_UP) == current_tick(IDLE, 2_003_000) == 1_005_000
    # records left for later triggers: a backlog is being read, the clock holds whatever the driver says
    assert current_tick(IDLE, 2_003_000, BACKLOG) == 100
    # new records that this trigger reads all of: the driver's flag, as without a marker
    assert current_tick(IDLE, 2_003_000, READS_ALL) == 1_005_000
    assert current_tick(BUSY, 2_003_000, READS_ALL) == 100


def test_a_stale_or_missing_marker_leaves_the_driver_flag_in_charge():
    assert current_tick(BUSY, 2_003_000, {**CAUGHT_UP, "wall_ms": 2_000_500}) == 100  # half a 5 s trigger old
    assert current_tick(IDLE, 2_003_000, {**BACKLOG, "wall_ms": 2_000_500}) == 1_005_000
    assert current_tick(BUSY, 2_003_000, {**CAUGHT_UP, "wall_ms": 2_003_001}) == 100  # from the future
    for broken in ({}, {"caught_up": True}, {**CAUGHT_UP, "wall_ms": "x"}):
        assert current_tick(BUSY, 2_003_000, broken) == 100
        assert current_tick(IDLE, 2_003_000, broken) == 1_005_000


def test_a_marker_written_just_after_the_previous_ask_is_a_trigger_old():
    # Were the sources asked clock first, the marker read now would be the previous trigger's: written just
    # after the clock's previous ask. A trigger started at once after an overrunning batch can come 2 s later.
    marker = {**CAUGHT_UP, "wall_ms": 2_001_001}
    assert current_tick(BUSY, 2_003_000, marker, last_ms=2_001_000) == 100
    assert current_tick(BUSY, 2_003_000, marker, last_ms=1_996_000) == 1_005_000  # asked in Kafka-first order


def test_the_reader_reads_the_marker_it_is_given(tmp_path, monkeypatch):
    from rebalance_monitor.spark import clock_source
    from rebalance_monitor.spark.clock_source import write_marker

    now = [2_003.0]
    monkeypatch.setattr(clock_source.time, "time", lambda: now[0])
    path, marker = str(tmp_path / "clock.json"), str(tmp_path / "marker.json")
    write_tick(path, 100, **{k: v for k, v in BUSY.items() if k != "tick"})
    reader = ClockReader(path, marker)
    assert reader.latestOffset()["tick"] == 100  # no marker yet: the driver's flag (busy)
    now[0] = 2_008.0
    write_marker(marker, True, False, 2_007_999)
    assert reader.latestOffset()["tick"] == 1_010_000
    now[0] = 2_013.0
    write_marker(marker, False, True, 2_012_999)  # a backlog: the tick stays where it was
    assert reader.latestOffset()["tick"] == 1_010_000
    assert ClockReader(path).latestOffset()["tick"] == 100  # given no marker (the job's AvailableNow runs)
