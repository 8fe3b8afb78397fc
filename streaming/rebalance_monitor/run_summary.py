"""What `rebalance-monitor run` says first, at INFO: the configuration in one line (no secret: the SASL and TLS
key passwords, the exporter's password and every `spark.conf` value are left out, `spark.conf` by key only),
the inputs in one line, and then (spark/run.py) where the metrics are. Built from the typed configuration, never
from a dump of it, so a secret added to the configuration later is not printed by default."""
from __future__ import annotations

from .config import MonitorConfig


def _ms(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _exporter(cfg: MonitorConfig) -> str:
    e = cfg.exporter
    if not e.enabled:
        return "exporter off"
    how = [w for w, on in (("TLS", e.tls_cert_file), (f"basic auth user {e.basic_auth_user}", e.basic_auth_user)) if on]
    return f"exporter {e.host}:{e.port}" + (f" ({', '.join(how)})" if how else "")


def config_summary(cfg: MonitorConfig) -> str:
    k, sec, s, st, sinks = cfg.kafka, cfg.kafka.security, cfg.spark, cfg.state, cfg.sinks
    auth = sec.protocol
    if sec.sasl_mechanism:
        auth += f" {sec.sasl_mechanism} user {sec.sasl_username or '-'}"
    if sec.ssl_cafile or sec.ssl_certfile:
        auth += " with TLS files"
    history = ", ".join(filter(None, (sinks.history.parquet_path, sinks.history.kafka_topic and
                                      f"topic {sinks.history.kafka_topic}"))) or "off"
    dead = ", ".join(filter(None, (sinks.dead_letter.path, sinks.dead_letter.kafka_topic and
                                   f"topic {sinks.dead_letter.kafka_topic}"))) or "off"
    groups = []
    if cfg.groups.allow:
        groups.append(f"allow /{cfg.groups.allow}/")
    if cfg.groups.deny:
        groups.append(f"deny /{cfg.groups.deny}/")
    parts = [
        f"Kafka {k.bootstrap_servers} ({auth})" + (f" named {k.cluster_name}" if k.cluster_name != "default" else ""),
        f"Spark {s.master or 'as spark-submit set it'}, trigger {_ms(s.trigger_interval)}"
        + (f", spark.conf keys {sorted(s.conf)}" if s.conf else ""),
        f"checkpoint {st.checkpoint_location}, watermark delay {_ms(st.watermark_delay)}",
        f"history {history}; dead letters {dead}",
        f"storm {cfg.storm.min_rebalances} rebalances in {_ms(cfg.storm.window)}",
        f"groups {' '.join(groups) if groups else 'all'} (at most {cfg.groups.max_groups})",
        f"lag {'from the brokers every ' + _ms(cfg.lag.broker_poll_interval) if cfg.lag.enabled else 'off'}",
        _exporter(cfg),
        f"log {cfg.logging.level}, progress every {_ms(cfg.logging.progress_interval)}",
    ]
    return "configuration: " + "; ".join(parts)


def inputs_summary(cfg: MonitorConfig) -> str:
    k = cfg.kafka
    inputs = [f"client events from {', '.join(cfg.events_topics())}"]
    if k.coordinator_log_topic:
        inputs.append(f"coordinator log lines from {k.coordinator_log_topic}")
    if k.offsets_topic:
        inputs.append(f"{k.offsets_topic} ({k.offsets_topic_partitions} partitions)")
    return (f"inputs: {'; '.join(inputs)}; from the {k.starting_offsets} offsets at the first start, at most "
            f"{k.max_offsets_per_trigger} records a trigger, connector {k.connector}, client {k.client}")
