"""Where the demo's output goes. In both modes this process's file descriptors 1 and 2 go to a log file, and so
do the JVM's, Kafka's, the Python workers' and every client library's output (they inherit them: Spark's WARN
lines, py4j's, the "Streaming TransformWithStateInPandas Python worker ..." messages); what the operator reads
goes to a copy of the original stdout kept aside: the live view (a terminal), or the line mode's lines (a pipe or
a file: `make demo | tee demo.log`), each said once. The log file gets the operator's lines too, between the rest.
"""
from __future__ import annotations

import os
import sys


class DemoOutput:
    """`with DemoOutput(log_path, live) as out:` everything else goes to `log_path`; `out.say(line)` is for the
    operator; `out.terminal` is the original stdout (the live view draws on it)."""

    def __init__(self, log_path: str, live: bool):
        self.log_path = log_path
        self.live = live
        self.terminal = None
        self._saved: tuple[int, int] | None = None

    def __enter__(self) -> "DemoOutput":
        sys.stdout.flush()
        sys.stderr.flush()
        self._saved = (os.dup(1), os.dup(2))
        self.terminal = os.fdopen(os.dup(1), "w", buffering=1)
        fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        return self

    def say(self, line: str) -> None:
        """A line for the operator: in the line mode on the original stdout; in the log file in both modes."""
        print(line, flush=True)
        if not self.live and self.terminal is not None:
            try:
                self.terminal.write(line + "\n")
                self.terminal.flush()
            except (BrokenPipeError, ValueError):  # the reader went away (`| head`): the log still has it
                pass

    def __exit__(self, *exc) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        if self._saved is not None:
            os.dup2(self._saved[0], 1)
            os.dup2(self._saved[1], 2)
            for fd in self._saved:
                os.close(fd)
            self._saved = None
        if self.terminal is not None:
            try:
                self.terminal.close()
            except BrokenPipeError:
                pass
            self.terminal = None
