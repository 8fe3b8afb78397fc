"""This process's descendants from /proc (Linux): CPU time and memory of the JVM and Spark's Python workers,
for the benchmarks and the soak."""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass
class Proc:
    pid: int
    ppid: int
    cmd: bytes
    cpu_s: float  # user + system so far
    rss_mb: float


def process_table() -> dict[int, Proc]:
    hz = os.sysconf("SC_CLK_TCK")
    page_mb = os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        out[int(d)] = Proc(int(d), int(fields[1]), cmd, (int(fields[11]) + int(fields[12])) / hz,
                           int(fields[21]) * page_mb)
    return out


def descendants(root: int | None = None) -> list[Proc]:
    """The live processes under `root` (default: this process)."""
    table = process_table()
    mine, frontier = set(), {os.getpid() if root is None else root}
    while frontier:
        frontier = {p.pid for p in table.values() if p.ppid in frontier and p.pid not in mine}
        mine |= frontier
    return [table[p] for p in mine]


KINDS = (("executor JVM", b"CoarseGrainedExecutorBackend"), ("driver JVM", b"org.apache.spark.deploy.SparkSubmit"),
         ("cluster daemons", b"org.apache.spark.deploy."), ("Python workers", b"pyspark.daemon"),
         ("Python workers", b"pyspark.worker"), ("driver Python", b"rebalance_monitor"),
         ("driver Python", b"spark_main.py"))


def kind_of(cmd: bytes) -> str | None:
    """The kind of a Spark job's process (KINDS) by its command line; None for any other."""
    for name, needle in KINDS:
        if needle in cmd:
            return name
    return None


class PeakRss:
    """While open, samples the resident memory of this process's descendants of `kinds` (KINDS' names) every
    `every_s` and keeps the highest sum seen (`peak_mb`). Pages a forked Python worker shares with its parent
    count in both, so the figure is an upper bound."""

    def __init__(self, kinds=("driver JVM", "executor JVM", "Python workers"), every_s: float = 0.5):
        import threading

        self.kinds = set(kinds)
        self.every_s = every_s
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-rss", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = sum(p.rss_mb for p in descendants() if kind_of(p.cmd) in self.kinds)
            self.peak_mb = max(self.peak_mb, now)
            self._stop.wait(self.every_s)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
