"""Kafka client configuration from one neutral settings dict.

Three Kafka clients appear in the streaming job and they spell the same settings differently:

=================  ==========================  ===========================  ==============================
neutral key        kafka-python                confluent-kafka (librdkafka)  Java client (Spark's connector)
=================  ==========================  ===========================  ==============================
bootstrap          bootstrap_servers           bootstrap.servers            bootstrap.servers
security_protocol  security_protocol           security.protocol            security.protocol
sasl_mechanism     sasl_mechanism              sasl.mechanism               sasl.mechanism
sasl_username      sasl_plain_username         sasl.username                sasl.jaas.config (built)
sasl_password      sasl_plain_password         sasl.password                sasl.jaas.config (built)
ssl_cafile         ssl_cafile                  ssl.ca.location              ssl.truststore.location (PEM)
ssl_certfile       ssl_certfile                ssl.certificate.location     (needs ssl.keystore.*)
ssl_keyfile        ssl_keyfile                 ssl.key.location             (needs ssl.keystore.*)
ssl_key_password   ssl_password                ssl.key.password             ssl.key.password
client_id          client_id                   client.id                    client.id
=================  ==========================  ===========================  ==============================

`settings_from_options` reads Spark-style ``kafka.*`` options written in any of these spellings
(dotted or with underscores) into the neutral dict plus the options it did not recognise, which are
passed through to the chosen client. Secrets are never logged: log ``redacted(config)`` instead.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Mapping

log = logging.getLogger(__name__)

NEUTRAL_KEYS = (
    "bootstrap", "security_protocol", "sasl_mechanism", "sasl_username", "sasl_password",
    "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_key_password", "client_id",
)

# Spellings (after "kafka.", lower case, "_" turned into ".") that name a neutral setting.
_ALIASES: dict[str, str] = {
    "bootstrap.servers": "bootstrap",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.plain.username": "sasl_username",
    "sasl.password": "sasl_password",
    "sasl.plain.password": "sasl_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.cafile": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.certfile": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.keyfile": "ssl_keyfile",
    "ssl.key.password": "ssl_key_password",
    "ssl.password": "ssl_key_password",
    "client.id": "client_id",
}

# Options that only make sense to Spark's Java connector (Spark rejects most of them anyway).
_JAVA_ONLY = {"key.deserializer", "value.deserializer", "enable.auto.commit", "auto.offset.reset",
              "interceptor.classes", "ssl.truststore.type", "ssl.keystore.type", "ssl.truststore.location",
              "ssl.truststore.password", "ssl.keystore.location", "ssl.keystore.password",
              "sasl.login.callback.handler.class", "sasl.client.callback.handler.class"}

_SECRET_PATTERN = re.compile(r"password|secret|jaas|token|\.pem$|keystore\.key|oauthbearer\.config", re.I)
_JAAS_PAIR = re.compile(r"""(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^\s;]+))""")

REDACTED = "***"


def kafka_settings(cfg) -> dict:
    """Neutral client settings (this module's) for every Kafka client the monitor creates."""
    sec = cfg.kafka.security
    out = {"bootstrap": cfg.kafka.bootstrap_servers, "security_protocol": sec.protocol}
    for key, value in (("sasl_mechanism", sec.sasl_mechanism), ("sasl_username", sec.sasl_username),
                       ("sasl_password", sec.sasl_password), ("ssl_cafile", sec.ssl_cafile),
                       ("ssl_certfile", sec.ssl_certfile), ("ssl_keyfile", sec.ssl_keyfile),
                       ("ssl_key_password", sec.ssl_password)):
        if value is not None:
            out[key] = value
    return out


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_PATTERN.search(key))


def redacted(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a client config (any spelling, or Spark options) with secret values replaced by ***."""
    return {k: (REDACTED if is_secret_key(str(k)) and v not in (None, "") else v) for k, v in config.items()}


def _norm(key: str) -> str:
    return key.strip().lower().replace("_", ".")


def parse_jaas(jaas: str) -> tuple[str | None, str | None]:
    """(username, password) from a Java ``sasl.jaas.config`` value such as
    ``org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";``."""
    user = password = None
    for m in _JAAS_PAIR.finditer(jaas):
        name = m.group(1).lower()
        value = next(g for g in m.groups()[1:] if g is not None)
        value = re.sub(r"\\(.)", r"\1", value)
        if name == "username":
            user = value
        elif name == "password":
            password = value
    return user, password


def settings_from_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Split Spark-style options into (neutral settings, other kafka.* options).

    Only keys starting with ``kafka.`` (any case) are considered. The second dict maps the remaining
    client option names (dotted, lower case, without the ``kafka.`` prefix) to their string values.
    """
    settings: dict[str, Any] = {}
    extra: dict[str, str] = {}
    for key, value in options.items():
        if not str(key).lower().startswith("kafka."):
            continue
        name = _norm(str(key)[len("kafka."):])
        if name in _ALIASES:
            settings[_ALIASES[name]] = value
        elif name == "sasl.jaas.config":
            user, password = parse_jaas(str(value))
            if user is not None:
                settings.setdefault("sasl_username", user)
            if password is not None:
                settings.setdefault("sasl_password", password)
        else:
            extra[name] = str(value)
    return settings, extra


def _check(settings: Mapping[str, Any]) -> None:
    unknown = set(settings) - set(NEUTRAL_KEYS)
    if unknown:
        raise ValueError(f"unknown Kafka settings: {sorted(unknown)} (known: {list(NEUTRAL_KEYS)})")
    if not settings.get("bootstrap"):
        raise ValueError("Kafka settings need 'bootstrap' (option kafka.bootstrap.servers)")


class ClientLog:
    """librdkafka's own log lines, at DEBUG on the logger ``kafka.librdkafka`` whatever their level.

    Without a logger librdkafka writes every connection failure straight to stderr, several a second per client
    while a broker is down. The monitor reports an unreachable Kafka itself, once per back-off step
    (``kafka_reach.py``), so the client's lines are detail: shown with ``logging.kafka_clients_level: DEBUG``.
    confluent-kafka calls ``log(level, fmt, *args)`` when the client is polled."""

    def __init__(self, name: str = "kafka.librdkafka") -> None:
        self.logger = logging.getLogger(name)

    def log(self, _level: int, msg: str, *args) -> None:
        self.logger.debug(msg, *args)


def confluent_config(settings: Mapping[str, Any], extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    """librdkafka configuration (confluent-kafka Consumer/Producer/AdminClient); the client's own log lines go
    to :class:`ClientLog` (DEBUG) instead of stderr."""
    _check(settings)
    names = {
        "bootstrap": "bootstrap.servers", "security_protocol": "security.protocol",
        "sasl_mechanism": "sasl.mechanism", "sasl_username": "sasl.username",
        "sasl_password": "sasl.password", "ssl_cafile": "ssl.ca.location",
        "ssl_certfile": "ssl.certificate.location", "ssl_keyfile": "ssl.key.location",
        "ssl_key_password": "ssl.key.password", "client_id": "client.id",
    }
    conf: dict[str, Any] = {}
    for name, value in (extra or {}).items():
        if name in _JAVA_ONLY:
            log.warning("Kafka option %r has no librdkafka equivalent; ignored by confluent-kafka", name)
            continue
        conf[name] = value
    for key, value in settings.items():
        if value not in (None, ""):
            conf[names[key]] = value
    conf.setdefault("logger", ClientLog())
    return conf


_KP_DEFAULTS: dict[str, Any] | None = None


def _kafka_python_defaults() -> dict[str, Any]:
    global _KP_DEFAULTS
    if _KP_DEFAULTS is None:
        from kafka import KafkaConsumer

        _KP_DEFAULTS = dict(KafkaConsumer.DEFAULT_CONFIG)
    return _KP_DEFAULTS


def _coerce(value: str, default: Any) -> Any:
    if isinstance(default, bool):
        return str(value).strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(value)
    if isinstance(default, float):
        return float(value)
    if default is None and re.fullmatch(r"-?\d+", str(value).strip()):
        return int(value)
    return value


def _quiet_connection_loggers() -> None:
    """kafka-python's connection layer logs an error per connection attempt. Where nobody set its level (the
    Python source's worker processes), it logs at CRITICAL only; `run` sets it from logging.kafka_clients_level
    (logs.configure_logging)."""
    from ..logs import CONNECTION_LOGGERS

    for name in CONNECTION_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.CRITICAL)


def kafka_python_config(settings: Mapping[str, Any], extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    """kafka-python configuration (KafkaConsumer/KafkaProducer/KafkaAdminClient keyword arguments).

    Extra options are translated from dotted to underscore names and kept when kafka-python's consumer
    knows them (values converted to the type of kafka-python's default); others are dropped with a warning.
    """
    _check(settings)
    _quiet_connection_loggers()
    names = {
        "bootstrap": "bootstrap_servers", "security_protocol": "security_protocol",
        "sasl_mechanism": "sasl_mechanism", "sasl_username": "sasl_plain_username",
        "sasl_password": "sasl_plain_password", "ssl_cafile": "ssl_cafile",
        "ssl_certfile": "ssl_certfile", "ssl_keyfile": "ssl_keyfile",
        "ssl_key_password": "ssl_password", "client_id": "client_id",
    }
    defaults = _kafka_python_defaults()
    conf: dict[str, Any] = {}
    for name, value in (extra or {}).items():
        key = name.replace(".", "_")
        if key not in defaults:
            log.warning("Kafka option %r is not a kafka-python consumer setting; ignored by kafka-python", name)
            continue
        conf[key] = _coerce(value, defaults[key])
    for key, value in settings.items():
        if value in (None, ""):
            continue
        if key == "security_protocol":
            value = str(value).upper()
        conf[names[key]] = value
    return conf


def _jaas_quote(value: str) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def java_config(settings: Mapping[str, Any], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Java client properties (without the ``kafka.`` prefix Spark options need), for Spark's own connector."""
    _check(settings)
    conf: dict[str, str] = {k: str(v) for k, v in (extra or {}).items()}
    simple = {"bootstrap": "bootstrap.servers", "security_protocol": "security.protocol",
              "sasl_mechanism": "sasl.mechanism", "ssl_key_password": "ssl.key.password",
              "client_id": "client.id"}
    for key, name in simple.items():
        if settings.get(key) not in (None, ""):
            conf[name] = str(settings[key])
    user, password = settings.get("sasl_username"), settings.get("sasl_password")
    if user is not None and "sasl.jaas.config" not in conf:
        mech = str(settings.get("sasl_mechanism") or "PLAIN").upper()
        module = ("org.apache.kafka.common.security.scram.ScramLoginModule" if mech.startswith("SCRAM")
                  else "org.apache.kafka.common.security.plain.PlainLoginModule")
        conf["sasl.jaas.config"] = (f"{module} required username={_jaas_quote(user)} "
                                    f"password={_jaas_quote(password or '')};")
    if settings.get("ssl_cafile") and "ssl.truststore.location" not in conf:
        conf["ssl.truststore.type"] = "PEM"
        conf["ssl.truststore.location"] = str(settings["ssl_cafile"])
    if settings.get("ssl_certfile") or settings.get("ssl_keyfile"):
        if "ssl.keystore.location" not in conf:
            log.warning("client certificate files are not mapped for the Java client: pass "
                        "kafka.ssl.keystore.location/type (a PEM file with key and chain) to Spark's connector")
    return conf
