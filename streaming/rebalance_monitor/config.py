"""One typed, validated configuration tree.

Loaded from a YAML file (conf/monitor.yaml is the commented reference of every key), then overridden by
environment variables `RM__SECTION__KEY=value` (double underscores separate levels, e.g.
`RM__KAFKA__BOOTSTRAP_SERVERS=broker:9092`, `RM__STORM__MIN_REBALANCES=6`). Secrets can also come from
`*_file` keys or the variables named in docs/configuration.md; they are never logged (`redacted()`).

Unknown keys and bad values fail at start-up with a `ConfigError` naming the key and the allowed values; a value
of the wrong type (a number for a string, a list for a number, ...) names the key and the type it takes
(config_values.py).
"""
from __future__ import annotations

import os
import re
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from . import config_clusters
from .config_checks import jar_files, validate  # noqa: F401 (jar_files: the spark adapter reads it here)
from .config_values import ConfigError, Duration, EnvText, build, choice, group_durations, regex, secret  # noqa: F401 (ConfigError)
from .kafka_connection import SASL_MECHANISMS, SECURITY_PROTOCOLS, KafkaConnection
from .metrics.catalogue import LAG_GRANULARITIES

ENV_PREFIX = "RM__"


# --- the tree -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SecurityConfig:
    protocol: str = choice(*SECURITY_PROTOCOLS, default="PLAINTEXT")
    sasl_mechanism: str | None = choice(None, *SASL_MECHANISMS, default=None)
    sasl_username: str | None = None
    sasl_password: str | None = secret()
    sasl_password_file: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: str | None = secret()
    ssl_check_hostname: bool = True


@dataclass(frozen=True)
class KafkaConfig:
    # the cluster's name: the `kafka_cluster` label of every series, and in every record (config_clusters.py)
    cluster_name: str = "default"
    bootstrap_servers: str = "localhost:9092"
    events_topic: str = "rebalance-events"  # canonical events; several topics: comma-separated
    coordinator_log_topic: str | None = None  # broker log lines shipped to Kafka (Filebeat, Vector, ...)
    offsets_topic: str | None = None  # e.g. __consumer_offsets: read without joining a group
    offsets_topic_partitions: int = 50
    # KIP-848 records of offsets_topic name topics by id: `cluster` resolves them from the cluster at
    # bootstrap_servers, `none` leaves them ids, anything else is a JSON file {topic id: topic name}
    topic_ids: str = "cluster"
    starting_offsets: str = choice("latest", "earliest", default="latest")
    # a backlog drains at most this many records a trigger interval (docs/operations.md, "Catching up")
    max_offsets_per_trigger: int = 2_000_000
    client: str = choice("auto", "confluent", "kafka-python", default="auto")
    connector: str = choice("auto", "spark", "python", default="auto")
    decode_in_source: bool = True
    max_record_bytes: int = 1 << 20
    # events stamped further ahead of the wall clock are dead-lettered (future_ts); an event stamped further ahead of
    # its arrival time at the broker (received_ms, the broker plugin's) takes that as its time (core/event_parsing.py)
    max_future_skew: Duration = Duration(3_600_000)
    # The brokers' Apache Kafka release, whose rules the KIP-848 server assignors' expected assignments follow:
    # auto (unknown: the newest rules, 4.4.0's) or MAJOR.MINOR.PATCH, e.g. 4.0.0 (docs/assignors.md)
    broker_release: str = "auto"
    security: SecurityConfig = field(default_factory=SecurityConfig)

    def connection(self) -> KafkaConnection:
        """The Kafka connection of these settings (kafka_connection.py): what every Kafka client of the monitor
        is made from."""
        sec = self.security
        return KafkaConnection(
            bootstrap_servers=self.bootstrap_servers, security_protocol=sec.protocol,
            sasl_mechanism=sec.sasl_mechanism, sasl_username=sec.sasl_username, sasl_password=sec.sasl_password,
            ssl_cafile=sec.ssl_cafile, ssl_certfile=sec.ssl_certfile, ssl_keyfile=sec.ssl_keyfile,
            ssl_key_password=sec.ssl_password, ssl_check_hostname=sec.ssl_check_hostname)


@dataclass(frozen=True)
class SparkConfig:
    # null: the master spark-submit (or the Spark operator) was given; PySpark's local[*] without one.
    master: str | None = "local[2]"
    app_name: str = "rebalance-monitor"
    trigger_interval: Duration = Duration(5_000)
    shuffle_partitions: int = 4
    local_dir: str | None = None
    # A directory of jars for the driver and executors (e.g. var/spark-jars, where scripts/fetch_spark_jars.sh
    # puts Spark's Kafka connector): added as spark.jars, so no Ivy or network at start-up.
    jars_dir: str | None = None
    # The JVMs' just-in-time compiler (spark/session.py, JIT_OPTIONS): "quick" stops at its first tier (C1),
    # "full" is the JVM's default (C1, then C2 for hot code).
    jit: str = choice("quick", "full", default="quick")
    conf: dict = field(default_factory=dict)


@dataclass(frozen=True)
class StateConfig:
    checkpoint_location: str = "var/checkpoint"
    watermark_delay: Duration = Duration(2_000)
    # Move event time on with the wall clock while the input is idle, so silent groups still time out.
    idle_clock: bool = True
    group_idle_ttl: Duration = Duration(7 * 86_400_000)
    history_generations: int = 8
    max_members_per_group: int = 10_000
    max_partitions_per_group: int = 100_000
    # MiB of group snapshots (as JSON) each Python worker keeps as live runners between batches
    # (spark/runner_cache.py; about six times that in memory); 0: read every group from the state store
    runner_cache_mb: int = 16


@dataclass(frozen=True)
class CoreConfig:
    settle: Duration = Duration(5_000)
    expected_assignment: bool = True
    expected_assignment_max_work: int = 50_000_000
    # KIP-848 groups' session timeout (their records carry none; for causes inferred from __consumer_offsets):
    # the brokers' group.consumer.session.timeout.ms, and the groups that override it ("group=30s,other=1m")
    kip848_session_timeout: Duration = Duration(45_000)
    kip848_session_timeouts: str | None = None
    # a member silent for this percentage of its session timeout or max.poll.interval.ms: a member_at_risk record
    early_warning_percent: int = 50


@dataclass(frozen=True)
class StormConfig:
    window: Duration = Duration(600_000)
    min_rebalances: int = 4


@dataclass(frozen=True)
class GroupsConfig:
    # regular expressions matched against the whole group name (core/group_filter.py); deny wins over allow
    allow: str | None = regex()
    deny: str | None = regex()
    max_groups: int = 10_000


@dataclass(frozen=True)
class ExporterConfig:
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = 9308
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    basic_auth_user: str | None = None
    basic_auth_password: str | None = secret()
    basic_auth_password_file: str | None = None
    idle_group_ttl: Duration = Duration(86_400_000)
    ready_max_batch_age: Duration = Duration(120_000)
    # Keep counters and group gauges across restarts in <state.checkpoint_location>/metrics-state.json.
    persist_state: bool = True


@dataclass(frozen=True)
class LagConfig:
    enabled: bool = True
    broker_poll_interval: Duration = Duration(30_000)
    max_samples_per_partition: int = 60
    # Series of the per-partition offset families (metrics/lag_levels.py): one per group, topic and partition;
    # summed per group and topic; or one per group.
    granularity: str = choice(*LAG_GRANULARITIES, default="partition")


@dataclass(frozen=True)
class BrokerFactsConfig:
    # Ask the brokers what they know (broker_facts/): their group settings and each group's overrides
    # (DescribeConfigs), read at start and every `refresh`, and when a group is first seen; published as
    # `group_config` events to `topic` (null: the first of kafka.events_topic), which the job reads.
    enabled: bool = True
    refresh: Duration = Duration(300_000)
    topic: str | None = None


@dataclass(frozen=True)
class HistorySinkConfig:
    kafka_topic: str | None = None
    parquet_path: str | None = "var/history"


@dataclass(frozen=True)
class DeadLetterSinkConfig:
    kafka_topic: str | None = None
    path: str | None = "var/dead-letter"


@dataclass(frozen=True)
class SinksConfig:
    history: HistorySinkConfig = field(default_factory=HistorySinkConfig)
    dead_letter: DeadLetterSinkConfig = field(default_factory=DeadLetterSinkConfig)


@dataclass(frozen=True)
class LoggingConfig:
    level: str = choice("DEBUG", "INFO", "WARNING", "ERROR", default="INFO")
    # the Kafka clients' own loggers (kafka-python) and py4j's: their INFO lines are connection chatter
    kafka_clients_level: str = choice("DEBUG", "INFO", "WARNING", "ERROR", default="WARNING")
    # the Spark driver JVM's lines (and its Python workers'), log4j's level names: those below it at DEBUG
    spark_level: str = choice("DEBUG", "INFO", "WARN", "ERROR", default="ERROR")
    progress_interval: Duration = Duration(30_000)


@dataclass(frozen=True)
class MonitorConfig:
    kafka: KafkaConfig = field(default_factory=KafkaConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    state: StateConfig = field(default_factory=StateConfig)
    core: CoreConfig = field(default_factory=CoreConfig)
    storm: StormConfig = field(default_factory=StormConfig)
    groups: GroupsConfig = field(default_factory=GroupsConfig)
    exporter: ExporterConfig = field(default_factory=ExporterConfig)
    lag: LagConfig = field(default_factory=LagConfig)
    broker_facts: BrokerFactsConfig = field(default_factory=BrokerFactsConfig)
    sinks: SinksConfig = field(default_factory=SinksConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    # several clusters: each one's whole configuration (config_clusters.py); empty: this one is the only cluster
    clusters: tuple = ()

    def cluster_configs(self) -> tuple["MonitorConfig", ...]:
        """The configuration of each cluster the monitor watches, in the order written (this one alone when no
        `clusters:` list is given)."""
        return self.clusters or (self,)

    def core_settings(self):
        from .core.settings import CoreSettings

        return CoreSettings(
            storm_window_ms=int(self.storm.window), storm_min_rebalances=self.storm.min_rebalances,
            settle_ms=int(self.core.settle), history_generations=self.state.history_generations,
            group_idle_ttl_ms=int(self.state.group_idle_ttl),
            max_members_per_group=self.state.max_members_per_group,
            max_partitions_per_group=self.state.max_partitions_per_group,
            expected_assignment=self.core.expected_assignment,
            expected_assignment_max_work=self.core.expected_assignment_max_work,
            offsets_partitions=self.kafka.offsets_topic_partitions,
            member_list_input=bool(self.kafka.offsets_topic),
            broker_release=None if self.kafka.broker_release == "auto" else self.kafka.broker_release.strip(),
            kip848_session_timeout_ms=int(self.core.kip848_session_timeout),
            kip848_session_timeouts=group_durations("core.kip848_session_timeouts", self.core.kip848_session_timeouts),
            early_warning_pct=self.core.early_warning_percent,
        )

    def group_filter(self):
        """The predicate of groups.allow / groups.deny (core/group_filter.py), or None when both are unset."""
        from .core.group_filter import GroupFilter

        f = GroupFilter(self.groups.allow, self.groups.deny)
        return f if f.active else None

    def events_topics(self) -> list[str]:
        return [t.strip() for t in self.kafka.events_topic.split(",") if t.strip()]

    def broker_facts_topic(self) -> str | None:
        """Where the broker poller publishes what the brokers said: a topic the job reads (None: none)."""
        topics = self.events_topics()
        return self.broker_facts.topic or (topics[0] if topics else None)


# --- loading ------------------------------------------------------------------------------------
def _set_path(tree: dict, path: list[str], value: str) -> None:
    node = tree
    for part in path[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = node[part] = {}
        node = nxt
    node[path[-1]] = EnvText(value)


def _read_secret_files(cfg: MonitorConfig, env) -> MonitorConfig:
    from dataclasses import replace

    sec = cfg.kafka.security
    if sec.sasl_password is None:
        pw = _secret_from(sec.sasl_password_file, "kafka.security.sasl_password_file",
                          env.get("RM_KAFKA_SASL_PASSWORD"))
        if pw is not None:
            cfg = replace(cfg, kafka=replace(cfg.kafka, security=replace(sec, sasl_password=pw)))
    ex = cfg.exporter
    if ex.basic_auth_password is None:
        pw = _secret_from(ex.basic_auth_password_file, "exporter.basic_auth_password_file",
                          env.get("RM_EXPORTER_BASIC_AUTH_PASSWORD"))
        if pw is not None:
            cfg = replace(cfg, exporter=replace(ex, basic_auth_password=pw))
    return cfg


def _secret_from(path: str | None, key: str, from_env: str | None) -> str | None:
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ConfigError(f"{key}: cannot read the secret file {path!r}: {exc.strerror}") from None
    return from_env


def load_config(path: str | os.PathLike | None = None, env: dict | None = None,
                overrides: dict | None = None) -> MonitorConfig:
    """Load the file (if given), apply `RM__...` environment overrides and `overrides`, validate."""
    data: dict = {}
    if path is not None:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read the config file {str(path)!r}: {exc.strerror}") from None
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
    env = os.environ if env is None else env
    for name, value in sorted(env.items()):
        if name.startswith(ENV_PREFIX):
            path_parts = [p.lower() for p in name[len(ENV_PREFIX):].split("__") if p]
            if path_parts[:1] == ["clusters"] and config_clusters.env_override(data, path_parts[1:], EnvText(value)):
                continue
            if path_parts:
                _set_path(data, path_parts, value)
    for dotted, value in (overrides or {}).items():
        node = data
        parts = dotted.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    items = config_clusters.take_items(data)
    cfg = _built(data, env)
    if not items:
        return cfg
    clusters = []
    for i, item in enumerate(items):
        where = f"clusters[{i}] ({item['name']})"
        try:
            one = _built(config_clusters.item_tree(data, item), env)
        except ConfigError as exc:
            raise config_clusters.prefixed(where, exc) from None
        clusters.append(config_clusters.own_paths(one, cfg.kafka.cluster_name))
    return replace(cfg, clusters=tuple(clusters))


def _built(data: dict, env) -> MonitorConfig:
    cfg = build(MonitorConfig, data)
    cfg = _read_secret_files(cfg, env)
    validate(cfg)
    return cfg


SECRET_KEYS = ("sasl_password", "ssl_password", "basic_auth_password")


def redacted(cfg: MonitorConfig) -> dict:
    """The configuration as a dict with every secret replaced by '***' (safe to log)."""

    def scrub(node):
        if isinstance(node, dict):
            return {k: ("***" if k in SECRET_KEYS and v is not None else scrub(v)) for k, v in node.items()}
        return node

    return scrub(asdict(cfg))


def reference_keys(cls=MonitorConfig, prefix: str = "") -> list[tuple[str, Any]]:
    """Every key with its default, for the reference file test."""
    out = []
    for f in fields(cls):
        key = f"{prefix}.{f.name}" if prefix else f.name
        hint = typing.get_type_hints(cls)[f.name]
        if is_dataclass(hint):
            out.extend(reference_keys(hint, key))
        else:
            default = f.default if f.default is not MISSING else (
                f.default_factory() if f.default_factory is not MISSING else None)
            out.append((key, default))
    return out
