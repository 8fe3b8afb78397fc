"""A broker's answer to one request as the bytes it sent: the request framed by kafka-python's own classes, sent on a
plain socket, the response's frame and header taken off. For tests that keep or check the wire bytes of an answer
(a kafka-python connection decodes them and keeps none)."""
from __future__ import annotations

import io
import socket
import struct


def raw_answer(bootstrap: str, request, version: int, timeout_s: float = 10.0) -> bytes:
    """The response body (after the response header) `bootstrap` sends to `request` at `version`. The request
    goes to the broker `bootstrap` names: send group requests there only when it is the group's coordinator (one
    node)."""
    host, _, port = bootstrap.rpartition(":")
    request.API_VERSION = version
    request.with_header(correlation_id=7, client_id="rebalance-monitor-test")
    frame = request.encode(version=version, header=True, framed=True)
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(frame)
        size = struct.unpack(">i", _read(sock, 4))[0]
        body = io.BytesIO(_read(sock, size))
    response_class = request.header.get_response_class()
    header = response_class.parse_header(body, version=version)
    if header.correlation_id != 7:
        raise AssertionError(f"correlation id {header.correlation_id}, sent 7")
    return body.read()


def _read(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"the broker closed the connection after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)
