"""A local S3-compatible server (moto's, from PyPI) on a free loopback port, with one bucket.

For the tests that need object storage: the job with its checkpoint, metrics snapshot and sinks on s3a://
(`hadoop_conf` gives the S3A settings that reach it; Hadoop's S3A classes come from var/spark-jars,
`s3a_jars`), and pyarrow's S3 client (`rebalance_monitor.history.reader.s3_options`).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field

from rebalance_monitor.testing.processes import ServiceUnavailable, free_port, stop_process_group, wait_http_ready


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

    def hadoop_conf(self, bucket: str | None = None) -> dict[str, str]:
        """The S3A settings (Hadoop configuration keys) for `bucket` on this server (per-bucket keys,
        `fs.s3a.bucket.<bucket>.*`, so that servers of different tests never share a setting; each test uses a
        bucket of its own, since Hadoop caches one S3A client per bucket)."""
        prefix = f"fs.s3a.bucket.{bucket or self.bucket}."
        return {prefix + k: v for k, v in {
            "endpoint": self.endpoint, "path.style.access": "true", "connection.ssl.enabled": "false",
            "endpoint.region": "us-east-1", "access.key": "test", "secret.key": "test",
            # moto's server (werkzeug) answers a PUT's `Expect: 100-continue` in a way the AWS SDK's async
            # (Netty) client reads as the final response (S3Exception, status 100), and S3A uploads a local file
            # (copyFromLocalFile: how Spark's RocksDB state store writes its files) with that client; the plain
            # write path of S3A (the sync client, expect-continue off) works with it. Real S3 needs neither.
            "optimized.copy.from.local.enabled": "false", "connection.expect.continue": "false"}.items()}

    def spark_conf(self, bucket: str | None = None) -> dict[str, str]:
        """`hadoop_conf` as Spark settings (`spark.hadoop.<key>`), e.g. for a job's `spark.conf`."""
        return {f"spark.hadoop.{k}": v for k, v in self.hadoop_conf(bucket).items()}

    def create_bucket(self, bucket: str) -> str:
        req = urllib.request.Request(f"{self.endpoint}/{bucket}", method="PUT")
        with urllib.request.urlopen(req, timeout=10) as r:
            if r.status != 200:
                raise ServiceUnavailable(f"could not create bucket {bucket}: HTTP {r.status}")
        return bucket

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
            self.create_bucket(self.bucket)
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


def s3a_jars(jars_dir: str) -> list[str]:
    """The jars of Hadoop's S3A file system in `jars_dir` (listed in its s3a-jars.txt by
    scripts/fetch_spark_jars.sh); none when they were not fetched."""
    try:
        with open(os.path.join(jars_dir, "s3a-jars.txt"), encoding="utf-8") as f:
            names = [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []
    return [os.path.join(jars_dir, n) for n in names if os.path.exists(os.path.join(jars_dir, n))]
