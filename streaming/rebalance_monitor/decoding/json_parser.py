"""Which JSON parser the core's event parser uses: the one place that chooses it.

The core (core/event_parsing.py) imports only the standard library and parses with `json` unless a faster parser
is registered; what that parser refuses is parsed by `json` again, so events and rejects never depend on the choice
(tests/core/test_events.py). The entry points that read records at volume call `use_fastest_available()` once as
they set up: the Spark job's start (spark/job.py), `replay`, and each Python worker's decode stage and
stateful processor. Importing a module of the decode room changes nothing.
"""
from __future__ import annotations

from ..core.events import use_fast_json


def use_fastest_available():
    """Register orjson's `loads` with the core's event parser (when orjson is installed: a dependency of the
    package, absent only in a bare install, where `json` alone parses). Returns the parser it replaced."""
    try:
        from orjson import loads
    except ImportError:  # pragma: no cover - orjson is a dependency; without it the core's parser is `json` alone
        return None
    return use_fast_json(loads)
