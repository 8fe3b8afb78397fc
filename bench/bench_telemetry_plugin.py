"""What the KIP-714 broker plugin costs a broker: the same load of client-metrics pushes on two Apache Kafka brokers
started side by side from the same release, one with the plugin configured (metric.reporters=ExporterPlugin, its
events produced to a topic of that broker) and one without, both with the same client-metrics subscription.

    .venv/bin/python bench/bench_telemetry_plugin.py [--clients 2000] [--seconds 30] [--rounds 2] [--interval-ms 2000]

Each phase loads one broker (the other idles): --clients simulated Java consumers (bench/telemetry_clients.py, a
child process: one connection each, GetTelemetrySubscriptions then a zstd OTLP push every --interval-ms), and a
probe producer and consumer (kafka-python, 20 records/s) measuring produce round trips and end-to-end latency.
The phases alternate, with and without, --rounds times (the order flips each round), so a load of other work on
the machine weighs on both; first each broker gets one unmeasured window of the same load (--warmup-seconds: a
fresh JVM's first window is its slowest). Over each phase's window (after a warm-up of one push interval and the
clients' ramp) the broker's JMX figures are read at the start and the end (Kafka's JmxTool, over a loopback JMX
port):

* pushes/s handled (RequestMetrics Count of PushTelemetry), and the broker's TotalTimeMs / LocalTimeMs of them
  (Kafka rounds each request's times to whole milliseconds);
* the plugin's own timer of its request-thread path (MBean kafka.server:type=rebalance-monitor-telemetry:
  CallerNanosTotal / CallerCalls, CallerNanosMax), its events produced and sent, and its drops;
* the broker's CPU (java.lang OperatingSystem ProcessCpuTime), its garbage collectors' count and time, and its
  request handlers' idle share;
* Produce and FetchConsumer TotalTimeMs (the broker's view, the plugin's own event batches included), and the probe's
  produce round trip and end-to-end latency (the clients' view).

Figures are per configuration over all its rounds; the ratios are with / without. Timings on a shared machine are
noisy: read the ratios, not the absolute figures.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from rebalance_monitor.testing import java_telemetry as jt
from rebalance_monitor.testing.broker import Broker
from rebalance_monitor.testing.kafka_install import KAFKA_VERSION, classpath, java_binary
from rebalance_monitor.testing.processes import free_port, stop_process_group

HERE = Path(__file__).resolve().parent
EVENTS, PROBE = "rebalance-events", "bench-probe"
PUSH, LOCAL = "kafka.network:type=RequestMetrics,name={},request={}", "kafka.server:type=rebalance-monitor-telemetry"
OBJECTS = {"push_total": PUSH.format("TotalTimeMs", "PushTelemetry"),
           "push_local": PUSH.format("LocalTimeMs", "PushTelemetry"),
           "produce": PUSH.format("TotalTimeMs", "Produce"), "fetch": PUSH.format("TotalTimeMs", "FetchConsumer"),
           "plugin": LOCAL, "os": "java.lang:type=OperatingSystem",
           "idle": "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"}
GC = "java.lang:type=GarbageCollector,name=*"


def jmx_args(port: int) -> tuple[str, ...]:
    """Remote JMX on a loopback port, no authentication (the bench's own broker only)."""
    return ("-Dcom.sun.management.jmxremote", f"-Dcom.sun.management.jmxremote.port={port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={port}", "-Dcom.sun.management.jmxremote.host=127.0.0.1",
            "-Djava.rmi.server.hostname=127.0.0.1", "-Dcom.sun.management.jmxremote.authenticate=false",
            "-Dcom.sun.management.jmxremote.ssl=false")


def read_jmx(port: int) -> dict[str, dict[str, float]]:
    """{key of OBJECTS: {attribute: value}} read once with Kafka's JmxTool."""
    cmd = [java_binary(), "-Xmx64m", "-cp", classpath(), "org.apache.kafka.tools.JmxTool", "--one-time", "true",
           "--report-format", "properties", "--jmx-url", f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{port}/jmxrmi"]
    for name in (*OBJECTS.values(), GC):
        cmd += ["--object-name", name]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    by_name = {v: k for k, v in OBJECTS.items()}
    got: dict[str, dict[str, float]] = {k: {} for k in (*OBJECTS, "gc")}
    for line in out.splitlines():
        key, sep, value = line.rpartition("=")
        # properties lines: <object name>:<attribute>=<value>
        obj, _, attr = key.rpartition(":")
        try:
            number = float(value)
        except ValueError:
            continue
        if sep and obj in by_name:
            got[by_name[obj]][attr] = number
        elif sep and obj.startswith("java.lang:") and "type=GarbageCollector" in obj \
                and attr in ("CollectionCount", "CollectionTime"):  # (named java.lang:name=...,type=...)
            got["gc"][attr] = got["gc"].get(attr, 0.0) + number  # all the JVM's collectors together
    return got


class Probe:
    """A producer sending 20 records/s (each send waited for: its round trip) and a consumer measuring each
    record's end-to-end latency (its CreateTime to now), on the loaded broker."""

    def __init__(self, bootstrap: str):
        from kafka import KafkaConsumer, KafkaProducer, TopicPartition

        self.rtt_ms: list[float] = []
        self.e2e_ms: list[float] = []
        self.stop = threading.Event()
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=0)
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, fetch_max_wait_ms=500)
        tp = TopicPartition(PROBE, 0)
        self.consumer.assign([tp])
        self.consumer.seek_to_end(tp)
        self.consumer.position(tp)
        self.threads = [threading.Thread(target=self._produce, daemon=True),
                        threading.Thread(target=self._consume, daemon=True)]

    def start(self) -> "Probe":
        for t in self.threads:
            t.start()
        return self

    def _produce(self) -> None:
        nxt = time.monotonic()
        while not self.stop.is_set():
            t = time.perf_counter()
            self.producer.send(PROBE, b"x" * 100).get(timeout=30)
            self.rtt_ms.append((time.perf_counter() - t) * 1000)
            nxt += 0.05
            self.stop.wait(max(0.0, nxt - time.monotonic()))

    def _consume(self) -> None:
        while not self.stop.is_set():
            for recs in self.consumer.poll(timeout_ms=200).values():
                now = time.time() * 1000
                self.e2e_ms.extend(now - r.timestamp for r in recs)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)
        self.producer.close(timeout=10)
        self.consumer.close()


def phase(broker: Broker, jmx_port: int, a) -> dict:
    """One window of load on `broker`: the JMX deltas, the probe's samples and the clients' own summary."""
    warmup = a.interval_ms / 1000 + a.clients / 2000 + 3  # the clients' ramp, their first push, one interval
    child = subprocess.Popen([sys.executable, str(HERE / "telemetry_clients.py"), broker.bootstrap, "--clients",
                              str(a.clients), "--seconds", str(warmup + a.seconds + 600)],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        time.sleep(warmup)
        start, t0 = read_jmx(jmx_port), time.monotonic()
        probe = Probe(broker.bootstrap).start()
        time.sleep(max(0.0, a.seconds - (time.monotonic() - t0)))
        probe.close()
        end, t1 = read_jmx(jmx_port), time.monotonic()
        child.send_signal(signal.SIGTERM)  # the load goes on until the window's figures are read
        out, _ = child.communicate(timeout=120)
        clients = json.loads(out.strip().splitlines()[-1])
    finally:
        stop_process_group(child, timeout_s=10)
    delta = {k: {attr: end[k].get(attr, 0.0) - start[k].get(attr, 0.0) for attr in end[k]} for k in end}
    for k in ("push_total", "push_local", "produce", "fetch"):  # the window's sum of times: Count x Mean
        delta[k]["Sum"] = (end[k].get("Count", 0) * end[k].get("Mean", 0)
                           - start[k].get("Count", 0) * start[k].get("Mean", 0))
    delta["plugin"]["CallerNanosMax"] = end["plugin"].get("CallerNanosMax", 0.0)
    return {"seconds": t1 - t0, "delta": delta, "rtt": probe.rtt_ms, "e2e": probe.e2e_ms, "clients": clients}


def summarize(phases: list[dict]) -> dict:
    secs = sum(p["seconds"] for p in phases)

    def total(k, attr):
        return sum(p["delta"][k].get(attr, 0.0) for p in phases)

    def mean_ms(k):
        n = total(k, "Count")
        return total(k, "Sum") / n if n else float("nan")

    rtt = sorted(x for p in phases for x in p["rtt"])
    e2e = sorted(x for p in phases for x in p["e2e"])
    pushes = total("push_total", "Count")
    calls = total("plugin", "CallerCalls")
    pct = (lambda xs, q: xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan"))
    return {
        "pushes/s handled": pushes / secs,
        "PushTelemetry TotalTimeMs mean (broker)": mean_ms("push_total"),
        "PushTelemetry LocalTimeMs mean (broker)": mean_ms("push_local"),
        "broker CPU, cores": total("os", "ProcessCpuTime") / 1e9 / secs,
        "broker CPU per push, us": total("os", "ProcessCpuTime") / 1e3 / pushes if pushes else float("nan"),
        "request handlers idle, %": 100 * total("idle", "Count") / 1e9 / secs,
        "broker GC collections/s": total("gc", "CollectionCount") / secs,
        "broker GC time, ms/s": total("gc", "CollectionTime") / secs,
        "Produce TotalTimeMs mean (broker)": mean_ms("produce"),
        "FetchConsumer TotalTimeMs mean (broker)": mean_ms("fetch"),
        "probe produce round trip, ms mean": statistics.fmean(rtt) if rtt else float("nan"),
        "probe produce round trip, ms p99": pct(rtt, 0.99),
        "probe end-to-end, ms mean": statistics.fmean(e2e) if e2e else float("nan"),
        "probe end-to-end, ms p99": pct(e2e, 0.99),
        "plugin request-thread time per push, us": total("plugin", "CallerNanosTotal") / 1e3 / calls if calls else None,
        "plugin request-thread longest push (any time), us":
            max(p["delta"]["plugin"].get("CallerNanosMax", 0) for p in phases) / 1e3 if calls else None,
        "plugin pushes accepted/s": total("plugin", "Accepted") / secs if calls else None,
        "plugin events produced/s": total("plugin", "EventsProduced") / secs if calls else None,
        "plugin events sent/s": total("plugin", "EventsSent") / secs if calls else None,
        "plugin drops": total("plugin", "Dropped") if calls else None,
        "plugin decode errors and ignored pushes": total("plugin", "DecodeErrors") + total("plugin", "Ignored")
        if calls else None,
        "clients' push errors": sum(sum(p["clients"]["errors"].values()) for p in phases),
        "clients' push round trip, ms mean": statistics.fmean(p["clients"]["rtt_ms_mean"] for p in phases),
    }


def report(a, phases: dict[str, list[dict]]) -> None:
    with_plugin, without = summarize(phases["with"]), summarize(phases["without"])
    sample = phases["with"][-1]["clients"]
    print(f"{a.clients} simulated consumers pushing every {a.interval_ms} ms ({sample['payload_bytes']} bytes zstd, "
          f"{sample['raw_payload_bytes']} bytes of OTLP), {a.rounds} rounds of {a.seconds:.0f} s per configuration, "
          f"Kafka {KAFKA_VERSION}; shared machine: read the ratios")
    print(f"{'':50s} {'without plugin':>15s} {'with plugin':>15s} {'ratio':>8s}")
    for key in with_plugin:
        w, wo = with_plugin[key], without[key]
        fmt = (lambda v: "-" if v is None else f"{v:15.3f}")
        ratio = f"{w / wo:8.2f}" if isinstance(w, float) and isinstance(wo, float) and wo else ""
        print(f"{key:50s} {fmt(wo):>15s} {fmt(w):>15s} {ratio}")
    for name, ps in phases.items():
        errors = {}
        for p in ps:
            for k, v in p["clients"]["errors"].items():
                errors[k] = errors.get(k, 0) + v
        print(f"errors the clients saw, {name} plugin: {errors or 'none'}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=30, help="measured seconds per phase")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--interval-ms", type=int, default=2000)
    ap.add_argument("--warmup-seconds", type=float, default=15,
                    help="one unmeasured window of the same load on each broker first (JIT, connections, the "
                         "plugin's producer)")
    a = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="bench-telemetry-")
    ports = {"with": free_port(), "without": free_port()}
    plugin = jt.plugin_broker(EVENTS, log_path=os.path.join(work, "with.log"))
    plugin.jvm_args, plugin.heap = jmx_args(ports["with"]), "1g"
    plain = Broker(log_path=os.path.join(work, "without.log"), jvm_args=jmx_args(ports["without"]), heap="1g")
    brokers = {"with": plugin, "without": plain}
    try:
        for b in brokers.values():
            b.launch()
        for name, b in brokers.items():
            b.wait_ready()
            b.create_topics({PROBE: 1, EVENTS: 1})
            jt.subscribe(b.bootstrap, "rebalance-monitor", a.interval_ms)
        for name in ("with", "without"):  # a first window on each, not measured: a fresh broker's is the slowest
            phase(brokers[name], ports[name], argparse.Namespace(**{**vars(a), "seconds": a.warmup_seconds}))
        phases: dict[str, list[dict]] = {"with": [], "without": []}
        for r in range(a.rounds):
            for name in (("with", "without") if r % 2 == 0 else ("without", "with")):
                got = phase(brokers[name], ports[name], a)
                phases[name].append(got)
                d = got["delta"]
                print(f"round {r + 1}, {name} plugin: {d['push_total'].get('Count', 0) / got['seconds']:.0f} pushes/s, "
                      f"broker CPU {d['os'].get('ProcessCpuTime', 0) / 1e9 / got['seconds']:.2f} cores, probe round "
                      f"trip {statistics.fmean(got['rtt']) if got['rtt'] else float('nan'):.2f} ms mean, client "
                      f"errors {got['clients']['errors'] or 'none'}", flush=True)
        report(a, phases)
        shutil.rmtree(work, ignore_errors=True)  # the brokers' logs stay only when the run failed
        return 0
    finally:
        for b in brokers.values():
            b.stop()


if __name__ == "__main__":
    sys.exit(main())
