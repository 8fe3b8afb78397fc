"""Kafka's own assignor classes as the oracle of the project's assignors: one JVM running
scripts/java-oracle/RmAssignorOracle.java against one Kafka release's jars answers `rebalance-monitor assign`
cases, one a line or many a line (`assign_many`, `submit` / `collect` to keep the JVM busy while Python works).

    with KafkaAssignorOracle() as oracle:                  # Kafka 4.4.0, the release of the tests' brokers
        oracle.assign({"assignor": "range", "partitions_per_topic": {...}, "members": [...]})
    with KafkaAssignorOracle("4.0.0") as oracle:           # 4.0.0's classes (its server assignors' rules)
        oracle.assign({"assignor": "uniform", "release": "4.0.0", ...})

Each release of ORACLE_RELEASES runs in its own JVM on its own class path, that release's jars alone
(var/kafka/<release>/libs, scripts/maven/kafka-*/pom.xml). The oracle is compiled here on first use against each, into
`var/oracle/<release>-<digest of its source>/` of the project, so a change to it never refetches Kafka and two
checkouts with different oracles never share classes.
"""
from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import zipfile
from collections import deque
from pathlib import Path

from ..core.assignors import ASSIGNOR_RELEASE, SERVER_ASSIGNOR_RELEASES
from .kafka_install import KafkaNotInstalled, java_binary, kafka_home, project_root

ORACLE_VERSION = ASSIGNOR_RELEASE  # the release whose assignors are the reference (docs/assignors.md)
# every release the oracle runs: the reference, and the older ones whose server assignor rules the project follows
ORACLE_RELEASES = tuple(dict.fromkeys((ORACLE_VERSION, *SERVER_ASSIGNOR_RELEASES)))
SOURCE_DIR = project_root() / "scripts" / "java-oracle"
STREAMS_TASK_ASSIGNOR_API = "org/apache/kafka/coordinator/group/api/streams/assignor/TaskAssignor.class"


class OracleError(RuntimeError):
    """Kafka's assignor raised (the case is one Kafka itself rejects), or the oracle process failed."""


def _javac() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "javac").exists():
        return str(Path(java_home) / "bin" / "javac")
    found = shutil.which("javac")
    if not found:
        raise KafkaNotInstalled("javac is needed to compile the assignor oracle: run scripts/bootstrap.sh")
    return found


def pinned_releases() -> list[str]:
    """The releases the oracle's source is written for (scripts/java-oracle/kafka-version, one a line)."""
    return (SOURCE_DIR / "kafka-version").read_text().split()


def oracle_libs(version: str = ORACLE_VERSION) -> Path:
    """The jars of `version` (var/kafka/<version>/libs, fetched by scripts/fetch_kafka.sh), one release's alone."""
    return kafka_home(version) / "libs"


def has_streams_task_assignor(version: str = ORACLE_VERSION) -> bool:
    """Whether `version`'s group coordinator has the streams task assignor API (KIP-1071) the streams group's
    oracle (scripts/java-oracle/streams/) is written for."""
    for jar in oracle_libs(version).glob("kafka-group-coordinator-api-*.jar"):
        with zipfile.ZipFile(jar) as z:
            if STREAMS_TASK_ASSIGNOR_API in z.namelist():
                return True
    return False


def oracle_classes(version: str = ORACLE_VERSION) -> Path:
    """The compiled oracle for `version` (compiling it when its source changed)."""
    pinned = pinned_releases()
    if version not in pinned:
        raise KafkaNotInstalled(f"the assignor oracle is written for Kafka {', '.join(pinned)}, not {version}")
    streams = sorted((SOURCE_DIR / "streams").glob("*.java"))
    sources = sorted(SOURCE_DIR.glob("*.java")) + streams
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources) + " ".join(pinned).encode()).hexdigest()[:16]
    out = project_root() / "var" / "oracle" / f"{version}-{digest}"
    if (out / "RmAssignorOracle.class").exists():
        return out
    libs = oracle_libs(version)
    if not has_streams_task_assignor(version):  # the streams group's oracle needs the release's streams assignor API
        sources = [p for p in sources if p not in streams]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    done = subprocess.run([_javac(), "-nowarn", "-d", str(tmp), "-cp", f"{libs}/*", *map(str, sources)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise KafkaNotInstalled(f"the assignor oracle does not compile:\n{done.stderr}")
    try:
        tmp.rename(out)
    except OSError:  # compiled by another process meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    return out


class KafkaAssignorOracle:
    def __init__(self, version: str = ORACLE_VERSION):
        classes = oracle_classes(version)
        self.version = version
        # Kafka's assignors log every assignment and every conflicting claim through log4j, which walks the stack for
        # each line's location: off (a third of the JVM's time on a typical case, most of it on some large ones)
        self._cmd = [java_binary(), "-Xmx1g", "-XX:+UseSerialGC", "-Dslf4j.internal.verbosity=ERROR",
                     "-Dorg.apache.logging.log4j.level=OFF",
                     "-cp", f"{classes}:{oracle_libs(version)}/*", "RmAssignorOracle"]
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._writes: queue.Queue = queue.Queue()
        self._writer: threading.Thread | None = None
        self._pending: deque = deque()

    def start(self) -> "KafkaAssignorOracle":
        self._proc = subprocess.Popen(self._cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, bufsize=1 << 16)
        # requests go out on their own thread: a big request and a big reply never wait on each other's pipe
        self._writer = threading.Thread(target=self._write_loop, name="assignor-oracle-writer", daemon=True)
        self._writer.start()
        return self

    def _write_loop(self) -> None:
        while True:
            line = self._writes.get()
            if line is None:
                return
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
            except (OSError, ValueError):
                return

    def _read(self) -> dict:
        reply = self._proc.stdout.readline()
        if not reply:
            raise OracleError(f"the oracle JVM exited ({self._proc.poll()})")
        return json.loads(reply)

    def assign(self, case: dict, warmup: int = 0, timed: bool = False) -> dict:
        """{member_id: [[topic, partition], ...]} as Kafka computes it (with "nanos" inside when `timed`)."""
        with self._lock:
            if self._pending:
                raise RuntimeError("assign() while batches are outstanding: collect() them first")
            if warmup:
                self._writes.put(json.dumps({"warmup": warmup}) + "\n")
            self._writes.put(json.dumps({**case, "time": True} if timed else case) + "\n")
            reply = self._read()
        if "error" in reply:
            raise OracleError(reply["error"])
        if timed:
            return {"result": reply["result"], "nanos": reply["nanos"]}
        return reply["result"]

    def timeline_order(self, ops: list[str]) -> list[str]:
        """The keys of a Kafka TimelineHashMap after the puts ("+key") and removes ("-key") of `ops`, in the order
        it iterates them."""
        with self._lock:
            if self._pending:
                raise RuntimeError("timeline_order() while batches are outstanding: collect() them first")
            self._writes.put(json.dumps({"timeline": ops}) + "\n")
            reply = self._read()
        if "error" in reply:
            raise OracleError(reply["error"])
        return reply["order"]

    def submit(self, line: str, n: int) -> None:
        """Send a batch already encoded (`encode_batch`) of `n` cases; `collect` answers batches in order."""
        self._pending.append(n)
        self._writes.put(line)

    def collect(self) -> tuple[list[dict], int, int]:
        """The oldest submitted batch's replies ({"result": ...} or {"error": ...} per case), the nanoseconds the JVM
        spent inside Kafka's assignors for it, and on the whole batch (its request parsed)."""
        n = self._pending.popleft()
        reply = self._read()
        if "results" not in reply or len(reply["results"]) != n:
            raise OracleError(f"the oracle answered a batch of {n} with {str(reply)[:300]}")
        return reply["results"], reply["nanos"], reply["busy_nanos"]

    def assign_many(self, cases: list[dict]) -> list[dict]:
        """One reply per case, {"result": {...}} or {"error": "..."}, in one round trip."""
        with self._lock:
            self.submit(encode_batch(cases), len(cases))
            return self.collect()[0]

    def cpu_seconds(self) -> float | None:
        """CPU time the JVM has used so far (Linux), None when unknown."""
        try:
            fields = Path(f"/proc/{self._proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError, AttributeError):
            return None

    def close(self) -> None:
        if self._proc is not None:
            self._writes.put(None)
            if self._writer is not None:
                self._writer.join(timeout=5)
            if self._pending or self._writer is not None and self._writer.is_alive():
                # answers nobody will read: a JVM blocked writing one would keep the writer blocked on its stdin,
                # holding the lock that closing stdin needs
                self._proc.kill()
                if self._writer is not None:
                    self._writer.join(timeout=10)
                self._pending.clear()
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait(timeout=10)
            self._proc = None

    def __enter__(self) -> "KafkaAssignorOracle":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def encode_batch(cases: list[dict]) -> str:
    return json.dumps({"batch": cases}, separators=(",", ":")) + "\n"
