"""A real Spark standalone cluster for the tests: a master and N workers, each its own JVM started from the classes
PySpark ships (`pyspark/bin/spark-class`), on loopback ports, with work directories under one root; and
`spark-submit` in client mode against it. Executors run in their own JVMs (started by the workers) with their own
Python workers, as on a real cluster.

    with StandaloneCluster(root, workers=2) as cluster:
        proc = cluster.submit(["deploy/spark_main.py", "run", "--config", cfg], jars=[...], log_path=...)
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from .processes import free_port, stop_process_group


class SparkClusterError(RuntimeError):
    pass


def spark_home() -> Path:
    """PySpark's own Spark distribution (bin/spark-class, bin/spark-submit, jars/)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _loopback_env(extra: dict | None = None) -> dict:
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_MASTER_HOST": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.update(extra or {})
    return env


class StandaloneCluster:
    def __init__(self, root: str | os.PathLike, workers: int = 2, cores_per_worker: int = 1,
                 memory_per_worker: str = "1g"):
        self.root = Path(root)
        self.workers = workers
        self.cores = cores_per_worker
        self.memory = memory_per_worker
        self.port = free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self._procs: list[subprocess.Popen] = []
        self._logs: list[Path] = []

    # --- life cycle ----------------------------------------------------------------------------
    def _start(self, name: str, cls: str, args: list[str]) -> subprocess.Popen:
        log = self.root / f"{name}.log"
        self._logs.append(log)
        with open(log, "ab") as out:
            proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), cls, *args], stdout=out,
                                    stderr=subprocess.STDOUT, env=_loopback_env(), start_new_session=True,
                                    cwd=str(self.root))
        self._procs.append(proc)
        return proc

    def start(self, timeout_s: float = 90.0) -> "StandaloneCluster":
        self.root.mkdir(parents=True, exist_ok=True)
        master = self._start("master", "org.apache.spark.deploy.master.Master",
                             ["--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(free_port())])
        self._wait_log(self.root / "master.log", r"I have been elected leader", master, timeout_s)
        for i in range(self.workers):
            work = self.root / f"worker-{i}"
            work.mkdir(exist_ok=True)
            self._start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker",
                        ["--host", "127.0.0.1", "--webui-port", str(free_port()), "--cores", str(self.cores),
                         "--memory", self.memory, "--work-dir", str(work), self.master_url])
        deadline = time.monotonic() + timeout_s
        while len(re.findall(r"Registering worker", (self.root / "master.log").read_text(errors="replace"))) \
                < self.workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self._procs):
                raise SparkClusterError(f"workers did not register with {self.master_url}: {self.log_tail()}")
            time.sleep(0.3)
        return self

    def _wait_log(self, log: Path, pattern: str, proc: subprocess.Popen, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SparkClusterError(f"{log.stem} exited with code {proc.returncode}: {self.log_tail()}")
            if log.exists() and re.search(pattern, log.read_text(errors="replace")):
                return
            time.sleep(0.3)
        raise SparkClusterError(f"{log.stem} not ready within {timeout_s}s: {self.log_tail()}")

    def log_tail(self, n: int = 1500) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-n:]}" for p in self._logs if p.exists())

    def stop(self) -> None:
        for proc in reversed(self._procs):  # workers (and their executors) first, then the master
            stop_process_group(proc)
        self._procs.clear()

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- applications --------------------------------------------------------------------------
    def submit(self, args: list[str], *, jars: list[str] = (), conf: dict | None = None,
               log_path: str | os.PathLike, cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """`spark-submit --master <this cluster> --deploy-mode client [--jars ...] ARGS` as its own process
        group (the driver: spark-submit's JVM and the Python program it runs). The driver's JVM starts with the
        default `spark.jit` options, as docs/operations.md tells spark-submit users to do."""
        from ..spark.session import JIT_OPTIONS

        cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", self.master_url, "--deploy-mode", "client",
               "--driver-java-options", JIT_OPTIONS["quick"],
               "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
               "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.ui.enabled=false"]
        if jars:
            cmd += ["--jars", ",".join(str(j) for j in jars)]
        for key, value in (conf or {}).items():
            cmd += ["--conf", f"{key}={value}"]
        with open(log_path, "ab") as out:
            return subprocess.Popen([*cmd, *args], stdout=out, stderr=subprocess.STDOUT, env=_loopback_env(),
                                    start_new_session=True, cwd=str(cwd or self.root))

    def executor_pids(self) -> list[int]:
        """Process ids of the executor JVMs this cluster's workers started (CoarseGrainedExecutorBackend)."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in cmdline and self._ours(entry):
                pids.append(int(entry.name))
        return sorted(set(pids))

    def _ours(self, entry: Path) -> bool:
        """Started by one of this cluster's workers (spark-class execs the worker's JVM: same pid)."""
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        return ppid in {p.pid for p in self._procs}

    @staticmethod
    def kill(pid: int) -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
