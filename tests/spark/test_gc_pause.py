"""The collector pause of the Python workers (gc_pause.py) gives the collector back as it found it."""
from __future__ import annotations

import gc
import json

import pytest

from rebalance_monitor.gc_pause import gc_paused


def test_the_pause_nests_and_resumes_once_at_the_outermost_end_even_after_an_error():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner end does not resume it
    assert gc.isenabled()
    with pytest.raises(ValueError):
        with gc_paused():
            raise ValueError("a task failed")
    assert gc.isenabled()


def test_a_collector_already_off_stays_off():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_decoding_task_pauses_the_collector_for_its_length_and_gives_it_back_when_stopped_early():
    from rebalance_monitor.decoding.record_decoder import make_record_decoder

    def chunks():
        for i in range(3):
            yield [("ev", 0, i, None, None, json.dumps({"v": 1, "type": "poll", "ts": 1_700_000_000_000 + i,
                                                         "group": "g", "member_id": "m"}).encode())]

    decode = make_record_decoder({"ev": "events"}, 1 << 20, 10 ** 12, pack_records=1)(chunks())
    first = next(decode)  # the task is under way: one packed batch handed on, more to come
    assert first.num_rows and not gc.isenabled()
    decode.close()  # Spark stops reading the task's iterator (a failure elsewhere, a cancelled job)
    assert gc.isenabled()
    assert len(list(make_record_decoder({"ev": "events"}, 1 << 20, 10 ** 12, pack_records=1)(chunks()))) == 3
    assert gc.isenabled()


@pytest.mark.parametrize("pack_records", [0, 250, 10 ** 6])
def test_a_decoding_task_lets_its_rows_go_before_the_collector_resumes(monkeypatch, pack_records):
    """The decoded rows of a pack (a tuple per event) are garbage once packed. Still referenced when the pause
    ends, they were walked by the young collection that follows, for nothing: a tenth of the decode's time
    with a whole read task in one pack (measured on the job's benchmark)."""
    import rebalance_monitor.decoding.record_decoder as record_decoder
    from contextlib import contextmanager

    from rebalance_monitor.decoding.record_decoder import make_record_decoder
    from rebalance_monitor.decoding.decoded_rows import PACK_COLUMNS

    left: list[int] = []

    @contextmanager
    def paused_and_counted():
        with gc_paused():
            yield
            left.append(sum(type(o) is tuple and len(o) == len(PACK_COLUMNS) for o in gc.get_objects(generation=0)))

    monkeypatch.setattr(record_decoder, "gc_paused", paused_and_counted)
    records = [("ev", 0, i, None, None, json.dumps({"v": 1, "type": "heartbeat", "ts": 1_700_000_000_000 + i,
                                                    "group": f"g{i % 7}", "member_id": f"m{i % 5}",
                                                    "generation": 1, "error": None}).encode())
               for i in range(2000)]
    gc.collect()
    batches = list(make_record_decoder({"ev": "events"}, 1 << 20, 10 ** 12, pack_records=pack_records)(
        records[i:i + 100] for i in range(0, len(records), 100)))
    assert sum(b.num_rows for b in batches) > len(batches) and left
    assert left == [0]  # of 2,000 rows (the code before left every row of the last pack)
