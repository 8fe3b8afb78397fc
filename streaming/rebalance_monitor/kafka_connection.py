"""One Kafka connection: described once, spoken in the dialect of each Kafka client the monitor makes.

`KafkaConnection` is where the monitor's Kafka is (bootstrap servers) and how to talk to it (security protocol,
SASL, TLS files and passwords). It comes from the configuration (`KafkaConfig.connection()`, config.py) or from
Spark-style ``kafka.*`` options in any client's spelling (`KafkaConnection.from_options`: what the Python Kafka
source is given), and is converted to each client's settings here and nowhere else:

==================  ==========================  ===========================  ==============================
KafkaConnection     kafka-python                confluent-kafka (librdkafka)  Java client (Spark's connector)
                    `.kafka_python()`           `.confluent()`                `.java()`, `.java_options()`
==================  ==========================  ===========================  ==============================
bootstrap_servers   bootstrap_servers           bootstrap.servers            bootstrap.servers
security_protocol   security_protocol           security.protocol            security.protocol
sasl_mechanism      sasl_mechanism              sasl.mechanism               sasl.mechanism
sasl_username       sasl_plain_username         sasl.username                sasl.jaas.config (built)
sasl_password       sasl_plain_password         sasl.password                sasl.jaas.config (built)
ssl_cafile          ssl_cafile                  ssl.ca.location              ssl.truststore.location (PEM)
ssl_certfile        ssl_certfile                ssl.certificate.location     (needs ssl.keystore.*)
ssl_keyfile         ssl_keyfile                 ssl.key.location             (needs ssl.keystore.*)
ssl_key_password    ssl_password                ssl.key.password             ssl.key.password
client_id           client_id                   client.id                    client.id
==================  ==========================  ===========================  ==============================

Other client options (`extra`, by their dotted names) pass through to the client that knows them. Secrets are
never logged: log `redacted(...)` of a client's settings, or `KafkaConnection.redacted()`; `repr` hides them.
Pure apart from the clients' own modules, imported only by the conversions that need them.
"""
from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from .logs import CONNECTION_LOGGERS

log = logging.getLogger(__name__)

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

# Spellings (after "kafka.", lower case, "_" turned into ".") that name a field of the connection.
_ALIASES: dict[str, str] = {
    "bootstrap.servers": "bootstrap_servers",
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


@dataclass(frozen=True)
class KafkaConnection:
    """Where the Kafka cluster is and how to talk to it; `extra`: other client options (dotted names, text)."""

    bootstrap_servers: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    client_id: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
    # False: the broker's certificate is not checked against its host name (each client's own spelling of it)
    ssl_check_hostname: bool = True

    def __post_init__(self) -> None:
        if not self.bootstrap_servers:
            raise ValueError("a Kafka connection needs its bootstrap servers (option kafka.bootstrap.servers)")

    # --- reading Spark-style options ------------------------------------------------------------------
    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "KafkaConnection":
        """The connection of Spark-style ``kafka.*`` options (any case) in Java, librdkafka or kafka-python
        spelling; credentials may come inside ``sasl.jaas.config``, the CA file as a PEM truststore. Options it
        does not know are kept in `extra` (dotted, lower case, without ``kafka.``); others are ignored."""
        found: dict[str, Any] = {}
        jaas: tuple[str | None, str | None] = (None, None)
        extra: dict[str, str] = {}
        for key, value in options.items():
            if not str(key).lower().startswith("kafka."):
                continue
            name = _norm(str(key)[len("kafka."):])
            if name in _ALIASES:
                found[_ALIASES[name]] = value
            elif name == "sasl.jaas.config":
                jaas = parse_jaas(str(value))
            else:
                extra[name] = str(value)
        if jaas[0] is not None:
            found.setdefault("sasl_username", jaas[0])
        if jaas[1] is not None:
            found.setdefault("sasl_password", jaas[1])
        if "ssl.endpoint.identification.algorithm" in extra:
            found["ssl_check_hostname"] = extra.pop("ssl.endpoint.identification.algorithm").strip().lower() not in (
                "", "none")
        if str(extra.get("ssl.truststore.type", "")).upper() == "PEM" and "ssl.truststore.location" in extra:
            found.setdefault("ssl_cafile", extra.pop("ssl.truststore.location"))
            del extra["ssl.truststore.type"]
        if not found.get("bootstrap_servers"):
            raise ValueError("option kafka.bootstrap.servers is required")
        return cls(**found, extra=extra)

    # --- the clients' dialects ------------------------------------------------------------------------
    def _set(self) -> dict[str, Any]:
        """The fields that are set (not None, not empty), in the table's order."""
        return {k: v for k, v in asdict(self).items()
                if k not in ("extra", "ssl_check_hostname") and v not in (None, "")}

    def confluent(self) -> dict[str, Any]:
        """librdkafka configuration (confluent-kafka Consumer/Producer/AdminClient); the client's own log lines go
        to :class:`ClientLog` (DEBUG) instead of stderr."""
        names = {
            "bootstrap_servers": "bootstrap.servers", "security_protocol": "security.protocol",
            "sasl_mechanism": "sasl.mechanism", "sasl_username": "sasl.username",
            "sasl_password": "sasl.password", "ssl_cafile": "ssl.ca.location",
            "ssl_certfile": "ssl.certificate.location", "ssl_keyfile": "ssl.key.location",
            "ssl_key_password": "ssl.key.password", "client_id": "client.id",
        }
        conf: dict[str, Any] = {}
        for name, value in self.extra.items():
            if name in _JAVA_ONLY:
                log.warning("Kafka option %r has no librdkafka equivalent; ignored by confluent-kafka", name)
                continue
            conf[name] = value
        for key, value in self._set().items():
            conf[names[key]] = value
        if not self.ssl_check_hostname:
            conf["ssl.endpoint.identification.algorithm"] = "none"
        conf.setdefault("logger", ClientLog())
        return conf

    def kafka_python(self) -> dict[str, Any]:
        """kafka-python configuration (KafkaConsumer/KafkaProducer/KafkaAdminClient keyword arguments).

        Extra options are translated from dotted to underscore names and kept when kafka-python's consumer
        knows them (values converted to the type of kafka-python's default); others are dropped with a warning.
        """
        _quiet_connection_loggers()
        names = {
            "bootstrap_servers": "bootstrap_servers", "security_protocol": "security_protocol",
            "sasl_mechanism": "sasl_mechanism", "sasl_username": "sasl_plain_username",
            "sasl_password": "sasl_plain_password", "ssl_cafile": "ssl_cafile",
            "ssl_certfile": "ssl_certfile", "ssl_keyfile": "ssl_keyfile",
            "ssl_key_password": "ssl_password", "client_id": "client_id",
        }
        defaults = _kafka_python_defaults()
        conf: dict[str, Any] = {}
        for name, value in self.extra.items():
            key = name.replace(".", "_")
            if key not in defaults:
                log.warning("Kafka option %r is not a kafka-python consumer setting; ignored by kafka-python", name)
                continue
            conf[key] = _coerce(value, defaults[key])
        for key, value in self._set().items():
            if key == "security_protocol":
                value = str(value).upper()
            conf[names[key]] = value
        if not self.ssl_check_hostname:
            conf["ssl_check_hostname"] = False
        return conf

    def java(self) -> dict[str, str]:
        """Java client properties (without the ``kafka.`` prefix Spark options need), for Spark's own connector."""
        conf: dict[str, str] = {k: str(v) for k, v in self.extra.items()}
        s = self._set()
        simple = {"bootstrap_servers": "bootstrap.servers", "security_protocol": "security.protocol",
                  "sasl_mechanism": "sasl.mechanism", "ssl_key_password": "ssl.key.password",
                  "client_id": "client.id"}
        for key, name in simple.items():
            if key in s:
                conf[name] = str(s[key])
        if not self.ssl_check_hostname:
            conf["ssl.endpoint.identification.algorithm"] = ""
        if self.sasl_username is not None and "sasl.jaas.config" not in conf:
            mech = str(self.sasl_mechanism or "PLAIN").upper()
            module = ("org.apache.kafka.common.security.scram.ScramLoginModule" if mech.startswith("SCRAM")
                      else "org.apache.kafka.common.security.plain.PlainLoginModule")
            conf["sasl.jaas.config"] = (f"{module} required username={_jaas_quote(self.sasl_username)} "
                                        f"password={_jaas_quote(self.sasl_password or '')};")
        if self.ssl_cafile and "ssl.truststore.location" not in conf:
            conf["ssl.truststore.type"] = "PEM"
            conf["ssl.truststore.location"] = str(self.ssl_cafile)
        if self.ssl_certfile or self.ssl_keyfile:
            if "ssl.keystore.location" not in conf:
                log.warning("client certificate files are not mapped for the Java client: pass "
                            "kafka.ssl.keystore.location/type (a PEM file with key and chain) to Spark's connector")
        return conf

    def java_options(self) -> dict[str, str]:
        """The connection as the ``kafka.*`` options of Spark's Kafka connector and of the Python source: the Java
        client's properties (`java`), and the client certificate files, which the Java client cannot take as two
        PEM files, in the spelling the Python source reads (spark/sources.py gives Spark's connector the Java
        properties alone). `from_options` reads them back to this connection."""
        opts = {f"kafka.{k}": v for k, v in self.java().items()}
        for key, option in (("ssl_certfile", "kafka.ssl.certfile"), ("ssl_keyfile", "kafka.ssl.keyfile")):
            value = getattr(self, key)
            if value not in (None, ""):
                opts[option] = str(value)
        return opts

    def redacted(self) -> dict[str, Any]:
        """The fields that are set and the extra options, secrets replaced by ***: for log lines."""
        return redacted({**self._set(), **self.extra})


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


def is_secret_key(key: str) -> bool:
    """Whether a setting of that name holds a secret (a password, a JAAS line, a token, a key)."""
    return bool(_SECRET_PATTERN.search(key))


def redacted(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a client config (any spelling, or Spark options) with secret values replaced by ***."""
    return {k: (REDACTED if is_secret_key(str(k)) and v not in (None, "") else v) for k, v in config.items()}


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


def _jaas_quote(value: str) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _norm(key: str) -> str:
    return key.strip().lower().replace("_", ".")


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
    for name in CONNECTION_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.CRITICAL)
