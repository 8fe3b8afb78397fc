"""Steady record traffic so the workload consumers have records to read and lag to show."""
from __future__ import annotations

import threading
import time


def produce_traffic(bootstrap: str, topic: str, rate: float, *, duration_s: float | None = None,
                    stop: threading.Event | None = None, value_size: int = 64, keys: int = 32) -> int:
    """Produce about `rate` records per second to `topic` until `duration_s` passed or `stop` is set
    (at least one of them must be given). Keys cycle over `keys` values so every partition gets
    records. Returns the number of records acknowledged."""
    if duration_s is None and stop is None:
        raise ValueError("give duration_s or stop, or the traffic never ends")
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, acks=1, client_id="rm-traffic")
    acked = [0]
    lock = threading.Lock()

    def ok(_md):
        with lock:
            acked[0] += 1

    interval = 1.0 / rate if rate > 0 else 0.1
    deadline = time.monotonic() + duration_s if duration_s is not None else None
    padding = b"x" * max(0, value_size - 16)
    sent = 0
    next_at = time.monotonic()
    try:
        while (stop is None or not stop.is_set()) and (deadline is None or time.monotonic() < deadline):
            now = time.monotonic()
            if now < next_at:
                if stop is not None:
                    stop.wait(next_at - now)
                else:
                    time.sleep(next_at - now)
                continue
            if rate > 0:
                key = str(sent % keys).encode()
                value = b"%012d" % sent + padding
                try:
                    producer.send(topic, key=key, value=value).add_callback(ok)
                except Exception:
                    pass
                sent += 1
            next_at += interval
            if time.monotonic() - next_at > 1.0:  # fell behind (slow machine): do not burst
                next_at = time.monotonic()
        producer.flush(timeout=5)
    finally:
        producer.close(timeout=5)
    with lock:
        return acked[0]


class TrafficProducer:
    """`produce_traffic` on a background thread: `TrafficProducer(bootstrap, topic, rate).start()`,
    then `.stop()` (returns the number of records acknowledged)."""

    def __init__(self, bootstrap: str, topic: str, rate: float, **kwargs):
        self.bootstrap, self.topic, self.rate, self.kwargs = bootstrap, topic, rate, kwargs
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.acked = 0
        self.error: Exception | None = None

    def start(self) -> "TrafficProducer":
        def run():
            try:
                self.acked = produce_traffic(self.bootstrap, self.topic, self.rate, stop=self._stop, **self.kwargs)
            except Exception as exc:  # pragma: no cover - reported through .error
                self.error = exc

        self._thread = threading.Thread(target=run, name=f"traffic-{self.topic}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 15.0) -> int:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
        return self.acked
