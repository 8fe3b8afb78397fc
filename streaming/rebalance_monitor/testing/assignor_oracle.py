"""Kafka's own assignor classes as the oracle of the project's assignors: one JVM running
scripts/java-oracle/RmAssignorOracle.java (compiled by scripts/fetch_kafka.sh against the pinned Kafka release)
answers `rebalance-monitor assign` cases one per line.

    with KafkaAssignorOracle() as oracle:
        oracle.assign({"assignor": "range", "partitions_per_topic": {...}, "members": [...]})
"""
from __future__ import annotations

import json
import subprocess
import threading

from ..core.assignors import ASSIGNOR_RELEASE
from .kafka_install import KafkaNotInstalled, java_binary, kafka_home

ORACLE_VERSION = ASSIGNOR_RELEASE  # the release whose assignors are the reference (docs/assignors.md)


class OracleError(RuntimeError):
    """Kafka's assignor raised (the case is one Kafka itself rejects), or the oracle process failed."""


class KafkaAssignorOracle:
    def __init__(self, version: str = ORACLE_VERSION):
        home = kafka_home(version)
        classes = home / "oracle-classes"
        if not (classes / "RmAssignorOracle.class").exists():
            raise KafkaNotInstalled(f"the assignor oracle is not compiled in {classes}: run scripts/bootstrap.sh")
        self.version = version
        self._cmd = [java_binary(), "-Xmx1g", "-XX:+UseSerialGC", "-Dslf4j.internal.verbosity=ERROR",
                     "-cp", f"{classes}:{home / 'libs'}/*", "RmAssignorOracle"]
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def start(self) -> "KafkaAssignorOracle":
        self._proc = subprocess.Popen(self._cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, bufsize=1)
        return self

    def _ask(self, line: str) -> dict:
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()
        reply = self._proc.stdout.readline()
        if not reply:
            raise OracleError(f"the oracle JVM exited ({self._proc.poll()})")
        return json.loads(reply)

    def assign(self, case: dict, warmup: int = 0, timed: bool = False) -> dict:
        """{member_id: [[topic, partition], ...]} as Kafka computes it (with "nanos" inside when `timed`)."""
        with self._lock:
            if warmup:
                self._proc.stdin.write(json.dumps({"warmup": warmup}) + "\n")
            reply = self._ask(json.dumps({**case, "time": True} if timed else case))
        if "error" in reply:
            raise OracleError(reply["error"])
        if timed:
            return {"result": reply["result"], "nanos": reply["nanos"]}
        return reply["result"]

    def close(self) -> None:
        if self._proc is not None:
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
