"""The exporter's HTTP endpoints, over real sockets on loopback."""
import base64
import gzip
import logging
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest

from rebalance_monitor.config import load_config
from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter

from helpers.exposition import parse, value


def get(url, headers=None, context=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.fixture()
def exporter():
    exp = MetricsExporter(ExporterSettings(port=0)).start()
    yield exp
    exp.stop()


def test_metrics_healthz_ready(exporter):
    assert exporter.url.startswith("http://127.0.0.1:")
    exporter.updater.apply([{"kind": "group_status", "group": "g", "state": "Stable", "members": 3}])
    code, headers, body = get(exporter.url + "/metrics")
    assert code == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    s = parse(body.decode())
    assert value(s, "kafka_consumergroup_members", group="g") == 3
    assert value(s, "rebalance_monitor_up") == 1
    assert get(exporter.url + "/healthz")[0] == 200
    code, _, body = get(exporter.url + "/ready")
    assert code == 503 and body == b"not ready: the streaming job has not started yet\n"
    exporter.updater.set_ready(True)
    exporter.updater.record_batch(1, {"events": 1})
    assert get(exporter.url + "/ready")[:3:2] == (200, b"ready\n")
    exporter.updater.set_ready(False, "the history sink failed: disk full")
    assert get(exporter.url + "/ready")[:3:2] == (503, b"not ready: the history sink failed: disk full\n")
    assert get(exporter.url + "/nope")[0] == 404


def test_gzip_when_accepted(exporter):
    code, headers, body = get(exporter.url + "/metrics", {"Accept-Encoding": "gzip"})
    assert code == 200 and headers.get("Content-Encoding") == "gzip"
    assert 'rebalance_monitor_up{kafka_cluster="default"} 1\n' in gzip.decompress(body).decode()


def test_basic_auth_and_password_never_logged(caplog):
    secret = "s3cr3t-pw-XYZ"
    settings = ExporterSettings(port=0, basic_auth_user="prom", basic_auth_password=secret)
    assert secret not in repr(settings)
    caplog.set_level(logging.DEBUG)
    with MetricsExporter(settings) as exp:
        code, headers, _ = get(exp.url + "/metrics")
        assert code == 401 and headers["WWW-Authenticate"].startswith("Basic")
        bad = base64.b64encode(b"prom:wrong").decode()
        assert get(exp.url + "/metrics", {"Authorization": f"Basic {bad}"})[0] == 401
        good = base64.b64encode(f"prom:{secret}".encode()).decode()
        assert get(exp.url + "/metrics", {"Authorization": f"Basic {good}"})[0] == 200
        assert get(exp.url + "/healthz")[0] == 200      # probes need no credentials
    assert secret not in caplog.text


def test_settings_from_the_configuration(tmp_path):
    """The exporter's settings come from the configuration (what `run` serves), the password from its file or
    the environment."""
    pw = tmp_path / "pw"
    pw.write_text("from-file\n")
    conf = tmp_path / "monitor.yaml"
    conf.write_text(f"""
exporter:
  port: 9400
  basic_auth_user: prom
  basic_auth_password_file: {pw}
  idle_group_ttl: 2h
  ready_max_batch_age: 90s
groups:
  allow: "app-.*"
  deny: "app-test-.*"
  max_groups: 7
lag:
  granularity: topic
""")
    s = ExporterSettings.from_config(load_config(conf, env={}))
    assert (s.port, s.basic_auth_user, s.basic_auth_password) == (9400, "prom", "from-file")
    assert (s.max_groups, s.group_allow, s.group_deny) == (7, "app-.*", "app-test-.*")
    assert (s.idle_group_ttl_s, s.ready_max_age_s, s.lag_granularity) == (7200.0, 90.0, "topic")
    u = s.make_updater()
    u.apply([{"kind": "generation", "group": g, "generation": 1} for g in ("app-1", "app-test-1", "other")])
    assert u.groups == ["app-1"]
    s = ExporterSettings.from_config(load_config(env={"RM_EXPORTER_BASIC_AUTH_PASSWORD": "from-env",
                                                      "RM__EXPORTER__BASIC_AUTH_USER": "prom"}))
    assert s.basic_auth_password == "from-env"
    assert ExporterSettings.from_config(load_config(env={})) == ExporterSettings(ready_max_age_s=120.0)
    with pytest.raises(ValueError):
        ExporterSettings(basic_auth_user="u")
    with pytest.raises(ValueError):
        ExporterSettings(tls_cert_file="c.pem")


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a self-signed test certificate")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")],
                   check=True, capture_output=True)
    return str(d / "cert.pem"), str(d / "key.pem")


def test_tls(cert):
    certfile, keyfile = cert
    with MetricsExporter(ExporterSettings(port=0, tls_cert_file=certfile, tls_key_file=keyfile)) as exp:
        assert exp.url.startswith("https://127.0.0.1:")
        ctx = ssl.create_default_context(cafile=certfile)
        code, _, body = get(exp.url + "/metrics", context=ctx)
        assert code == 200 and b'rebalance_monitor_up{kafka_cluster="default"} 1\n' in body
        with pytest.raises(OSError):      # plain http against the TLS port fails
            urllib.request.urlopen(exp.url.replace("https", "http") + "/metrics", timeout=5).read()
        # the listener survived the bad client
        assert get(exp.url + "/healthz", context=ctx)[0] == 200
