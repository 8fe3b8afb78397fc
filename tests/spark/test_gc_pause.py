"""The collector pause of the Python workers (spark/gc_pause.py) gives the collector back as it found it."""
from __future__ import annotations

import gc
import json

import pytest

from rebalance_monitor.spark.gc_pause import gc_paused


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
    from rebalance_monitor.spark.decode_stage import make_record_decoder

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
