"""The demo's output in line mode (stdout a pipe, as `make demo | tee demo.log`): the operator's lines, each once, and
nothing else; what Spark's JVM, its Python workers, py4j and stray prints write goes to the log file. Driven in a
process of its own with the demo's own plumbing (demo/output_routing.py DemoOutput, demo/view.py GroupBoard) and a child process
that writes to the descriptors it inherits, as the JVM does; the whole demo runs once, in
tests/demo/test_demo_terminal.py."""
from __future__ import annotations

import subprocess
import sys

from rebalance_monitor.demo.view import GroupBoard
from rebalance_monitor.metrics.docs import sample_records

SCRIPT = """
import logging, subprocess, sys
from rebalance_monitor.demo.output_routing import DemoOutput
from rebalance_monitor.demo.view import GroupBoard
from rebalance_monitor.metrics.docs import sample_records

logging.basicConfig(level=logging.WARNING)
board = GroupBoard()
with DemoOutput(sys.argv[1], live=False) as out:
    out.say("broker at 127.0.0.1:9")
    # what Spark's JVM and its Python workers write, on the descriptors they inherit
    subprocess.run(["sh", "-c", "echo '26/11/26 07:13:39 WARN MicroBatchExecution: Disabling AQE'; "
                    "echo 'Starting Streaming TransformWithStateInPandas Python worker.' >&2"], check=True)
    logging.getLogger("py4j.clientserver").warning("py4j: Exception while sending command")
    print("a library's stray print")
    board.on_records(0, sample_records(), [])
    for _ in range(20):  # ticks
        for line in board.take_new():
            out.say(line)
"""
CHATTER = ("WARN MicroBatchExecution", "TransformWithStateInPandas Python worker", "py4j", "stray print")


def test_line_mode_prints_the_operators_lines_once_and_sends_the_chatter_to_the_log(tmp_path):
    log = tmp_path / "demo.log"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(log)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    board = GroupBoard()
    board.on_records(0, sample_records(), [])
    expected = ["broker at 127.0.0.1:9"] + [line.split(" ", 1)[1] for line in board.take_new()]
    got = done.stdout.splitlines()
    assert [got[0]] + [line.split(" ", 1)[1] for line in got[1:]] == expected
    assert done.stderr == ""
    logged = log.read_text()
    for chatter in CHATTER:
        assert chatter not in done.stdout
        assert chatter in logged, chatter
    assert "broker at 127.0.0.1:9" in logged  # the log has the operator's lines too
