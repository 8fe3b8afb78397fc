"""A local S3-compatible server (moto's, from PyPI) on a free loopback port, with one bucket.

For the tests that need object storage (Spark checkpoints on s3a://).
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field

from .processes import ServiceUnavailable, free_port, stop_process_group, wait_http_ready


@dataclass
class ObjectStore:
    host: str = "127.0.0.1"
    port: int = 0
    bucket: str = "rebalance-monitor"
    log_path: str | None = None
    proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        """The settings an S3 client needs to reach this server."""
        return {"AWS_ENDPOINT": self.endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}

    def start(self, timeout_s: float = 30.0) -> "ObjectStore":
        if importlib.util.find_spec("moto") is None:  # pragma: no cover - depends on the environment
            raise ServiceUnavailable("durable broker storage needs moto[server]: "
                                    "pip install 'kafka-rebalance-monitor[test]'")
        if not self.port:
            self.port = free_port(self.host)
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", self.host, "-p", str(self.port)],
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_http_ready(self.proc, f"{self.endpoint}/moto-api/", timeout_s, "the S3 server",
                            lambda: self.log_path or "", ServiceUnavailable)
            req = urllib.request.Request(f"{self.endpoint}/{self.bucket}", method="PUT")
            with urllib.request.urlopen(req, timeout=10) as r:
                if r.status != 200:
                    raise ServiceUnavailable(f"could not create bucket {self.bucket}: HTTP {r.status}")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        stop_process_group(self.proc)
        self.proc = None

    def __enter__(self) -> "ObjectStore":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
