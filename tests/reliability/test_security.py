"""Security: SASL/SSL settings reach every Kafka client the monitor creates; secrets never show in logs or
error messages; the exporter binds to loopback by default; the dead-letter output stays in its directory."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rebalance_monitor.config import load_config
from rebalance_monitor.kafka_connection import KafkaConnection, parse_jaas
from rebalance_monitor.spark.query_plan import source_options
from rebalance_monitor.spark.sources import spark_connector_options
from rebalance_monitor.spark.sinks import batch_file
from rebalance_monitor.testing.processes import free_port

SECRET = "hunter2-S3CRET-do-not-log"


def sasl_cfg(mechanism="SCRAM-SHA-512", protocol="SASL_SSL", **extra):
    return load_config(env={}, overrides={
        "kafka.bootstrap_servers": "127.0.0.1:1", "kafka.security.protocol": protocol,
        "kafka.security.sasl_mechanism": mechanism, "kafka.security.sasl_username": "monitor",
        "kafka.security.sasl_password": SECRET, "kafka.security.ssl_cafile": "/etc/ca.pem", **extra})


@pytest.mark.parametrize("mechanism,protocol", [("PLAIN", "SASL_PLAINTEXT"), ("SCRAM-SHA-256", "SASL_SSL"),
                                                ("SCRAM-SHA-512", "SASL_SSL")])
def test_sasl_and_ssl_settings_reach_every_client_config(mechanism, protocol):
    cfg = sasl_cfg(mechanism, protocol)
    conn = cfg.kafka.connection()
    # the source (both clients, and Spark's connector), the sinks' producers, the lag poller, the Kafka probe and the
    # history reader all build from this connection
    opts = source_options(cfg)
    assert opts["kafka.security.protocol"] == protocol and opts["kafka.sasl.mechanism"] == mechanism
    assert parse_jaas(opts["kafka.sasl.jaas.config"]) == ("monitor", SECRET)
    assert KafkaConnection.from_options(opts) == conn  # what the Python source reads
    java = spark_connector_options(opts)  # what Spark's connector reads
    assert java["kafka.security.protocol"] == protocol and java["kafka.sasl.jaas.config"] == opts["kafka.sasl.jaas.config"]
    assert java["kafka.ssl.truststore.location"] == "/etc/ca.pem"
    c = conn.confluent()
    assert c["security.protocol"] == protocol and c["sasl.mechanism"] == mechanism
    assert c["sasl.username"] == "monitor" and c["sasl.password"] == SECRET and c["ssl.ca.location"] == "/etc/ca.pem"
    k = conn.kafka_python()
    assert k["security_protocol"] == protocol and k["sasl_mechanism"] == mechanism
    assert k["sasl_plain_username"] == "monitor" and k["sasl_plain_password"] == SECRET
    assert k["ssl_cafile"] == "/etc/ca.pem"


def test_the_exporter_binds_to_loopback_by_default():
    assert load_config(env={}).exporter.host == "127.0.0.1"


def test_dead_letter_files_cannot_leave_their_directory(tmp_path):
    for d in (str(tmp_path / "dlq"), "s3a://bucket/dlq", "s3a://bucket/dlq/"):
        assert batch_file(d, "dead-letters", 12, ".jsonl") == d.rstrip("/") + "/dead-letters-000000000012.jsonl"
    d = str(tmp_path / "dlq")
    # names never come from input: even a hostile batch id is only ever an integer in the name
    with pytest.raises((ValueError, TypeError)):
        batch_file(d, "dead-letters", "../../etc/passwd", ".jsonl")


def test_secrets_never_appear_in_the_job_log_or_its_errors(tmp_path):
    """Run the real job with SASL credentials against an address where no broker listens: it logs its
    configuration, fails to connect, retries; none of that output may contain the password."""
    conf = {
        "kafka": {"bootstrap_servers": "127.0.0.1:9", "events_topic": "ev", "connector": "python",
                  "security": {"protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_username": "monitor",
                               "sasl_password_file": str(tmp_path / "pw")}},
        "state": {"checkpoint_location": str(tmp_path / "ck")},
        "spark": {"local_dir": str(tmp_path / "spark"), "trigger_interval": "1s"},
        "sinks": {"history": {"parquet_path": str(tmp_path / "h")}, "dead_letter": {"path": str(tmp_path / "d")}},
        "exporter": {"port": free_port(), "basic_auth_user": "prom", "basic_auth_password_file": str(tmp_path / "pw")},
        "lag": {"enabled": True, "broker_poll_interval": "1s"},
        "logging": {"level": "DEBUG", "progress_interval": "1s"},
    }
    (tmp_path / "pw").write_text(SECRET)
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(conf))
    log = tmp_path / "job.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "rebalance_monitor", "run", "--config", str(path)],
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    # until it has logged its configuration, then while it tries the broker (run probes Kafka before Spark starts);
    # not `eventually`: on a time out it goes on, so that the job is stopped and the assertions below say what failed
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None and \
            "the whole configuration" not in log.read_text(errors="replace"):
        time.sleep(1)
    time.sleep(20)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    text = log.read_text(errors="replace")
    # its summary at INFO, its whole (redacted) configuration at DEBUG
    assert "configuration: Kafka 127.0.0.1:9 (SASL_PLAINTEXT PLAIN user monitor)" in text
    assert "the whole configuration" in text and "***" in text
    assert SECRET not in text
    # bad configuration messages name the key, never the secret value
    p = subprocess.run([sys.executable, "-m", "rebalance_monitor", "run", "--config", str(path)],
                       env={"RM__KAFKA__SECURITY__SASL_MECHANISM": "GSSAPI", "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "kafka.security.sasl_mechanism" in p.stderr and SECRET not in p.stderr + p.stdout


def test_the_redaction_filter_covers_messages_and_tracebacks():
    import logging

    from rebalance_monitor.logs import RedactSecrets

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(self.format(record))

    h = Keep()
    h.addFilter(RedactSecrets([SECRET]))
    log = logging.getLogger("test-redaction")
    log.addHandler(h)
    try:
        log.warning("config %s", {"sasl_plain_password": SECRET})
        try:
            raise RuntimeError(f"auth failed for password {SECRET}")
        except RuntimeError:
            log.exception("boom")
    finally:
        log.removeHandler(h)
    assert records and all(SECRET not in r for r in records)
    assert "***" in records[0] and "auth failed for password ***" in records[1]


def test_ssl_check_hostname_off_reaches_every_client_in_its_own_spelling():
    """`kafka.security.ssl_check_hostname: false` (a broker certificate without the address the monitor uses):
    kafka-python, librdkafka and the Java connector each get their own setting for it, and the Python source reads
    the Java spelling back."""
    cfg = sasl_cfg(**{"kafka.security.ssl_check_hostname": False})
    conn = cfg.kafka.connection()
    assert conn.kafka_python()["ssl_check_hostname"] is False
    assert conn.confluent()["ssl.endpoint.identification.algorithm"] == "none"
    assert conn.java()["ssl.endpoint.identification.algorithm"] == ""
    back = KafkaConnection.from_options(source_options(cfg))
    assert back.ssl_check_hostname is False and "ssl.endpoint.identification.algorithm" not in back.extra
    checked = sasl_cfg().kafka.connection()   # the default: every client checks the host name
    assert "ssl_check_hostname" not in checked.kafka_python()
    assert "ssl.endpoint.identification.algorithm" not in checked.confluent()
    assert "ssl.endpoint.identification.algorithm" not in checked.java()
    assert KafkaConnection.from_options(source_options(sasl_cfg())).ssl_check_hostname is True
