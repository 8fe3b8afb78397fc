"""`rebalance-monitor demo`: starts Apache Kafka with nothing configured, shows at least one rebalance with its
cause and a group's lag read from the broker, and on Ctrl-C stops everything, leaving no process behind."""
from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.integration]


def session_processes(sid: int) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid=,sid=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.split()[1] == str(sid)]


def test_demo_shows_a_rebalance_with_its_cause_and_ctrl_c_leaves_nothing_running(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "rebalance_monitor", "demo", "--no-live", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    lines: list[str] = []
    seen = None
    lag = None
    broker_port = None
    deadline = time.time() + 300
    try:
        while time.time() < deadline and (seen is None or lag is None):
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"broker at 127\.0\.0\.1:(\d+)", line)
            if m:
                broker_port = int(m.group(1))
            if re.search(r"generation \d+ of demo-\w+: \d+ members, .* caused by "
                         r"(member_joined|member_left|session_timeout|unknown)", line):
                seen = line
            if re.search(r"lag of demo-\w+: \d+ records", line):
                lag = line  # offset lag from the real broker's committed and log-end offsets
        assert seen, "no rebalance shown:\n" + "".join(lines[-40:])
        assert lag, "no lag shown:\n" + "".join(lines[-40:])
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        out, _ = proc.communicate(timeout=240)
        lines.append(out)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = "".join(lines)
    assert proc.returncode == 0, text[-3000:]
    assert "demo stopped; nothing left running" in text
    time.sleep(2)
    assert session_processes(proc.pid) == [], "processes of the demo are still running"
    assert broker_port is not None
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", broker_port), timeout=2).close()
