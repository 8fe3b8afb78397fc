"""Simulated KIP-714 clients for bench_telemetry_plugin.py: many Java consumers' metrics pushes, cheaply.

Each simulated client holds its own TCP connection to the broker and speaks the two KIP-714 requests the way a
Java consumer does (request and response layouts from Kafka's message definitions,
clients/src/main/resources/common/message/{GetTelemetrySubscriptions,PushTelemetry}{Request,Response}.json, all
version 0 and flexible: request header v2, response header v1):

* GetTelemetrySubscriptions with a zero client instance id: the broker assigns one and answers with the
  subscription id, the push interval and the compression types it takes (zstd first);
* then PushTelemetry every push interval: the subscription id, zstd-compressed OTLP `MetricsData` of what a
  classic consumer pushes under the monitor's subscription (consumer.coordinator.*, last.poll, time.between.poll,
  poll.idle.ratio: 34 metrics; resource attributes group_id, group_member_id, client_rack), with fresh timestamps.

Run alone (the bench runs it as a child process, so its CPU is not the probe's):
    python bench/telemetry_clients.py HOST:PORT --clients 2000 --seconds 40
It prints one JSON line when done (--seconds, or SIGTERM): pushes answered, errors by code, the push round trip as
the clients saw it.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import struct
import sys
import time

GET_SUBSCRIPTIONS, PUSH_TELEMETRY = 71, 72
ZSTD = 4
ERRORS = {89: "THROTTLING_QUOTA_EXCEEDED", 117: "UNKNOWN_SUBSCRIPTION_ID", 118: "TELEMETRY_TOO_LARGE"}

# what a classic Java consumer pushes under the monitor's subscription (MemberMetrics.SUBSCRIPTION): the
# coordinator group's metrics, and the poll metrics of the consumer group; "sum" ones are counters (delta)
COORDINATOR = ("heartbeat.rate", "heartbeat.total:sum", "heartbeat.response.time.max", "last.heartbeat.seconds.ago",
               "join.time.avg", "join.time.max", "join.rate", "join.total:sum", "sync.time.avg", "sync.time.max",
               "sync.rate", "sync.total:sum", "rebalance.latency.avg", "rebalance.latency.max",
               "rebalance.latency.total:sum", "rebalance.total:sum", "rebalance.rate.per.hour",
               "failed.rebalance.total:sum", "failed.rebalance.rate.per.hour", "last.rebalance.seconds.ago",
               "commit.latency.avg", "commit.latency.max", "commit.rate", "commit.total:sum", "assigned.partitions",
               "partition.assigned.latency.avg", "partition.assigned.latency.max", "partition.revoked.latency.avg",
               "partition.revoked.latency.max", "partition.lost.latency.avg")
POLL = ("last.poll.seconds.ago", "time.between.poll.avg", "time.between.poll.max", "poll.idle.ratio.avg")
METRICS = tuple(f"org.apache.kafka.consumer.coordinator.{m}" for m in COORDINATOR) + \
    tuple(f"org.apache.kafka.consumer.{m}" for m in POLL)


# --- protobuf (the wire format, written from its definition) ---------------------------------------------------
def _varint(v: int) -> bytes:
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _field(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _string(num: int, s: str) -> bytes:
    return _field(num, s.encode())


def _attribute(key: str, value: str) -> bytes:
    return _string(1, key) + _field(2, _string(1, value))  # KeyValue{key, AnyValue{string_value}}


class OtlpTemplate:
    """One client's MetricsData, encoded once; each push rewrites only the points' timestamps (fixed64 fields at
    known offsets) and values' bits stay as they were (the plugin's cost does not depend on them)."""

    def __init__(self, group: str, member_id: str):
        self.time_offsets: list[int] = []
        metrics = []
        for name in METRICS:
            name, _, kind = name.partition(":")
            value = struct.pack("<d", random.uniform(0, 100))
            point = b"\x11" + bytes(8) + b"\x19" + bytes(8) + b"\x21" + value  # start_time, time, as_double
            if kind == "sum":  # Sum{data_points, aggregation_temporality=DELTA(1), is_monotonic}
                body = _field(7, _field(1, point) + b"\x10\x01\x18\x01")
            else:
                body = _field(5, _field(1, point))  # Gauge{data_points}
            metrics.append((_string(1, name) + _string(2, f"The {name.rsplit('.', 1)[-1]} of the consumer"), body,
                            point))
        resource = b"".join(_field(1, _attribute(k, v)) for k, v in  # Resource{attributes...}
                            (("group_id", group), ("group_member_id", member_id), ("client_rack", "")))
        scope = _field(1, _string(1, "org.apache.kafka"))  # ScopeMetrics{scope{name}, metrics...}
        scope_metrics = scope + b"".join(_field(2, head + body) for head, body, _ in metrics)
        self.data = bytearray(_field(1, _field(1, resource) + _field(2, scope_metrics)))  # MetricsData{ResourceMetrics}
        # the timestamps: each point's two fixed64 fields, zero until now, found in order
        blank = b"\x11" + bytes(8) + b"\x19" + bytes(8)
        at = 0
        for _ in metrics:
            at = self.data.index(blank, at)
            self.time_offsets += [at + 1, at + 10]
            at += len(blank)

    def encode(self, now_ns: int) -> bytes:
        for off in self.time_offsets:
            struct.pack_into("<Q", self.data, off, now_ns)
        return bytes(self.data)


# --- the Kafka protocol ------------------------------------------------------------------------------------------
def _request(api_key: int, correlation: int, client_id: str, body: bytes) -> bytes:
    cid = client_id.encode()
    header = struct.pack(">hhih", api_key, 0, correlation, len(cid)) + cid + b"\x00"  # header v2: no tags
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


class Client:
    def __init__(self, index: int, host: str, port: int):
        self.index, self.host, self.port = index, host, port
        self.client_id = f"bench-consumer-{index}"
        self.correlation = 0
        self.reader = self.writer = None
        self.template = OtlpTemplate(f"bench-group-{index // 10}", f"{self.client_id}-{random.getrandbits(64):016x}")

    async def call(self, api_key: int, body: bytes) -> bytes:
        self.correlation += 1
        self.writer.write(_request(api_key, self.correlation, self.client_id, body))
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        resp = await self.reader.readexactly(size)
        _, pos = _uvarint(resp, 4)  # response header v1: correlation id, tags
        return resp[pos:]

    async def subscribe(self, instance: bytes = bytes(16)) -> tuple[int, bytes, int, int]:
        """(error code, client instance id, subscription id, push interval ms)."""
        body = await self.call(GET_SUBSCRIPTIONS, instance + b"\x00")
        _throttle, error = struct.unpack_from(">ih", body, 0)
        instance = body[6:22]
        subscription = struct.unpack_from(">i", body, 22)[0]
        n, pos = _uvarint(body, 26)
        pos += max(n - 1, 0)
        interval = struct.unpack_from(">i", body, pos)[0]
        return error, instance, subscription, interval


async def run_client(c: Client, stop_at: float, stopping: asyncio.Event, stats: dict, compress) -> None:
    c.reader, c.writer = await asyncio.open_connection(c.host, c.port)
    try:
        error, instance, subscription, interval = await c.subscribe()
        if error:
            stats["errors"][ERRORS.get(error, str(error))] = stats["errors"].get(ERRORS.get(error, str(error)), 0) + 1
            return
        period = interval / 1000 + 0.005  # the broker throttles a push that comes sooner than the interval
        await asyncio.sleep(random.uniform(0, period))  # clients start at any time: pushes spread over the interval
        nxt = time.monotonic()
        while time.monotonic() < stop_at and not stopping.is_set():
            payload = compress(c.template.encode(time.time_ns()))
            body = instance + struct.pack(">ib", subscription, 0) + struct.pack(">b", ZSTD) \
                + bytes(_varint(len(payload) + 1)) + payload + b"\x00"
            sent = time.perf_counter()
            resp = await c.call(PUSH_TELEMETRY, body)
            stats["rtt_s"] += time.perf_counter() - sent
            answered = time.monotonic()
            error = struct.unpack_from(">h", resp, 4)[0]
            if error:
                name = ERRORS.get(error, str(error))
                stats["errors"][name] = stats["errors"].get(name, 0) + 1
                if error == 117:  # the subscription changed: ask again
                    _, _, subscription, interval = await c.subscribe(instance)
                    period = interval / 1000 + 0.005
            else:
                stats["pushes"] += 1
            stats["payload_bytes"] = len(payload)
            # the next push one interval after this one was answered: the broker throttles a push that it handles
            # sooner than the interval after the last one it handled, so a late answer delays the next push
            nxt = max(nxt + period, answered + period)
            await asyncio.sleep(max(0.0, nxt - time.monotonic()))  # a stop waits for this at most
    except (OSError, asyncio.IncompleteReadError) as exc:
        stats["errors"][type(exc).__name__] = stats["errors"].get(type(exc).__name__, 0) + 1
    finally:
        c.writer.close()


async def run(host: str, port: int, clients: int, seconds: float) -> dict:
    import pyarrow as pa

    codec = pa.Codec("zstd")
    compress = codec.compress
    stats = {"clients": clients, "pushes": 0, "errors": {}, "rtt_s": 0.0, "payload_bytes": 0,
             "raw_payload_bytes": len(OtlpTemplate("bench-group-0", "m" * 45).data)}
    stop_at = time.monotonic() + seconds
    stopping = asyncio.Event()
    # SIGTERM (the bench, at the end of its window): every client stops after its push under way
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    made = [Client(i, host, port) for i in range(clients)]
    tasks = []
    for i, c in enumerate(made):  # connect over the first second, as a fleet that restarts does not
        tasks.append(asyncio.create_task(run_client(c, stop_at, stopping, stats, compress)))
        if i % 100 == 99:
            await asyncio.sleep(0.05)
    await asyncio.gather(*tasks)
    stats["rtt_ms_mean"] = round(stats.pop("rtt_s") * 1000 / max(1, stats["pushes"]), 3)
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bootstrap")
    ap.add_argument("--clients", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=40)
    a = ap.parse_args(argv)
    host, port = a.bootstrap.rsplit(":", 1)
    print(json.dumps(asyncio.run(run(host, int(port), a.clients, a.seconds))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
