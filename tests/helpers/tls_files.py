"""TLS files for a test broker, made at run time with the `openssl` command (Debian's, present wherever the JDK
is): a certificate authority of the test, and a broker certificate it signed for 127.0.0.1 and localhost
(subjectAltName), valid for two days.

    files = make_tls_files(tmp_path)
    files.ca_file        # the CA certificate (PEM): the clients' trust (ssl_cafile, ssl.truststore.type=PEM)
    files.keystore_file  # the broker's key (PKCS#8, unencrypted) and certificate chain in one PEM file:
                         # Kafka's `ssl.keystore.type=PEM` keystore

The extensions are the ones a strict verifier asks for (key identifiers, key usage, a CA marked critical), so
Python's `ssl`, librdkafka's OpenSSL and Java all accept the chain.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CA_EXTENSIONS = """\
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""

BROKER_EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
"""


@dataclass(frozen=True)
class TlsFiles:
    ca_file: Path
    keystore_file: Path
    broker_cert: Path
    broker_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    binary = shutil.which("openssl")
    if binary is None:
        raise RuntimeError("the openssl command is needed to make the test's TLS files (apt-get install openssl)")
    done = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr[-2000:]}")


def make_tls_files(directory: Path, days: int = 2) -> TlsFiles:
    """A CA and a broker certificate for 127.0.0.1/localhost signed by it, written into `directory`."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / "ca.ext").write_text(CA_EXTENSIONS)
    (d / "broker.ext").write_text(BROKER_EXTENSIONS)
    _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.csr",
             "-subj", "/CN=rebalance-monitor test CA", cwd=d)
    _openssl("x509", "-req", "-in", "ca.csr", "-signkey", "ca.key", "-out", "ca.pem", "-days", str(days),
             "-extfile", "ca.ext", cwd=d)
    _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key", "-out", "broker.csr",
             "-subj", "/CN=localhost", cwd=d)
    _openssl("x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "broker.crt", "-days", str(days), "-extfile", "broker.ext", cwd=d)
    key, cert, ca = (d / "broker.key").read_text(), (d / "broker.crt").read_text(), (d / "ca.pem").read_text()
    if "BEGIN PRIVATE KEY" not in key:  # Kafka's PEM keystore takes PKCS#8 keys only
        _openssl("pkcs8", "-topk8", "-nocrypt", "-in", "broker.key", "-out", "broker.pk8", cwd=d)
        key = (d / "broker.pk8").read_text()
    keystore = d / "broker-keystore.pem"
    keystore.write_text(key + cert + ca)
    return TlsFiles(ca_file=d / "ca.pem", keystore_file=keystore, broker_cert=d / "broker.crt",
                    broker_key=d / "broker.key")
