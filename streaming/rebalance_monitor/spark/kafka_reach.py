"""Is Kafka reachable with the monitor's settings? One metadata request, and the client's own error when not.

`rebalance-monitor run` asks before it starts Spark and the query, and again before each restart of the query:
against a closed port, a host that does not answer or a misconfigured listener (a wrong security protocol, bad
credentials) it then reports one line per back-off step, with the address and the client's error, and /ready
says the same, instead of the clients' own lines several times a second (which go to DEBUG:
``kafka_connection.ClientLog``, and the kafka-python connection loggers, ``logs.configure_logging``).

The probe uses the client the Python source would use (``kafka.client``), made from the monitor's
`KafkaConnection`, the one Spark's Java connector and the Python source read with too.
"""
from __future__ import annotations

import socket
import time

from ..kafka_connection import KafkaConnection
from .kafka_source.options import resolve_client


PROBE_TIMEOUT_S = 10.0
# the longest kafka-python's failed probe then waits for one connection's own error
DIAGNOSIS_TIMEOUT_S = 5.0
# librdkafka's summary of the others ("1/1 brokers are down"): the error that caused it says more
_SUMMARY_ERRORS = ("_ALL_BROKERS_DOWN",)


def probe(connection: KafkaConnection, client: str = "auto", timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when a broker of ``connection.bootstrap_servers`` answered a metadata request within ``timeout_s``;
    else the client's error (one line)."""
    try:
        chosen, _ = resolve_client(client)
    except ImportError as exc:
        return f"no Kafka client: {exc}"
    try:
        if chosen == "confluent":
            return _probe_confluent(connection, timeout_s)
        return _probe_kafka_python(connection, timeout_s)
    except Exception as exc:  # noqa: BLE001 - a client that cannot even be built (bad file paths, ...)
        return one_line(exc)


def _probe_confluent(connection: KafkaConnection, timeout_s: float) -> str | None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list = []
    conf = connection.confluent()
    conf.update({"error_cb": errors.append, "client.id": "rebalance-monitor-probe",
                 "socket.connection.setup.timeout.ms": int(timeout_s * 1000)})
    admin = AdminClient(conf)
    deadline = time.monotonic() + timeout_s
    last: str | None = None
    while True:
        try:
            admin.list_topics(timeout=min(1.0, max(0.1, deadline - time.monotonic())))
            return None
        except KafkaException as exc:
            last = one_line(exc.args[0].str() if exc.args else exc)
        admin.poll(0)  # serves error_cb (and the log lines)
        causes = [e for e in errors if e.name() not in _SUMMARY_ERRORS] or errors
        if causes:
            return one_line(causes[0].str())
        if time.monotonic() >= deadline:
            return f"no answer within {timeout_s:.0f} s ({last})"


def _probe_kafka_python(connection: KafkaConnection, timeout_s: float) -> str | None:
    from kafka import KafkaConsumer

    conf = connection.kafka_python()
    conf.update({"client_id": "rebalance-monitor-probe", "request_timeout_ms": int(timeout_s * 1000) + 1000,
                 "bootstrap_timeout_ms": int(timeout_s * 1000)})
    consumer = None
    try:
        consumer = KafkaConsumer(**conf)
        consumer.topics()
        return None
    except Exception as exc:  # noqa: BLE001 - NoBrokersAvailable, KafkaTimeoutError, SSL errors, ...
        error = one_line(exc)
    finally:
        if consumer is not None:
            consumer.close()
    cause = _kafka_python_connection_error(conf, min(timeout_s, DIAGNOSIS_TIMEOUT_S))
    return error if cause is None else one_line(f"{error} (the connection's error: {cause})")


def _kafka_python_connection_error(conf: dict, timeout_s: float) -> str | None:
    """Why kafka-python's connection to the first bootstrap server fails, or None when it does not fail where this
    looks (TCP, TLS, SASL). kafka-python 3 retries a bootstrap connection that failed until its time is up, then
    says only "Unable to bootstrap from ...": the connection's own error goes to its log alone, and a SASL
    failure not even there when the broker's error answer and its close of the connection arrive in one read (the
    close is handled first: "socket disconnected"). So the same steps are taken again one at a time, on a blocking
    socket with kafka-python's own TLS context, request classes and SASL mechanism; the broker's answer to the
    authentication is read before its close. None with a kafka-python without these classes (2.x)."""
    try:
        import kafka.errors as errors
        from kafka.net.sasl import get_sasl_mechanism
        from kafka.net.transport import KafkaSSLTransport
        from kafka.protocol.parser import KafkaProtocol
        from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
    except ImportError:
        return None
    servers = conf.get("bootstrap_servers") or ""
    first = (servers.split(",") if isinstance(servers, str) else list(servers))[0].strip()
    host, _, port = first.rpartition(":")
    protocol = str(conf.get("security_protocol") or "PLAINTEXT").upper()
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout_s)
    except (OSError, ValueError) as exc:
        return one_line(exc)
    try:
        if protocol in ("SSL", "SASL_SSL"):
            ssl_conf = {k: conf.get(k, v) for k, v in KafkaSSLTransport.DEFAULT_CONFIG.items()}
            sock = KafkaSSLTransport._build_ssl_context(ssl_conf).wrap_socket(sock, server_hostname=host)
        if not protocol.startswith("SASL_"):
            return None
        parser = KafkaProtocol(client_id="rebalance-monitor-probe")

        def ask(request, version: int):
            request.API_VERSION = version
            parser.send_request(request)
            sock.sendall(parser.send_bytes())
            while True:
                data = sock.recv(65536)
                if not data:
                    raise ConnectionError("the broker closed the connection")
                answers = parser.receive_bytes(data)
                if answers:
                    return answers[0][1]

        mechanism_name = conf.get("sasl_mechanism")
        answer = ask(SaslHandshakeRequest(mechanism=mechanism_name), 1)
        if answer.error_code:
            return f"{errors.for_code(answer.error_code).__name__}: the broker's SASL mechanisms are " \
                   f"{', '.join(answer.mechanisms)}, not {mechanism_name}"
        mechanism = get_sasl_mechanism(mechanism_name)(host=host, **conf)
        while not mechanism.is_done():
            answer = ask(SaslAuthenticateRequest(mechanism.auth_bytes()), 1)
            if answer.error_code:
                return one_line(f"{errors.for_code(answer.error_code).__name__}: {answer.error_message}")
            mechanism.receive(answer.auth_bytes)
        return None if mechanism.is_authenticated() else f"SASL {mechanism_name} authentication failed"
    except Exception as exc:  # noqa: BLE001 - a TLS handshake refused, a closed connection: that is the answer
        return one_line(f"{type(exc).__name__}: {exc}")
    finally:
        sock.close()


def one_line(error, limit: int = 400) -> str:
    """An error as one short line: a Spark query's exception carries a JVM and a Python traceback; the line
    that names the Kafka client's error, or else the first one, says what failed."""
    text = str(error).strip() or type(error).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for marker in ("KafkaError{", "KafkaException", "KafkaTimeoutError", "NoBrokersAvailable",
                   "org.apache.kafka.common.errors.", "DataLossError", "TimeoutError"):
        named = [ln for ln in lines if marker in ln]
        if named:
            line = named[-1]
            break
    else:
        line = lines[0] if lines else text
    return line if len(line) <= limit else line[: limit - 3] + "..."


class KafkaReach:
    """The monitor's view of its Kafka: `check()` probes; `down_since` is set while the probes fail."""

    def __init__(self, connection: KafkaConnection, client: str = "auto", timeout_s: float = PROBE_TIMEOUT_S):
        self.connection = connection
        self.client = client
        self.timeout_s = timeout_s
        self.address = str(connection.bootstrap_servers)
        self.down_since: float | None = None
        self.failures = 0

    def check(self) -> str | None:
        error = probe(self.connection, self.client, self.timeout_s)
        if error is None:
            self.down_since = None
            return None
        self.failures += 1
        if self.down_since is None:
            self.down_since = time.monotonic()
        return error

    def reason(self, error: str, retry_in_s: float) -> str:
        """The one line of the log and /ready's body for a failed check."""
        return (f"Kafka at {self.address} is not reachable (security protocol "
                f"{self.connection.security_protocol}): {error}; retrying in {retry_in_s:.0f} s")


class Backoff:
    """1, 2, 4, ... seconds up to `cap`; `reset()` after a long healthy run."""

    def __init__(self, first_s: float = 1.0, cap_s: float = 60.0) -> None:
        self.first_s, self.cap_s = first_s, cap_s
        self.next_s = first_s

    def step(self) -> float:
        delay = self.next_s
        self.next_s = min(self.next_s * 2, self.cap_s)
        return delay

    def reset(self) -> None:
        self.next_s = self.first_s
