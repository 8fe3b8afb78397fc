"""A real Apache Kafka broker whose client listener is SASL_SSL with SCRAM (`Broker(sasl_ssl=...)`,
testing/sasl_listener.py), its TLS files made at run time (`tls_files.py`), one SCRAM user of a random password.

    b = start_sasl_ssl_broker(tmp_dir)           # or the session fixture `sasl_ssl_broker` (fixtures_kafka.py)
    b.bootstrap, b.username, b.password, b.ca_file, b.mechanism
    load_config(env={}, overrides={**b.overrides(), ...})   # the monitor's kafka.bootstrap_servers, kafka.security.*
    b.connection()                               # the same as a KafkaConnection (password=...: another one)
    b.java_properties()                          # a Java client's properties (Kafka's tools: --consumer-property)
    b.create_topics({"t": 2})                    # setup steps go through the PLAINTEXT inter-broker listener
    b.stop()

Any release of `testing.kafka_install.RELEASES` (`version=`): SCRAM credentials at storage format time need
Kafka 3.5 or later.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from rebalance_monitor.kafka_connection import KafkaConnection
from rebalance_monitor.testing.broker import Broker
from rebalance_monitor.testing.kafka_install import KAFKA_VERSION
from rebalance_monitor.testing.sasl_listener import SaslSslListener

from helpers.tls_files import make_tls_files


@dataclass
class SaslSslBroker:
    broker: Broker
    username: str
    password: str = field(repr=False)
    ca_file: Path
    mechanism: str = "SCRAM-SHA-512"

    @property
    def bootstrap(self) -> str:
        """The SASL_SSL listener: the only address the monitor is given."""
        return self.broker.bootstrap

    @property
    def plaintext_bootstrap(self) -> str:
        """The inter-broker PLAINTEXT listener, for the test's own setup steps."""
        return self.broker.plaintext_bootstrap

    def overrides(self, password: str | None = None) -> dict[str, str]:
        """The monitor's configuration overrides (`load_config(overrides=...)`) that reach this broker."""
        return {"kafka.bootstrap_servers": self.bootstrap, "kafka.security.protocol": "SASL_SSL",
                "kafka.security.sasl_mechanism": self.mechanism, "kafka.security.sasl_username": self.username,
                "kafka.security.sasl_password": self.password if password is None else password,
                "kafka.security.ssl_cafile": str(self.ca_file)}

    def connection(self, password: str | None = None) -> KafkaConnection:
        return KafkaConnection(self.bootstrap, security_protocol="SASL_SSL", sasl_mechanism=self.mechanism,
                               sasl_username=self.username,
                               sasl_password=self.password if password is None else password,
                               ssl_cafile=str(self.ca_file))

    def java_properties(self) -> dict[str, str]:
        """A Java client's security properties, written here (not by kafka_connection.py, which is under test)."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": self.mechanism,
                "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                    f'username="{self.username}" password="{self.password}";',
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_file)}

    def create_topics(self, topics: dict[str, int]) -> None:
        self.broker.create_topics(topics)

    def stop(self) -> None:
        self.broker.stop()


def start_sasl_ssl_broker(directory: Path, version: str = KAFKA_VERSION, username: str = "monitor",
                          mechanism: str = "SCRAM-SHA-512", settings: dict[str, str] | None = None) -> SaslSslBroker:
    """A broker of `version` with a SASL_SSL client listener and one SCRAM user (a random password), its TLS files
    and logs in `directory`."""
    directory = Path(directory)
    tls = make_tls_files(directory / "tls")
    password = secrets.token_hex(16)
    listener = SaslSslListener(str(tls.keystore_file), {username: password}, mechanism=mechanism)
    broker = Broker(version=version, log_path=str(directory / "broker.log"), sasl_ssl=listener,
                    settings=dict(settings or {}))
    broker.start()
    return SaslSslBroker(broker, username, password, tls.ca_file, mechanism)
