"""The configuration tree: the reference file, validation messages, environment overrides, secrets."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rebalance_monitor.config import ConfigError, jar_files, load_config, redacted, reference_keys

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "conf" / "monitor.yaml"


def _flatten(node, prefix=""):
    out = {}
    for k, v in node.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict) and k != "conf":
            out.update(_flatten(v, key))
        else:
            out[key] = v
    return out


def test_reference_file_lists_every_key_with_its_default():
    in_file = _flatten(yaml.safe_load(REFERENCE.read_text()))
    defaults = dict(reference_keys())
    assert set(in_file) == set(defaults)
    loaded = load_config(REFERENCE, env={})
    assert loaded == load_config(None, env={}), "the reference file must restate the defaults"


@pytest.mark.parametrize("overrides,message", [
    ({"kafka.security.protocol": "PLAIN"}, "kafka.security.protocol: 'PLAIN' is not allowed; allowed values: "
                                            "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ({"kafka.starting_offsets": "beginning"}, "kafka.starting_offsets: 'beginning' is not allowed; allowed values: latest, earliest"),
    ({"storm.window": "soon"}, "storm.window: expected a duration"),
    ({"storm.min_rebalances": 0}, "storm.min_rebalances: must be at least 1"),
    ({"storm.min_rebalances": "four"}, "storm.min_rebalances: expected an integer"),
    ({"exporter.port": 70000}, "exporter.port: must be between 1 and 65535"),
    ({"groups.allow": "(["}, "groups.allow: not a valid regular expression"),
    ({"kafka.nope": 1}, "kafka.nope: unknown key; allowed keys here: cluster_name, bootstrap_servers"),
    ({"exporter.tls_cert_file": "/x.pem"}, "exporter.tls_cert_file / tls_key_file: set both or neither"),
    ({"kafka.security.protocol": "SASL_SSL"}, "kafka.security.sasl_mechanism: required"),
    ({"logging.level": "LOUD"}, "logging.level: 'LOUD' is not allowed; allowed values: DEBUG, INFO, WARNING, ERROR"),
    ({"lag.granularity": "broker"}, "lag.granularity: 'broker' is not allowed; allowed values: partition, topic, group"),
    ({"core.kip848_session_timeout": 0}, "core.kip848_session_timeout: must be greater than 0"),
    ({"core.kip848_session_timeouts": "orders"}, "core.kip848_session_timeouts: expected group=duration"),
    ({"core.kip848_session_timeouts": "orders=soon"}, "core.kip848_session_timeouts: expected a duration"),
    ({"core.kip848_session_timeouts": "orders=0s"}, "core.kip848_session_timeouts: the duration of 'orders' must be"),
])
def test_bad_values_fail_naming_the_key_and_the_allowed_values(overrides, message):
    with pytest.raises(ConfigError) as err:
        load_config(env={}, overrides=overrides)
    assert message in str(err.value)


def test_unknown_section_and_bad_yaml_fail_clearly(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("stroms:\n  window: 5m\n")
    with pytest.raises(ConfigError, match="stroms: unknown key; allowed keys here: kafka, spark"):
        load_config(bad, env={})
    bad.write_text("kafka: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad, env={})
    with pytest.raises(ConfigError, match="cannot read the config file"):
        load_config(tmp_path / "missing.yaml", env={})


def test_environment_overrides_win_over_the_file(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("storm:\n  window: 5m\nkafka:\n  bootstrap_servers: a:1\n")
    cfg = load_config(f, env={"RM__STORM__WINDOW": "2m", "RM__KAFKA__SECURITY__PROTOCOL": "SSL",
                              "UNRELATED": "x"})
    assert cfg.storm.window == 120_000 and cfg.kafka.bootstrap_servers == "a:1"
    assert cfg.kafka.security.protocol == "SSL"
    with pytest.raises(ConfigError, match="storm.min_rebalances: expected an integer"):
        load_config(f, env={"RM__STORM__MIN_REBALANCES": "many"})


def test_secrets_come_from_files_or_env_and_are_never_shown(tmp_path):
    pw = tmp_path / "pw"
    pw.write_text("s3cr3t-from-file\n")
    cfg = load_config(env={}, overrides={
        "kafka.security.protocol": "SASL_SSL", "kafka.security.sasl_mechanism": "SCRAM-SHA-512",
        "kafka.security.sasl_username": "monitor", "kafka.security.sasl_password_file": str(pw)})
    assert cfg.kafka.security.sasl_password == "s3cr3t-from-file"
    shown = repr(redacted(cfg))
    assert "s3cr3t" not in shown and "***" in shown
    cfg2 = load_config(env={"RM_KAFKA_SASL_PASSWORD": "from-env"}, overrides={
        "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.security.sasl_mechanism": "PLAIN",
        "kafka.security.sasl_username": "monitor"})
    assert cfg2.kafka.security.sasl_password == "from-env"
    with pytest.raises(ConfigError) as err:
        load_config(env={}, overrides={"kafka.security.sasl_password_file": str(tmp_path / "none")})
    assert "kafka.security.sasl_password_file" in str(err.value)


def test_group_filter_and_core_settings():
    cfg = load_config(env={}, overrides={"groups.allow": "prod-.*", "groups.deny": ".*-test",
                                         "storm.window": "3m", "storm.min_rebalances": 6})
    keep = cfg.group_filter()
    assert keep("prod-orders") and not keep("dev-orders") and not keep("prod-orders-test")
    assert not keep("dev-prod-orders")  # the whole name must match, as in the exporter
    assert load_config(env={}).group_filter() is None
    s = cfg.core_settings()
    assert s.storm_window_ms == 180_000 and s.storm_min_rebalances == 6


@pytest.mark.parametrize("pattern", ["([", "a**", "(?i)orders-.*", "(?P<env>prod|dev)-.*", "\\", "orders-[0-9]+"])
def test_group_patterns_are_checked_as_the_filter_compiles_them(pattern):
    """groups.allow/deny: the configuration accepts exactly the patterns the filter (core/group_filter.py) can
    apply, and the filter then matches whole names."""
    from rebalance_monitor.core.group_filter import GroupFilter

    try:
        expected = GroupFilter(allow=pattern)
    except re.error:
        expected = None
    if expected is None:
        with pytest.raises(ConfigError, match="groups.allow: not a valid regular expression"):
            load_config(env={}, overrides={"groups.allow": pattern})
    else:
        keep = load_config(env={}, overrides={"groups.allow": pattern}).group_filter()
        for name in ("orders-1", "ORDERS-eu", "prod-x", "x-orders-1", "orders-1x", "\\"):
            assert keep(name) == expected.keeps(name) == (re.fullmatch(pattern, name) is not None)


def test_deploy_configs_load(tmp_path):
    paths = sorted((ROOT / "deploy").rglob("monitor*.yaml"))
    assert paths
    secret = tmp_path / "password"
    secret.write_text("x")
    for path in paths:
        data = yaml.safe_load(path.read_text())
        overrides = {}
        if (data.get("kafka", {}).get("security") or {}).get("sasl_password_file"):
            overrides["kafka.security.sasl_password_file"] = str(secret)  # the mounted Secret in the cluster
        load_config(path, env={"RM__KAFKA__SECURITY__SASL_USERNAME": "monitor"}, overrides=overrides)


@pytest.mark.parametrize("value", ["1", "broker", "broker:0", "broker:70000", "broker:9092,", "a b:9092"])
def test_bootstrap_servers_must_be_host_port_pairs(value):
    with pytest.raises(ConfigError, match=r"kafka\.bootstrap_servers: expected host:port"):
        load_config(env={}, overrides={"kafka.bootstrap_servers": value})


@pytest.mark.parametrize("value", ["broker:9092", "127.0.0.1:9092,10.0.0.2:9093", "[::1]:9092", "b-1.kafka.svc:9092"])
def test_bootstrap_servers_accepts_host_port_lists(value):
    assert load_config(env={}, overrides={"kafka.bootstrap_servers": value}).kafka.bootstrap_servers == value


def test_spark_jars_dir_must_hold_jars_and_becomes_spark_jars(tmp_path):
    from rebalance_monitor.spark.session import session_conf

    empty = tmp_path / "empty"
    empty.mkdir()
    for bad in (str(empty), str(tmp_path / "missing")):
        with pytest.raises(ConfigError, match=r"spark\.jars_dir: .* is not a directory holding \.jar files"):
            load_config(env={}, overrides={"spark.jars_dir": bad})
    (empty / "b.jar").write_bytes(b"")
    (empty / "a.jar").write_bytes(b"")
    (empty / "notes.txt").write_text("")
    cfg = load_config(env={}, overrides={"spark.jars_dir": str(empty)})
    assert jar_files(cfg.spark.jars_dir) == [str(empty / "a.jar"), str(empty / "b.jar")]
    conf = session_conf(jars=jar_files(cfg.spark.jars_dir))
    assert conf["spark.jars"] == f"{empty / 'a.jar'},{empty / 'b.jar'}"
    assert "spark.jars" not in session_conf()
    assert load_config(env={}).spark.jars_dir is None  # off unless asked: the Python source stays the default


def test_the_kafka_clients_log_at_warning_unless_asked():
    import logging

    from rebalance_monitor.logs import configure_logging

    cfg = load_config(env={})
    assert cfg.logging.kafka_clients_level == "WARNING"
    configure_logging("INFO", (), cfg.logging.kafka_clients_level)
    assert logging.getLogger("kafka.consumer.fetcher").getEffectiveLevel() == logging.WARNING
    # connection failures: the monitor reports an unreachable broker itself, once per back-off step
    assert logging.getLogger("kafka.net.manager").getEffectiveLevel() == logging.CRITICAL
    assert logging.getLogger("py4j.clientserver").getEffectiveLevel() == logging.WARNING
    assert logging.getLogger("rebalance_monitor.job").getEffectiveLevel() == logging.getLogger().getEffectiveLevel()
    # kafka-python's metadata refresh failing while a broker is away: the same chatter, at ERROR on kafka.cluster
    cluster = logging.getLogger("kafka.cluster")

    def passes(msg):
        return cluster.filter(logging.LogRecord("kafka.cluster", logging.ERROR, __file__, 1, msg, ("x",), None))

    assert not passes("Metadata refresh: failed %s") and passes("Topic %s is not authorized for this client")
    configure_logging("INFO", (), load_config(env={}, overrides={"logging.kafka_clients_level": "DEBUG"})
                      .logging.kafka_clients_level)
    assert logging.getLogger("kafka").getEffectiveLevel() == logging.DEBUG
    assert logging.getLogger("kafka.net.manager").getEffectiveLevel() == logging.DEBUG
    assert passes("Metadata refresh: failed %s")
    with pytest.raises(ConfigError, match="logging.kafka_clients_level"):
        load_config(env={}, overrides={"logging.kafka_clients_level": "LOUD"})
    configure_logging("INFO", ())  # leave the test process as the others expect it


def _typed_keys(cls=None, prefix=""):
    """(key, type, field) of every key of the tree (the type without its `| None`)."""
    import dataclasses
    import typing

    from rebalance_monitor.config import MonitorConfig

    cls = cls or MonitorConfig
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key, tp = f"{prefix}.{f.name}" if prefix else f.name, hints[f.name]
        if dataclasses.is_dataclass(tp):
            yield from _typed_keys(tp, key)
            continue
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        yield key, (args[0] if args else tp), f


def _wrong_values(tp, f):
    """Values of the wrong type for a key of type `tp`: a number, a list, a mapping or a string, as they apply."""
    from rebalance_monitor.config import Duration

    if "choices" in f.metadata:
        return [5, ["PLAINTEXT"], {"a": 1}]
    if tp is str:
        return [5, 1.10, True, ["a", "b"], {"a": 1}]
    if tp is int:
        return ["many", 1.5, True, [1], {"a": 1}]
    if tp is bool:
        return ["maybe", 2, [True], {"a": 1}]
    if tp is Duration:
        return ["soon", True, -1, [5], {"a": 1}]
    if tp is tuple:  # clusters: a list of mappings, each with a name
        return ["x", 5, {"a": 1}, [5], [{"name": "a b"}], [{"kafka": {}}]]
    if tp is dict:
        return ["x", 5, [1], {"spark.executor.memory": [1, 2]}, {"spark.x": None}]
    raise AssertionError(f"no wrong values for {tp}")


TYPED_KEYS = list(_typed_keys())


@pytest.mark.parametrize("key,tp,f", TYPED_KEYS, ids=[k for k, _, _ in TYPED_KEYS])
def test_a_value_of_the_wrong_type_fails_naming_the_key(key, tp, f):
    for value in _wrong_values(tp, f):
        with pytest.raises(ConfigError) as err:
            load_config(env={}, overrides={key: value})
        assert str(err.value).startswith(key), (value, str(err.value))


def test_wrong_types_say_what_the_key_takes():
    cases = [("kafka.events_topic", 1.10, "kafka.events_topic: expected a string, got 1.1 (quote it"),
             ("kafka.offsets_topic_partitions", "50 partitions", "expected an integer, got '50 partitions'"),
             ("groups.max_groups", [5000], "groups.max_groups: expected an integer, got a list"),
             ("spark.conf", {"spark.executor.memory": ["2g"]},
              "spark.conf.spark.executor.memory: expected a string, number or boolean, got a list"),
             ("kafka.security", "SSL", "kafka.security: expected a mapping of keys, got 'SSL'"),
             ("exporter.enabled", "maybe", "exporter.enabled: expected true or false, got 'maybe'")]
    for key, value, message in cases:
        with pytest.raises(ConfigError, match=re.escape(message)):
            load_config(env={}, overrides={key: value})
    conf = load_config(env={}, overrides={"spark.conf": {"spark.sql.adaptive.enabled": False, "spark.x": 4}})
    assert conf.spark.conf == {"spark.sql.adaptive.enabled": "false", "spark.x": "4"}


def test_environment_values_are_text_for_string_keys():
    cfg = load_config(env={"RM__KAFKA__EVENTS_TOPIC": "2024", "RM__KAFKA__OFFSETS_TOPIC": "1.10",
                           "RM__KAFKA__COORDINATOR_LOG_TOPIC": "null", "RM__STORM__MIN_REBALANCES": "6",
                           "RM__EXPORTER__PERSIST_STATE": "false", "RM__KAFKA__SECURITY__SASL_MECHANISM": "null"})
    assert cfg.kafka.events_topic == "2024" and cfg.kafka.offsets_topic == "1.10"
    assert cfg.kafka.coordinator_log_topic is None and cfg.storm.min_rebalances == 6
    assert cfg.exporter.persist_state is False and cfg.kafka.security.sasl_mechanism is None
    with pytest.raises(ConfigError, match="groups.max_groups: expected an integer, got '5k'"):
        load_config(env={"RM__GROUPS__MAX_GROUPS": "5k"})


def test_kip848_session_timeouts_reach_the_core():
    settings = load_config(env={}, overrides={"core.kip848_session_timeout": "30s",
                                              "core.kip848_session_timeouts": "orders=10s, pay=1m"}).core_settings()
    assert (settings.kip848_session_ms("orders"), settings.kip848_session_ms("pay"),
            settings.kip848_session_ms("other")) == (10_000, 60_000, 30_000)
    assert load_config(env={}).core_settings().kip848_session_ms("any") == 45_000  # Kafka's default


def test_the_exporters_own_group_cap_default_is_the_configurations():
    from rebalance_monitor.config import GroupsConfig
    from rebalance_monitor.metrics.admission import DEFAULT_MAX_GROUPS

    assert GroupsConfig().max_groups == DEFAULT_MAX_GROUPS
