"""The test process's longest garbage-collector pauses, named by the test that was running (pytest plugin).

The suite's process hosts the clients of the end-to-end scenarios and the Spark driver's Python side at once; a
full collection walks every object the session holds, and while it runs no client thread records or sends an
event. The longest pauses are listed at the end of the run, so that a test that failed on a late event can be
told from one that failed on the monitor."""
from __future__ import annotations

import gc
import time

import pytest

SHOWN = 5
_pauses: list[tuple[float, int, str]] = []
_state = {"t0": None, "test": "(collection)"}


def _callback(phase: str, info: dict) -> None:
    if phase == "start":
        _state["t0"] = time.perf_counter()
    elif _state["t0"] is not None:
        took = time.perf_counter() - _state["t0"]
        _state["t0"] = None
        if took >= 0.05:
            _pauses.append((took, info.get("generation", -1), _state["test"]))
            _pauses.sort(reverse=True)
            del _pauses[SHOWN:]


def pytest_configure(config):
    gc.callbacks.append(_callback)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _state["test"] = item.nodeid
    return (yield)


def pytest_terminal_summary(terminalreporter):
    if _pauses:
        terminalreporter.write_line("longest garbage-collector pauses of the test process: " + "; ".join(
            f"{took:.2f} s (generation {gen}) in {test}" for took, gen, test in _pauses))
