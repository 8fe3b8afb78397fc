"""Life cycle of the servers the tests and the demo start (broker, S3 server, Prometheus, Alertmanager): a free
port to start one on, wait until a child answers, stop its whole process group, the error of a server that
could not be started, and `ServerProcess`, the one life cycle of an HTTP server binary (Prometheus, Alertmanager)."""
from __future__ import annotations

import os
import signal
import socket
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request


class ServiceUnavailable(RuntimeError):
    """A local server (broker, S3 server, ...) could not be started or did not answer in time."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the OS's pick), for a server about to start."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def stop_process_group(proc: subprocess.Popen | None, timeout_s: float = 10.0) -> None:
    """SIGTERM the child's process group (it was started with start_new_session), SIGKILL if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def stop_process_groups(procs: list, timeout_s: float = 10.0) -> None:
    """`stop_process_group` for several children at once: SIGTERM to all, then one shared grace period (nodes of a
    cluster that wait on each other while shutting down stop together instead of one timeout after another)."""
    live = [p for p in procs if p is not None and p.poll() is None]
    for p in live:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout_s
    for p in live:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=5)


def wait_http_ready(proc: subprocess.Popen, url: str, timeout_s: float, name: str, log_tail, error) -> None:
    """Poll `url` until it answers 200; raise `error` with the log tail if the child exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise error(f"{name} exited with code {proc.returncode}: {log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise error(f"{name} not ready within {timeout_s}s: {log_tail()}")


class ServerProcess:
    """An HTTP server binary run for the tests and the demo (Prometheus, Alertmanager): its files in a temporary
    directory of its own (`<name>-test-*`, removed on stop), its output in `<name>.log` there, ready once
    `/-/ready` answers 200, stopped with its whole process group. A subclass's `start` calls `make_dir`, writes its
    configuration there, picks `port` and calls `launch` with its command line; `unavailable` is its error."""

    name = "server"
    unavailable: type[Exception] = ServiceUnavailable
    host = "127.0.0.1"
    port = 0
    dir: str | None = None
    proc: subprocess.Popen | None = None
    _log = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def make_dir(self) -> str:
        self.dir = tempfile.mkdtemp(prefix=f"{self.name}-test-")
        return self.dir

    def launch(self, argv: list[str], timeout_s: float) -> None:
        """Start `argv` (output to the log, a session of its own) and wait until it is ready; on failure stop it
        and raise `unavailable` with the log's tail."""
        assert self.dir is not None
        self._log = open(os.path.join(self.dir, f"{self.name}.log"), "wb")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_http_ready(self.proc, self.url + "/-/ready", timeout_s, self.name, self.log_tail, self.unavailable)
        except self.unavailable:
            self.stop()
            raise

    def start(self, timeout_s: float = 30.0) -> "ServerProcess":
        raise NotImplementedError

    def log_tail(self, n: int = 2000) -> str:
        if not self.dir:
            return ""
        try:
            with open(os.path.join(self.dir, f"{self.name}.log"), "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        stop_process_group(self.proc)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
