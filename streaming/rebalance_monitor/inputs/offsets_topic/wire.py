"""The Kafka protocol primitives the `__consumer_offsets` records are made of: a `Reader` over bytes that
raises `DecodeError` naming the field path (`truncated:GroupMetadataValue.members[2].client_id`), and the
small shapes several records share (a partition index, a client host, topic-partition arrays)."""
from __future__ import annotations

import struct
import uuid
from typing import Callable

MAX_TS = 1 << 53


class DecodeError(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class Reader:
    """A cursor over bytes that reads Kafka protocol primitives, raising DecodeError with the field path."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def _take(self, n: int, path: str) -> int:
        start = self.pos
        if n > self.end - start:
            raise DecodeError(f"truncated:{path}", f"need {n} bytes, {self.end - start} left")
        self.pos = start + n
        return start

    def int8(self, path: str) -> int:
        return struct.unpack_from(">b", self.buf, self._take(1, path))[0]

    def int16(self, path: str) -> int:
        return struct.unpack_from(">h", self.buf, self._take(2, path))[0]

    def int32(self, path: str) -> int:
        return struct.unpack_from(">i", self.buf, self._take(4, path))[0]

    def int64(self, path: str) -> int:
        return struct.unpack_from(">q", self.buf, self._take(8, path))[0]

    def uuid(self, path: str) -> str:
        start = self._take(16, path)
        return str(uuid.UUID(bytes=bytes(self.buf[start:start + 16])))

    def uvarint(self, path: str) -> int:
        value = 0
        shift = 0
        for i in range(5):
            b = self.buf[self._take(1, path)]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                if i == 4 and b > 0x0F:
                    raise DecodeError(f"bad_varint:{path}", "more than 32 bits")
                return value
            shift += 7
        raise DecodeError(f"bad_varint:{path}", "varint longer than 5 bytes")

    # -- lengths -----------------------------------------------------------------------------------
    def _length(self, path: str, compact: bool, wide: bool, nullable: bool) -> int | None:
        """A length prefix; None for null. `wide`: int32 (bytes, arrays) rather than int16 (strings)."""
        if compact:
            n = self.uvarint(path) - 1
        else:
            n = self.int32(path) if wide else self.int16(path)
        if n == -1:
            if nullable:
                return None
            raise DecodeError(f"bad_null:{path}", "null where the schema does not allow it")
        if n < 0:
            raise DecodeError(f"bad_length:{path}", f"length {n}")
        return n

    def string(self, path: str, compact: bool = False, nullable: bool = False) -> str | None:
        n = self._length(path, compact, False, nullable)
        if n is None:
            return None
        start = self._take(n, path)
        try:
            return bytes(self.buf[start:start + n]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"bad_utf8:{path}", str(exc)) from None

    def bytes_(self, path: str, compact: bool = False, nullable: bool = False) -> bytes | None:
        n = self._length(path, compact, True, nullable)
        if n is None:
            return None
        start = self._take(n, path)
        return bytes(self.buf[start:start + n])

    def array(self, path: str, item: Callable[["Reader", str], object], compact: bool = False,
              nullable: bool = False, min_item_bytes: int = 1) -> list | None:
        n = self._length(path, compact, True, nullable)
        if n is None:
            return None
        if n * min_item_bytes > self.remaining():
            raise DecodeError(f"truncated:{path}", f"{n} entries cannot fit in {self.remaining()} bytes")
        return [item(self, f"{path}[{i}]") for i in range(n)]

    def tagged_fields(self, path: str, handlers: dict | None = None) -> dict:
        """Skip (or, for tags in `handlers`, decode) the tagged-field section of a flexible struct."""
        out = {}
        count = self.uvarint(f"{path}._tagged_fields")
        last = -1
        for _ in range(count):
            tag = self.uvarint(f"{path}._tagged_fields.tag")
            if tag <= last:
                raise DecodeError(f"bad_value:{path}._tagged_fields.tag", "tags must be in ascending order")
            last = tag
            size = self.uvarint(f"{path}._tagged_fields.size")
            start = self._take(size, f"{path}._tagged_fields[{tag}]")
            if handlers and tag in handlers:
                name, fn = handlers[tag]
                sub = Reader(self.buf, start, start + size)
                out[name] = fn(sub, f"{path}.{name}")
        return out


def partition_index(r: Reader, path: str) -> int:
    p = r.int32(path)
    if p < 0:
        raise DecodeError(f"bad_value:{path}", f"negative partition {p}")
    return p


def host_of(client_host: str | None) -> str | None:
    """Kafka logs and stores InetAddress.toString(), e.g. `/10.0.0.1` or `name/10.0.0.1`: drop a leading `/`."""
    if client_host is None:
        return None
    return client_host[1:] if client_host.startswith("/") else client_host


def topic_partitions(r: Reader, path: str, compact: bool = False) -> list:
    """[{topic, partitions[int32]}] -> [[topic, p], ...] (protocol order kept)."""
    def entry(rr: Reader, p: str):
        topic = rr.string(f"{p}.topic", compact=compact)
        parts = rr.array(f"{p}.partitions", partition_index, compact=compact, min_item_bytes=4)
        if compact:
            rr.tagged_fields(p)
        return [[topic, x] for x in parts]
    out = []
    for chunk in r.array(path, entry, compact=compact, min_item_bytes=3 if compact else 6):
        out.extend(chunk)
    return out
