"""What `run` says first at INFO (run_summary.py): the configuration in one line and the inputs in one line, built
from the typed configuration, with no secret in them however the secrets were given."""
from __future__ import annotations

import pytest

from rebalance_monitor.config import load_config
from rebalance_monitor.run_summary import config_summary, inputs_summary

SECRETS = {"sasl": "sasl-pa55word", "tls_key": "key-pa55word", "exporter": "prom-pa55word",
           "s3": "AKIA-s3-secret-value"}


@pytest.fixture
def cfg(tmp_path):
    (tmp_path / "exporter-pw").write_text(SECRETS["exporter"])
    return load_config(env={}, overrides={
        "kafka.bootstrap_servers": "broker-1:9093,broker-2:9093", "kafka.events_topic": "ev-a, ev-b",
        "kafka.offsets_topic": "__consumer_offsets", "kafka.coordinator_log_topic": "coordinator-log",
        "kafka.security.protocol": "SASL_SSL", "kafka.security.sasl_mechanism": "SCRAM-SHA-512",
        "kafka.security.sasl_username": "monitor", "kafka.security.sasl_password": SECRETS["sasl"],
        "kafka.security.ssl_cafile": "/etc/ca.crt", "kafka.security.ssl_password": SECRETS["tls_key"],
        "exporter.port": 9400, "exporter.basic_auth_user": "prom",
        "exporter.basic_auth_password_file": str(tmp_path / "exporter-pw"),
        "spark.conf": {"spark.hadoop.fs.s3a.secret.key": SECRETS["s3"]},
        "groups.deny": "^test-", "logging.progress_interval": "1m"})


def test_the_summary_says_where_and_how_without_a_secret(cfg):
    assert cfg.kafka.security.sasl_password == SECRETS["sasl"]  # the secrets are in the configuration...
    assert cfg.exporter.basic_auth_password == SECRETS["exporter"]
    text = config_summary(cfg) + "\n" + inputs_summary(cfg)
    for what, secret in SECRETS.items():
        assert secret not in text, what  # ...and in neither line
    line = config_summary(cfg)
    assert line.startswith("configuration: Kafka broker-1:9093,broker-2:9093 (SASL_SSL SCRAM-SHA-512 user monitor "
                           "with TLS files); ")
    assert "spark.conf keys ['spark.hadoop.fs.s3a.secret.key']" in line  # named, its value left out
    assert "exporter 127.0.0.1:9400 (basic auth user prom)" in line
    assert "groups deny /^test-/" in line and "progress every 1m" in line and "\n" not in line
    inputs = inputs_summary(cfg)
    assert inputs.startswith("inputs: client events from ev-a, ev-b; coordinator log lines from coordinator-log; "
                             "__consumer_offsets (50 partitions); from the latest offsets")


def test_defaults(tmp_path):
    line = config_summary(load_config(env={}))
    assert line.startswith("configuration: Kafka localhost:9092 (PLAINTEXT); Spark local[2], trigger 5s; ")
    assert "exporter 127.0.0.1:9308" in line and "lag from the brokers every 30s" in line
