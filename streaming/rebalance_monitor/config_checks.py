"""The configuration's checks beyond its types (config.py holds the tree): each bad value fails at start-up with a
`ConfigError` naming the key and the values it allows."""
from __future__ import annotations

import os
import re

from .config_values import ConfigError, group_durations


def jar_files(directory: str) -> list[str]:
    """The .jar files directly inside `directory` (sorted; none when it is not a directory)."""
    if not os.path.isdir(directory):
        return []
    return sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".jar"))


def validate(cfg) -> None:
    """Fail with a ConfigError naming the key and what it allows, for what the types alone do not rule out."""
    sec = cfg.kafka.security
    if sec.protocol.startswith("SASL") and sec.sasl_mechanism is None:
        raise ConfigError("kafka.security.sasl_mechanism: required when kafka.security.protocol is "
                          f"{sec.protocol}; allowed values: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512")
    if sec.sasl_mechanism and not sec.protocol.startswith("SASL"):
        raise ConfigError("kafka.security.protocol: must be SASL_PLAINTEXT or SASL_SSL when "
                          "kafka.security.sasl_mechanism is set")
    if sec.sasl_mechanism and (not sec.sasl_username or not sec.sasl_password):
        raise ConfigError("kafka.security.sasl_username / sasl_password: both are required for SASL "
                          "(the password may come from sasl_password_file or RM_KAFKA_SASL_PASSWORD)")
    if not cfg.kafka.bootstrap_servers.strip():
        raise ConfigError("kafka.bootstrap_servers: must not be empty")
    for server in cfg.kafka.bootstrap_servers.split(","):
        m = re.fullmatch(r"\s*(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})\s*", server)
        if m is None or not 0 < int(m.group(1)) < 65536:
            raise ConfigError(f"kafka.bootstrap_servers: expected host:port[,host:port...] (a port from 1 to 65535), "
                              f"got {cfg.kafka.bootstrap_servers!r}")
    if not cfg.events_topics() and not cfg.kafka.coordinator_log_topic and not cfg.kafka.offsets_topic:
        raise ConfigError("kafka.events_topic: at least one input is required (events_topic, "
                          "coordinator_log_topic or offsets_topic)")
    if cfg.kafka.topic_ids not in ("cluster", "none") and not os.path.isfile(cfg.kafka.topic_ids):
        raise ConfigError(f"kafka.topic_ids: cluster, none, or a JSON file {{topic id: name}}; "
                          f"no file {cfg.kafka.topic_ids!r}")
    if cfg.kafka.broker_release != "auto" and not re.fullmatch(r"\s*\d+\.\d+\.\d+\s*", cfg.kafka.broker_release):
        raise ConfigError(f"kafka.broker_release: auto, or the brokers' Apache Kafka release as MAJOR.MINOR.PATCH "
                          f"(e.g. 4.0.0, 4.4.0); got {cfg.kafka.broker_release!r}")
    if cfg.core.kip848_session_timeout <= 0:
        raise ConfigError("core.kip848_session_timeout: must be greater than 0")
    group_durations("core.kip848_session_timeouts", cfg.core.kip848_session_timeouts)
    if not 0 <= cfg.core.early_warning_percent <= 99:
        raise ConfigError(f"core.early_warning_percent: 0 (no early warning) or 1-99 (percent of a member's session "
                          f"timeout or max.poll.interval.ms); got {cfg.core.early_warning_percent}")
    if cfg.storm.min_rebalances < 1:
        raise ConfigError("storm.min_rebalances: must be at least 1")
    if cfg.storm.window <= 0:
        raise ConfigError("storm.window: must be greater than 0")
    if not 0 < cfg.exporter.port < 65536:
        raise ConfigError("exporter.port: must be between 1 and 65535")
    if bool(cfg.exporter.tls_cert_file) != bool(cfg.exporter.tls_key_file):
        raise ConfigError("exporter.tls_cert_file / tls_key_file: set both or neither")
    if bool(cfg.exporter.basic_auth_user) != bool(cfg.exporter.basic_auth_password):
        raise ConfigError("exporter.basic_auth_user / basic_auth_password: set both or neither")
    if cfg.spark.trigger_interval <= 0:
        raise ConfigError("spark.trigger_interval: must be greater than 0")
    if cfg.spark.jars_dir is not None and not jar_files(cfg.spark.jars_dir):
        raise ConfigError(f"spark.jars_dir: {cfg.spark.jars_dir!r} is not a directory holding .jar files "
                          "(scripts/fetch_spark_jars.sh fills var/spark-jars; null for none)")
    if cfg.spark.shuffle_partitions < 1:
        raise ConfigError("spark.shuffle_partitions: must be at least 1")
    if cfg.broker_facts.refresh < 10_000:
        raise ConfigError("broker_facts.refresh: at least 10s (the brokers' group settings change rarely)")
    facts = cfg.broker_facts.topic
    if cfg.broker_facts.enabled and facts is not None and facts not in cfg.events_topics():
        raise ConfigError(f"broker_facts.topic: one of kafka.events_topic ({cfg.kafka.events_topic!r}), so that the "
                          f"job reads what the brokers said; got {facts!r}")
    if cfg.state.runner_cache_mb < 0:
        raise ConfigError("state.runner_cache_mb: must be 0 (no cache) or more")
