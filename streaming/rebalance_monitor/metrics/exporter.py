"""The HTTP endpoint Prometheus scrapes.

Endpoints:

* ``/metrics``: the text exposition (format 0.0.4) of :class:`~rebalance_monitor.metrics.updater.MetricsUpdater`
  (one Kafka cluster's), or of :class:`~rebalance_monitor.metrics.fleet_exposition.FleetMetrics` (several clusters'
  merged), gzip-compressed when the scraper accepts it (Prometheus does). Protected by basic auth when configured.
* ``/healthz``: 200 while the process lives (liveness).
* ``/ready``: 200 when the streaming job reported ready and its last batch is recent, else 503 with the reason
  on the body (readiness); of several clusters, 200 while one is ready, the body a line per cluster.
  ``/healthz`` and ``/ready`` carry no data and are not behind basic auth, so orchestrator probes work.

A small ``http.server`` of our own (prometheus_client's ``start_http_server`` has TLS but no basic auth).
TLS: ``tls_cert_file`` + ``tls_key_file`` (PEM); the handshake runs on the request's thread, so a slow client
does not block the listener. Binds 127.0.0.1 by default; set ``host="0.0.0.0"`` to expose it.
The password is never logged nor shown in ``repr``.
"""
from __future__ import annotations

import base64
import hmac
import logging
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .admission import DEFAULT_MAX_GROUPS
from .catalogue import DEFAULT_CLUSTER
from .fleet_exposition import FleetMetrics
from .updater import MetricsUpdater

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class ExporterSettings:
    host: str = "127.0.0.1"
    port: int = 9308                       # 0 picks a free port
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    basic_auth_user: str | None = None
    basic_auth_password: str | None = field(default=None, repr=False)
    max_groups: int = DEFAULT_MAX_GROUPS
    group_allow: str | None = None         # regex, full match; None = every group
    group_deny: str | None = None          # regex, full match; None = no group denied
    idle_group_ttl_s: float = 86400
    ready_max_age_s: float = 300.0         # /ready fails when the last batch is older than this
    gzip: bool = True                      # compress /metrics when the client accepts gzip
    lag_granularity: str = "partition"     # lag.granularity: partition | topic | group (lag_levels.py)
    cluster: str = DEFAULT_CLUSTER         # the kafka_cluster label's value of the updater make_updater makes

    def __post_init__(self) -> None:
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ValueError("exporter TLS needs both tls_cert_file and tls_key_file")
        if bool(self.basic_auth_user) != bool(self.basic_auth_password):
            raise ValueError("exporter basic auth needs both basic_auth_user and a password")

    @classmethod
    def from_config(cls, cfg) -> "ExporterSettings":
        """The settings of the configuration's ``exporter``, ``groups`` and ``lag`` sections (a loaded
        :class:`~rebalance_monitor.config.MonitorConfig`: its password already read from
        ``exporter.basic_auth_password_file`` or ``RM_EXPORTER_BASIC_AUTH_PASSWORD``)."""
        ex = cfg.exporter
        return cls(host=ex.host, port=ex.port, tls_cert_file=ex.tls_cert_file, tls_key_file=ex.tls_key_file,
                   basic_auth_user=ex.basic_auth_user, basic_auth_password=ex.basic_auth_password,
                   max_groups=cfg.groups.max_groups, group_allow=cfg.groups.allow, group_deny=cfg.groups.deny,
                   idle_group_ttl_s=int(ex.idle_group_ttl) / 1000.0,
                   ready_max_age_s=int(ex.ready_max_batch_age) / 1000.0, lag_granularity=cfg.lag.granularity,
                   cluster=cfg.kafka.cluster_name)

    def make_updater(self, **kw) -> MetricsUpdater:
        """An updater of these settings; ``cluster=`` (default :attr:`cluster`) names its Kafka cluster."""
        kw.setdefault("cluster", self.cluster)
        return MetricsUpdater(max_groups=self.max_groups, group_allow=self.group_allow, group_deny=self.group_deny,
                              idle_group_ttl_s=self.idle_group_ttl_s, ready_max_age_s=self.ready_max_age_s,
                              lag_granularity=self.lag_granularity, **kw)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, exporter: "MetricsExporter", ssl_context: ssl.SSLContext | None):
        self.exporter = exporter
        self.ssl_context = ssl_context
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, handler)

    def get_request(self):
        sock, addr = super().get_request()
        if self.ssl_context is not None:
            sock = self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = 30

    def handle(self) -> None:
        try:
            if isinstance(self.connection, ssl.SSLSocket):
                self.connection.do_handshake()
            super().handle()
        except (ssl.SSLError, ConnectionError, TimeoutError) as exc:
            log.debug("exporter connection from %s: %s", self.client_address[0], exc)

    def log_message(self, fmt, *args) -> None:   # no access log on stderr
        log.debug("exporter %s " + fmt, self.client_address[0], *args)

    def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8", extra=()) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _authorized(self) -> bool:
        s = self.server.exporter.settings
        if not s.basic_auth_user:
            return True
        h = self.headers.get("Authorization", "")
        if not h.startswith("Basic "):
            return False
        try:
            user, _, pw = base64.b64decode(h[6:].strip(), validate=True).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        ok_user = hmac.compare_digest(user.encode(), s.basic_auth_user.encode())
        ok_pw = hmac.compare_digest(pw.encode(), (s.basic_auth_password or "").encode())
        return ok_user and ok_pw

    def do_GET(self) -> None:   # noqa: N802 (http.server naming)
        exp = self.server.exporter
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._send(200, b"ok\n")
        elif path == "/ready":
            ready, why = exp.updater.readiness()
            if ready:
                self._send(200, b"ready\n" if why == "ready" else f"ready\n{why}\n".encode())
            else:
                self._send(503, f"not ready: {why}\n".encode())
        elif path == "/metrics":
            if not self._authorized():
                log.info("exporter: rejected /metrics request from %s (bad or missing credentials)",
                         self.client_address[0])
                self._send(401, b"unauthorized\n", extra=[("WWW-Authenticate", 'Basic realm="rebalance-monitor"')])
                return
            gzip_ok = exp.settings.gzip and "gzip" in self.headers.get("Accept-Encoding", "")
            body, encoding = exp.updater.render_bytes(gzip_ok)
            self._send(200, body, CONTENT_TYPE, [("Content-Encoding", encoding)] if encoding else [])
        elif path == "/":
            self._send(200, b"<html><body><h1>Kafka rebalance monitor</h1><p><a href=\"/metrics\">/metrics</a> "
                            b"<a href=\"/healthz\">/healthz</a> <a href=\"/ready\">/ready</a></p></body></html>\n",
                       "text/html; charset=utf-8")
        else:
            self._send(404, b"not found\n")

    do_HEAD = do_GET


class MetricsExporter:
    """Serves an updater (or several clusters' updaters as a :class:`FleetMetrics`) over HTTP(S) on a background
    thread: ``start()``, ``stop()``, ``url``. Without ``updater``, one of ``settings`` (``make_updater``)."""

    def __init__(self, settings: ExporterSettings | None = None,
                 updater: MetricsUpdater | FleetMetrics | None = None) -> None:
        self.settings = settings or ExporterSettings()
        self.updater = updater if updater is not None else self.settings.make_updater()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.settings.tls_cert_file else "http"

    @property
    def port(self) -> int:
        if self._server is None:
            return self.settings.port
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        host = self.settings.host
        if host in ("0.0.0.0", ""):
            host = "127.0.0.1"
        elif ":" in host:
            host = f"[{host}]"
        return f"{self.scheme}://{host}:{self.port}"

    def start(self) -> "MetricsExporter":
        if self._server is not None:
            return self
        ctx = None
        s = self.settings
        if s.tls_cert_file:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.load_cert_chain(s.tls_cert_file, s.tls_key_file)
        self._server = _Server((s.host, s.port), _Handler, self, ctx)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="metrics-exporter", daemon=True)
        self._thread.start()
        self.updater.set_up(True)
        log.debug("metrics exporter listening on %s (tls=%s, basic_auth_user=%s)", self.url, bool(ctx),
                 s.basic_auth_user or "-")
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self.updater.set_up(False)
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> "MetricsExporter":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
