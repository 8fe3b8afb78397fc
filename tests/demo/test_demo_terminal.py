"""`rebalance-monitor demo` in a real terminal (tmux), the one run of the whole demo in the suite: it starts
Apache Kafka with nothing configured; the screen holds the live view and nothing else (Spark's, Kafka's and the
clients' output go to the log file the view names), with times as clock times, a row per group with its last
rebalance's cause and its lag read from the broker; the Java group's stalled member (plain Java consumers watched
through the broker's KIP-714 plugin, demo/java.py) is warned about, then its poll timeout names it, and the line
mode's lines (which the live view's run writes to its log file) say the warning first; Ctrl-C stops everything and
leaves no process behind."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid

import pytest

pytestmark = [pytest.mark.integration]

GROUPS = ("demo-storm", "demo-crash", "demo-steady", "demo-java", "demo-streams", "demo-share")
# the demo watches two clusters: every group above on the first (`main`), and a group of the same name as one of
# them on the second, with its own members: a row of its own
SECOND = ("demo-steady", "second")
# each group's row names its type, as its records say it (the new group types from __consumer_offsets)
TYPED_ROWS = {"demo-streams": "streams", "demo-share": "share", "demo-java": "consumer|classic",
              "demo-crash": "classic|consumer"}
# the stalled Java member, named in its early warning (by client id and host once a generation's cause named them,
# else by its member id: the client id and a uuid) and in its poll timeout
JAVA_WARNING = re.compile(r"poll early warning in demo-java:\s+java-stall(@127\.0\.0\.1\s|-)")
JAVA_TIMEOUT = re.compile(r"poll timeout of\s+java-stall@127\.0\.0\.1\s+in\s+demo-java")
CRASH_TIMEOUT = re.compile(r"session timeout of (\S+) in demo-crash .*last seen (\d\d:\d\d:\d\d\.\d{3})")
CAUSE = re.compile(r"^\W*demo-\w+\b.*\b(member_joined|member_left|session_timeout)\b", re.M)


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30).stdout


def session_processes(sid: int) -> list[str]:
    """`pid sid args` of every process in session `sid` (the pane's shell leads its own session)."""
    out = subprocess.run(["ps", "-eo", "pid=,sid=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.split()[1] == str(sid)]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/bootstrap.sh installs it)")
def test_the_live_view_owns_the_terminal(tmp_path):
    from rebalance_monitor.testing import java_telemetry as jt

    jt.jar(jt.BROKER_JAR)  # the Java group runs with the plugin's jar (built when missing, as tests/java do)
    session = f"rm-demo-{uuid.uuid4().hex[:6]}"
    env = f"TMPDIR={tmp_path}"
    cmd = f"cd {os.getcwd()} && {env} {sys.executable} -m rebalance_monitor demo --port 0; echo DEMO-EXITED-$?; sleep 600"
    tmux("new-session", "-d", "-s", session, "-x", "180", "-y", "50", cmd)
    screens = []
    try:
        deadline = time.monotonic() + 400
        screen = ""
        while time.monotonic() < deadline:
            screen = tmux("capture-pane", "-p", "-t", session)
            screens.append(screen)
            rows = [g for g in GROUPS if re.search(rf"^\W*{g}\W+main\b", screen, re.M)]
            seen = "\n".join(screens)  # the panel keeps the last lines: the Java group's may have scrolled away
            typed = all(re.search(rf"^\W*{g}\W+main\W+({t})\b", screen, re.M) for g, t in TYPED_ROWS.items())
            # its row: type, state, and a generation reconstructed (not "None")
            second = re.search(rf"^\W*{SECOND[0]}\W+{SECOND[1]}\W+\w+\W+\w+\W+\d+\b", screen, re.M)
            if len(rows) == len(GROUPS) and typed and second and re.search(r"\d+ records", screen) \
                    and CRASH_TIMEOUT.search(seen) \
                    and CAUSE.search(screen) and JAVA_WARNING.search(seen) and JAVA_TIMEOUT.search(seen):
                break
            time.sleep(1.5)  # often enough that no line of the panels' last 12 (6 warnings and timeouts) scrolls by unseen
        # one header, one table, a row per group
        assert screen.count("rebalance-monitor demo") == 1, screen
        assert screen.count("consumer groups") == 1, screen
        for g in GROUPS:
            assert len(re.findall(rf"^\W*{g}\W+main\b", screen, re.M)) == 1, (g, screen)
        # the same group name on the second cluster: a row of its own, with its own generations
        assert len(re.findall(rf"^\W*{SECOND[0]}\W+{SECOND[1]}\b", screen, re.M)) == 1, screen
        assert len(re.findall(r"^\W*demo-\S+\W+(main|second)\b", screen, re.M)) == len(GROUPS) + 1, screen
        for g, t in TYPED_ROWS.items():   # a Kafka Streams application and a share group beside the others
            assert re.search(rf"^\W*{g}\W+main\W+({t})\b", screen, re.M), (g, screen)
        assert re.search(r"\d+ records", screen), screen        # lag from the real broker
        assert CAUSE.search(screen), screen                    # a group's last rebalance and what caused it
        # the crash scenario's session timeout, named by client id and host, at clock times (on a screen seen: the
        # panel keeps the last lines, and the Java group's may come after it)
        seen = "\n".join(screens)
        m = CRASH_TIMEOUT.search(seen)
        assert m and "crash-victim" in m.group(1), screen
        assert not re.search(r"\b1[0-9]{12}\b", screen), "epoch milliseconds on the screen"
        assert JAVA_WARNING.search(seen) and JAVA_TIMEOUT.search(seen), screen  # the Java member, warned, then out
        # nothing but the view: no log lines of Spark, Kafka or the clients on any screen seen
        stray = re.compile(r"\b(WARN|INFO|ERROR|DEBUG)\b|Python worker|log4j|Exception|Traceback")
        for seen in screens:
            assert not stray.search(seen), seen
        log = re.search(r"Spark, Kafka and client logs: (\S+)", screen)
        assert log, screen
        shell = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())
        tmux("send-keys", "-t", session, "C-c")
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and "DEMO-EXITED" not in screen:
            time.sleep(2)
            screen = tmux("capture-pane", "-p", "-S", "-100", "-t", session)
        assert "DEMO-EXITED-0" in screen, screen
        assert "nothing left running" in screen, screen
        logged = open(log.group(1), errors="replace").read()
        assert "INFO" in logged or "WARN" in logged  # what Spark and Kafka said went to the log file
        # the line mode's lines, in the log file: the stalled member's early warning before its poll timeout
        lines = logged.splitlines()
        warned = [i for i, line in enumerate(lines) if JAVA_WARNING.search(line)]
        timed_out = [i for i, line in enumerate(lines) if JAVA_TIMEOUT.search(line)]
        assert warned and timed_out and warned[0] < timed_out[0], [lines[i] for i in warned + timed_out]
        assert re.match(r"\d\d:\d\d:\d\d\.\d{3} poll early warning", lines[warned[0]]), lines[warned[0]]
        # nothing of the demo is left: in the pane's session only its shell and the `sleep` after the demo remain
        time.sleep(2)
        left = [p for p in session_processes(shell) if int(p.split()[0]) != shell and "sleep 600" not in p]
        assert left == [], "processes of the demo are still running"
        broker = re.search(r"broker at 127\.0\.0\.1:(\d+)", logged)
        assert broker, logged[-2000:]
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", int(broker.group(1))), timeout=2).close()
    finally:
        tmux("kill-session", "-t", session)
