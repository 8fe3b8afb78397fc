"""How the Spark driver's JVM is launched when PySpark starts it (`run`, `demo`, the tests' session): with SIGTERM
ignored, and with its output (stdout and stderr, its own and that of the Python workers it starts) read line by
line into the monitor's log instead of written straight to the terminal.

Each line becomes a record of the logger `spark` (`JVM_LOGGER`): a log4j line (Spark's console pattern,
`yy/MM/dd HH:mm:ss LEVEL Logger: message`) at its own level when that level is at least `logging.spark_level`,
else at DEBUG; the lines that follow one (a stack trace) at the same level; any other line (the JVM's own
"WARNING: Using incubator modules", Spark's "Using Spark's default log4j profile", a Python worker's prints) at
DEBUG. So at INFO `run` prints only what the monitor says, an ERROR of Spark's still shows, and the rest is one
setting away. Secrets are redacted from these lines as from every other (logs.RedactSecrets).

A JVM the monitor did not launch (spark-submit's driver, the Spark operator's driver pod, a cluster's executors)
keeps its own output and log4j settings.
"""
from __future__ import annotations

import contextlib
import logging
import re
import signal
import subprocess
import threading
from typing import IO

JVM_LOGGER = "spark"
SPARK_LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")  # logging.spark_level's allowed values, log4j's names
# Spark's console pattern (log4j2-defaults.properties): "%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n"
LOG4J_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ")
# the lines of a stack trace after its log4j line: the exception ("java.lang.IllegalStateException: ..."), its
# frames, "Caused by:", "Suppressed:", "... 12 more"
CONTINUATION = re.compile(r"^(\s|Caused by:|Suppressed:|\.\.\. \d+ more|[a-z][\w$]*(\.[\w$]+)+(: |$))")
PYTHON_LEVEL = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
                "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}


def jvm_log_level(spark_level: str) -> str:
    """The level the JVM's own log4j root logger runs at: WARN, or lower when `spark_level` asks for more (the
    JVM then formats fewer lines that would only be dropped here)."""
    return spark_level if spark_level in ("DEBUG", "INFO") else "WARN"


class JvmOutput:
    """Reads a JVM's output stream on a daemon thread and logs each line (see the module's doc)."""

    def __init__(self, stream: IO[bytes], spark_level: str = "ERROR", logger: logging.Logger | None = None):
        self.stream = stream
        self.threshold = PYTHON_LEVEL[spark_level]
        self.log = logger or logging.getLogger(JVM_LOGGER)
        self.lines = 0
        self._level = logging.DEBUG
        self._thread = threading.Thread(target=self._pump, name="spark-jvm-output", daemon=True)

    def start(self) -> "JvmOutput":
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def level_of(self, line: str) -> int:
        """The Python level `line` is logged at (and remembered for the lines of a stack trace after it)."""
        m = LOG4J_LINE.match(line)
        if m:
            level = PYTHON_LEVEL[m.group(1)]
            self._level = level if level >= self.threshold else logging.DEBUG
        elif not CONTINUATION.match(line):
            self._level = logging.DEBUG
        return self._level

    def _pump(self) -> None:
        try:
            for raw in iter(self.stream.readline, b""):
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if not line:
                    continue
                self.lines += 1
                self.log.log(self.level_of(line), "%s", line)
        except (OSError, ValueError):  # the stream closed under us: the JVM is gone
            pass


@contextlib.contextmanager
def launched_jvm(spark_level: str = "ERROR"):
    """While this is open, a JVM that PySpark launches starts with SIGTERM ignored and its output read into the
    log (JvmOutput). SIGTERM: PySpark already starts it with SIGINT ignored; a SIGTERM to the job's whole process
    group (a terminal's, systemd's or a container runtime's stop) then reaches the Python driver alone, which
    stops the query, the poller, the exporter and Spark in that order (run.py); otherwise the JVM's shutdown hook
    stops the SparkContext under the running query at the same moment (Java stack traces, py4j's connection
    refused). The JVM still exits when the driver goes away (PySpark's gateway ends on its stdin's end), and a
    SIGKILL still kills it. The Python workers it starts without PySpark's daemon (the streaming source's runner)
    inherit the ignored SIGTERM, so they too outlive a SIGTERM to the group until the stop; they end when Spark
    closes their connection. The daemon's workers set their own. PySpark pinned at 4.2.0 launches the gateway
    with `pyspark.java_gateway.Popen` and learns the gateway's port from a file, not from the JVM's output; the
    process tests stop the job this way (tests/reliability/test_unreachable_kafka.py)."""
    from pyspark import java_gateway

    popen = java_gateway.Popen

    def launch(*args, **kwargs):
        theirs = kwargs.get("preexec_fn")

        def preexec():
            if theirs is not None:
                theirs()
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

        kwargs["preexec_fn"] = preexec
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.STDOUT)
        proc = popen(*args, **kwargs)
        if proc.stdout is not None:
            proc.jvm_output = JvmOutput(proc.stdout, spark_level).start()
        return proc

    java_gateway.Popen = launch
    try:
        yield
    finally:
        java_gateway.Popen = popen


def end_session(spark, timeout_s: float = 30.0) -> None:
    """Stop `spark`, then end the driver JVM that PySpark launched for it and wait for it: its gateway is shut,
    its stdin closed (on which it exits), and it is SIGKILLed after `timeout_s`. PySpark's own stop leaves that
    JVM running until the Python process exits; it then ends on its own, an orphan that only the system's init
    reaps (a stopped `run` or `demo` would leave a process behind for a moment, tests/demo/test_demo_terminal.py).
    A JVM PySpark did not launch (spark-submit's driver) is left to its launcher."""
    from pyspark import SparkContext

    spark.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    if proc is None:
        return
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - py4j's connection may already be gone; the process is what matters
        pass
    SparkContext._gateway = None
    SparkContext._jvm = None
    try:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    output = getattr(proc, "jvm_output", None)
    if output is not None:
        output.join(timeout=5)
