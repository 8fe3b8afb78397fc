"""The JSON parser of the core's event parser is chosen in one visible place
(`decoding.json_parser.use_fastest_available`), called by the entry points that read at volume; importing the
decode room changes nothing."""
from __future__ import annotations

import subprocess
import sys

ROOM = ("rebalance_monitor.decoding", "rebalance_monitor.decoding.reference",
        "rebalance_monitor.decoding.event_columns", "rebalance_monitor.decoding.decoded_rows", "rebalance_monitor.decoding.json_parser",
        "rebalance_monitor.decoding.record_decoder", "rebalance_monitor.decoding.row_batches",
        "rebalance_monitor.decoding.wake_records", "rebalance_monitor.spark.processor")


def _run(code: str) -> list[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def test_importing_the_decode_room_leaves_the_core_s_parser_alone():
    imports = "; ".join(f"import {m}" for m in ROOM)
    out = _run(f"from rebalance_monitor.core import event_parsing as P; {imports}; print(P._fast_loads is None)")
    assert out == ["True"]


def test_use_fastest_available_registers_orjson_and_returns_the_previous_parser():
    import orjson  # noqa: F401 - a dependency of the package: its absence is a failure, not a skip

    out = _run("import orjson; from rebalance_monitor.core import event_parsing as P; "
               "from rebalance_monitor.decoding.json_parser import use_fastest_available; "
               "before = use_fastest_available(); again = use_fastest_available(); "
               "print(before is None, P._fast_loads is orjson.loads, again is orjson.loads)")
    assert out == ["True", "True", "True"]
