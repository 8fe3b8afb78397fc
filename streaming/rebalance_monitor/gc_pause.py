"""Python's cyclic garbage collector paused while a Spark task does its per-record work: the decode stage's
decoder (decoding/record_decoder.py) and the stateful processor (spark/processor.py). It sits below both rooms.

A read task builds a tuple per record and a stateful task a few objects per event; the collector's young
generation then runs every few hundred allocations, and its full collections walk every object the worker
holds (the runners of spark/runner_cache.py among them). Measured on the job's benchmark, that was about a
tenth of the workers' time. The per-record work makes no reference cycles that matter (what it builds is freed
by reference counting as it goes), so the collector is paused for the length of one chunk or one shard and
resumed after, when it collects whatever cycles there were as usual.

What a paused block built and no longer needs should be let go before the pause ends: the young collection
that follows walks every object still referenced then. The decoder once kept its last pack's rows (a tuple
per event of a whole read task) until after its pause, and that collection cost a tenth of the decode.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def gc_paused():
    """Pause the cyclic collector for the block (nested pauses resume it once, at the outermost end)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
