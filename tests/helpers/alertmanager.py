"""Start a real Alertmanager (Debian's /usr/bin/prometheus-alertmanager) for the tests, and a
Prometheus that sends its alerts to it.

    with AlertmanagerServer() as am, PrometheusWithAlertmanager(["127.0.0.1:9308"], alertmanager=am,
                                                                rule_files=rules) as prom:
        alert = am.wait_for_alert("KafkaConsumerGroupRebalanceStorm", {"group": "orders"})

Alertmanager listens on a free loopback port with clustering (gossip) disabled, keeps its data in a temporary
directory removed on stop, and routes everything to one receiver without integrations (alerts are visible in
its API). :func:`copy_rules_with_short_for` writes copies of rule files whose ``for:`` durations are
shortened, so an end-to-end test does not wait minutes for an alert to leave the pending state.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from rebalance_monitor.testing.prometheus import PrometheusServer
from rebalance_monitor.testing.processes import ServerProcess, free_port

BOOTSTRAP_HINT = "run scripts/bootstrap.sh (installs Debian's prometheus-alertmanager)"


class AlertmanagerUnavailable(RuntimeError):
    pass


def alertmanager_binary() -> str:
    path = (os.environ.get("ALERTMANAGER_BIN") or shutil.which("prometheus-alertmanager")
            or shutil.which("alertmanager") or "/usr/bin/prometheus-alertmanager")
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise AlertmanagerUnavailable(BOOTSTRAP_HINT)
    return path


DEFAULT_CONFIG = {
    "route": {"receiver": "test", "group_by": ["alertname"], "group_wait": "0s", "group_interval": "1s",
              "repeat_interval": "1h"},
    "receivers": [{"name": "test"}],
}


class AlertmanagerServer(ServerProcess):
    name = "alertmanager"
    unavailable = AlertmanagerUnavailable

    def __init__(self, config: dict | None = None, host: str = "127.0.0.1"):
        self.config = config or DEFAULT_CONFIG
        self.host = host
        self.port = 0
        self.dir: str | None = None
        self.proc: subprocess.Popen | None = None
        self._log = None

    @property
    def address(self) -> str:
        """host:port, as Prometheus' alerting configuration wants it."""
        return f"{self.host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> "AlertmanagerServer":
        binary = alertmanager_binary()
        self.make_dir()
        cfg = os.path.join(self.dir, "alertmanager.yml")
        with open(cfg, "w", encoding="utf-8") as f:
            yaml.safe_dump(self.config, f)
        self.port = free_port(self.host)
        self.launch([binary, f"--config.file={cfg}", f"--storage.path={os.path.join(self.dir, 'data')}",
                     f"--web.listen-address={self.address}", "--cluster.listen-address=", "--log.level=warn"],
                    timeout_s)
        return self

    # ---- API v2 ------------------------------------------------------------------------------------------------
    def alerts(self) -> list[dict]:
        """The alerts Alertmanager holds (``GET /api/v2/alerts``: active, silenced and inhibited ones)."""
        with urllib.request.urlopen(self.url + "/api/v2/alerts", timeout=10) as r:
            return json.loads(r.read())

    def find(self, alertname: str, labels: dict[str, str] | None = None) -> list[dict]:
        want = dict(labels or {}, alertname=alertname)
        return [a for a in self.alerts() if all(a["labels"].get(k) == v for k, v in want.items())]

    def wait_for_alert(self, alertname: str, labels: dict[str, str] | None = None, timeout_s: float = 30.0,
                       interval_s: float = 0.25) -> dict:
        """Poll until an alert with this name and labels is held; returns it. TimeoutError otherwise."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.find(alertname, labels)
            if found:
                return found[0]
            if time.monotonic() > deadline:
                names = sorted({a["labels"].get("alertname", "?") for a in self.alerts()})
                raise TimeoutError(f"no {alertname} {labels or {}} within {timeout_s}s; held: {names}")
            time.sleep(interval_s)

    def wait_until_gone(self, alertname: str, labels: dict[str, str] | None = None, timeout_s: float = 30.0,
                        interval_s: float = 0.25) -> None:
        """Poll until no unresolved alert with this name and labels is held (it resolved)."""
        deadline = time.monotonic() + timeout_s
        while self.find(alertname, labels):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{alertname} {labels or {}} still held after {timeout_s}s")
            time.sleep(interval_s)


class PrometheusWithAlertmanager(PrometheusServer):
    """:class:`PrometheusServer` that also sends its alerts to ``alertmanager``."""

    def __init__(self, targets: list[str] | None = None, *, alertmanager: AlertmanagerServer, **kw):
        super().__init__(targets, **kw)
        self.alertmanager = alertmanager

    def config(self) -> dict:
        cfg = super().config()
        cfg["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [self.alertmanager.address]}],
                                              "timeout": "2s"}]}
        return cfg


def copy_rules_with_short_for(rule_files: list[str | os.PathLike], out_dir: str | os.PathLike,
                              duration: str = "1s") -> list[str]:
    """Copies of ``rule_files`` in ``out_dir`` where every alert's ``for:`` is ``duration`` (default 1s), so
    alerts still go through pending but fire within seconds. Everything else is kept as written."""
    out = []
    for src in rule_files:
        doc = yaml.safe_load(Path(src).read_text(encoding="utf-8"))
        for group in doc.get("groups") or []:
            for rule in group.get("rules") or []:
                if "alert" in rule:
                    rule["for"] = duration
        dst = Path(out_dir) / Path(src).name
        dst.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        out.append(str(dst))
    return out
