"""Start a real Prometheus server (Debian's /usr/bin/prometheus) for tests and demos.

    with PrometheusServer(targets=["127.0.0.1:9308"]) as prom:
        prom.wait_for("rebalance_monitor_up", lambda r: r and r[0]["value"][1] == "1")
        prom.query("sum(kafka_consumergroup_lag)")

It listens on a free loopback port, scrapes the given targets every second (``scrape_interval``),
evaluates the given rule files every second, keeps its TSDB in a temporary directory removed on stop, and
runs with ``--web.enable-lifecycle``.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

import yaml

from .processes import ServerProcess, free_port

BOOTSTRAP_HINT = "run scripts/bootstrap.sh (installs Debian's prometheus)"


class PrometheusUnavailable(RuntimeError):
    pass


def prometheus_binary() -> str:
    path = os.environ.get("PROMETHEUS_BIN") or shutil.which("prometheus") or "/usr/bin/prometheus"
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise PrometheusUnavailable(BOOTSTRAP_HINT)
    return path


class PrometheusServer(ServerProcess):
    name = "prometheus"
    unavailable = PrometheusUnavailable

    def __init__(self, targets: list[str] | None = None, *, job: str = "rebalance-monitor", scrape_interval: str = "1s",
                 scheme: str = "http", basic_auth: tuple[str, str] | None = None, tls_insecure: bool = False,
                 rule_files: list[str] | None = None, host: str = "127.0.0.1", extra_args: list[str] | None = None):
        self.targets = list(targets or [])
        self.job = job
        self.scrape_interval = scrape_interval
        self.scheme = scheme
        self.basic_auth = basic_auth
        self.tls_insecure = tls_insecure
        self.rule_files = [os.path.abspath(p) for p in (rule_files or [])]
        self.host = host
        self.port = 0
        self.extra_args = list(extra_args or [])
        self.dir: str | None = None
        self.proc: subprocess.Popen | None = None

    def config(self) -> dict:
        scrape = {"job_name": self.job, "scrape_interval": self.scrape_interval, "scrape_timeout": "900ms"
                  if self.scrape_interval == "1s" else "10s",
                  "scheme": self.scheme, "static_configs": [{"targets": self.targets}]}
        if self.basic_auth:
            assert self.dir is not None
            pw_file = os.path.join(self.dir, "scrape-password")
            with open(pw_file, "w", encoding="utf-8") as f:
                f.write(self.basic_auth[1])
            os.chmod(pw_file, 0o600)
            scrape["basic_auth"] = {"username": self.basic_auth[0], "password_file": pw_file}
        if self.tls_insecure:
            scrape["tls_config"] = {"insecure_skip_verify": True}
        cfg = {"global": {"scrape_interval": self.scrape_interval, "evaluation_interval": self.scrape_interval},
               "scrape_configs": [scrape]}
        if self.rule_files:
            cfg["rule_files"] = self.rule_files
        return cfg

    def start(self, timeout_s: float = 30.0) -> "PrometheusServer":
        binary = prometheus_binary()
        self.make_dir()
        cfg_path = os.path.join(self.dir, "prometheus.yml")
        with open(cfg_path, "w", encoding="utf-8") as f:
            yaml.safe_dump(self.config(), f)
        self.port = free_port(self.host)
        self.launch([binary, f"--config.file={cfg_path}", f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
                     f"--web.listen-address={self.host}:{self.port}", "--web.enable-lifecycle",
                     "--storage.tsdb.retention.time=1h", "--log.level=warn", *self.extra_args], timeout_s)
        return self

    # ---- HTTP API ------------------------------------------------------------------------------------------
    def api(self, path: str, params: dict | None = None, timeout: float = 10.0) -> dict:
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=timeout) as r:
            body = json.loads(r.read())
        if body.get("status") != "success":
            raise RuntimeError(f"prometheus API {path}: {body}")
        return body["data"]

    def query(self, promql: str) -> list[dict]:
        """Instant query; returns the result list (``[{"metric": {...}, "value": [ts, "v"]}, ...]``)."""
        data = self.api("query", {"query": promql})
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def values(self, promql: str, key: str | tuple[str, ...] | None = None) -> dict:
        """Instant query as ``{label value (or tuple of them): float}``; key None -> the whole label dict frozen."""
        out = {}
        for r in self.query(promql):
            m = r["metric"]
            if key is None:
                k = tuple(sorted(m.items()))
            elif isinstance(key, str):
                k = m.get(key)
            else:
                k = tuple(m.get(x) for x in key)
            out[k] = float(r["value"][1])
        return out

    def targets_health(self) -> list[dict]:
        return self.api("targets")["activeTargets"]

    def wait_for(self, promql: str, predicate: Callable[[list[dict]], bool], timeout_s: float = 30.0,
                 interval_s: float = 0.5) -> list[dict]:
        """Poll ``promql`` until ``predicate(result)`` holds; raises TimeoutError with the last result."""
        deadline = time.monotonic() + timeout_s
        last: list[dict] = []
        while True:
            last = self.query(promql)
            if predicate(last):
                return last
            if time.monotonic() > deadline:
                raise TimeoutError(f"{promql!r} did not satisfy the condition within {timeout_s}s; "
                                   f"last result {last}; targets {self.targets_health()}")
            time.sleep(interval_s)


@contextlib.contextmanager
def serve_registry(registry):
    """A prometheus_client registry served on a free loopback port for as long as the block runs; yields the
    scrape target `host:port` (stand-in exporters of the rule and dashboard tests)."""
    from prometheus_client import start_http_server

    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
