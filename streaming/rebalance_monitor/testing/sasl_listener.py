"""A broker's client listener secured with SASL_SSL and SCRAM (`Broker(sasl_ssl=SaslSslListener(...))`), for
tests that reach Kafka the way a secured production cluster is reached.

The client listener (the broker's `bootstrap`) speaks SASL_SSL: TLS with the broker's PEM keystore (a PKCS#8 key
and its certificate chain in one file, Kafka's `ssl.keystore.type=PEM`), then SCRAM authentication of the users
given, whose credentials are written into the cluster's metadata when its storage is formatted
(`kafka-storage format --add-scram 'SCRAM-SHA-512=[name=u,password=p]'`, Kafka 3.5 and later). The controller
listener and the inter-broker listener stay PLAINTEXT on loopback ports of their own (`Broker.internal_port`, the
listener the test's own setup steps use, such as `Broker.create_topics`). No authorizer: an authenticated user
may do everything.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

LISTENER = "SASL_SSL"
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# the storage tool reads `name=value` pairs split at commas, inside brackets
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_.@+-]+")


@dataclass(frozen=True)
class SaslSslListener:
    """The SASL_SSL client listener of a test broker: its TLS keystore and its SCRAM users ({name: password})."""

    keystore_file: str
    users: Mapping[str, str] = field(default_factory=dict, repr=False)
    mechanism: str = "SCRAM-SHA-512"
    # only for an encrypted key in the keystore file
    key_password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"SCRAM mechanism {self.mechanism!r}: one of {', '.join(MECHANISMS)}")
        for name, password in self.users.items():
            if not (_PLAIN_VALUE.fullmatch(name) and _PLAIN_VALUE.fullmatch(password)):
                raise ValueError(f"SCRAM user {name!r}: names and passwords of letters, digits and _.@+- only "
                                 "(the storage tool's --add-scram syntax)")

    def server_properties(self, host: str, port: int, internal_port: int, controller_port: int) -> dict[str, str]:
        """The broker's listener settings: SASL_SSL for clients on `port`, PLAINTEXT between brokers on
        `internal_port`, the controller's on `controller_port`."""
        prefix = f"listener.name.{LISTENER.lower()}."
        props = {
            "listeners": f"{LISTENER}://{host}:{port},PLAINTEXT://{host}:{internal_port},"
                         f"CONTROLLER://{host}:{controller_port}",
            "advertised.listeners": f"{LISTENER}://{host}:{port},PLAINTEXT://{host}:{internal_port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": f"CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,{LISTENER}:{LISTENER}",
            f"{prefix}sasl.enabled.mechanisms": self.mechanism,
            f"{prefix}{self.mechanism.lower()}.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            f"{prefix}ssl.keystore.type": "PEM",
            f"{prefix}ssl.keystore.location": str(self.keystore_file),
            f"{prefix}ssl.client.auth": "none",
        }
        if self.key_password:
            props[f"{prefix}ssl.key.password"] = self.key_password
        return props

    def format_args(self) -> list[str]:
        """The storage tool's arguments that create the users' SCRAM credentials."""
        args: list[str] = []
        for name, password in self.users.items():
            args += ["--add-scram", f"{self.mechanism}=[name={name},password={password}]"]
        return args
