"""Logging set-up of the long-running commands, with secrets redacted from every log line.

Third-party clients log their whole configuration at DEBUG (kafka-python does, password included), so
redaction cannot rely on our own log calls: a filter on the handlers replaces every configured secret value
with '***' in the message and in any traceback text, whichever library logged it.
"""
from __future__ import annotations

import logging
import traceback

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
MASK = "***"


class RedactSecrets(logging.Filter):
    def __init__(self, secrets):
        super().__init__()
        self.secrets = sorted({s for s in secrets if s and len(s) >= 3}, key=len, reverse=True)

    def _clean(self, text: str) -> str:
        for s in self.secrets:
            text = text.replace(s, MASK)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed log call: keep it, unformatted
            msg = str(record.msg)
        if any(s in msg for s in self.secrets):
            record.msg, record.args = self._clean(msg), None
        if record.exc_info:
            text = "".join(traceback.format_exception(*record.exc_info))
            if any(s in text for s in self.secrets):
                record.exc_text = self._clean(text).rstrip("\n")
        return True


CLIENT_LOGGERS = ("kafka", "py4j")
# kafka-python's connection layer: an error per connection attempt, several a second while a broker is down. The
# monitor reports an unreachable Kafka itself, once per back-off step (spark/kafka_reach.py); these lines (and
# librdkafka's, kafka_connection.ClientLog) are shown with logging.kafka_clients_level: DEBUG.
CONNECTION_LOGGERS = ("kafka.net",)


def configure_logging(level: str, secrets=(), clients_level: str = "WARNING") -> None:
    """The root logger at `level`; the Kafka clients' and py4j's loggers at `clients_level` (logging.
    kafka_clients_level), since their INFO lines are per-connection chatter, and the clients' connection
    failures only at DEBUG; secrets redacted everywhere."""
    logging.basicConfig(level=getattr(logging, level), format=FORMAT)
    for name in CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(getattr(logging, clients_level))
    for name in CONNECTION_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if clients_level == "DEBUG" else logging.CRITICAL)
    cluster = logging.getLogger("kafka.cluster")
    cluster.filters = [f for f in cluster.filters if not isinstance(f, MetadataRefreshFailures)]
    if clients_level != "DEBUG":
        cluster.addFilter(MetadataRefreshFailures())
    redactor = RedactSecrets(secrets)
    for handler in logging.getLogger().handlers:
        handler.filters = [f for f in handler.filters if not isinstance(f, RedactSecrets)]
        handler.addFilter(redactor)


class MetadataRefreshFailures(logging.Filter):
    """kafka-python's `Metadata refresh: failed <connection error>` (kafka.cluster, ERROR), once a second per client
    while a broker is away: connection chatter like kafka.net's, shown only with logging.kafka_clients_level DEBUG.
    The cluster logger's other lines (a topic not authorized, not found) still pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Metadata refresh")


def config_secrets(cfg) -> list[str]:
    sec = cfg.kafka.security
    return [v for v in (sec.sasl_password, sec.ssl_password, cfg.exporter.basic_auth_password) if v]
