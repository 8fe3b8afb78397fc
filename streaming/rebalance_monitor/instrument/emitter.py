"""Non-blocking, bounded event emitters for the consumer instrumentation.

An emitter takes canonical event objects (plain dicts, contract section 1) from any thread and hands
them to a sink on its own background thread. `emit()` never blocks and never raises: when the bounded
queue is full the event is dropped and counted. A sink that fails (the events topic or the broker is
down) makes the emitter drop and count too; the consumer being watched is never slowed or broken.

`emitter.stats()` returns the counters: `emitted` (accepted into the queue), `sent` (delivered by the
sink: acknowledged by the broker for `KafkaEmitter`), `dropped` (lost: queue full, sink down, delivery
failed, invalid event), `errors` (exceptions seen: sink failures and instrumentation hook failures),
`invalid` (events that failed `parse_event`, dropped), `queued` (waiting now).
"""
from __future__ import annotations

import json
import logging
import queue
import threading
import time
from typing import Callable, Iterable

from rebalance_monitor.core.events import Rejected, parse_event

log = logging.getLogger("rebalance_monitor.instrument")

_STOP = object()


def now_ms() -> int:
    return int(time.time() * 1000)


class Emitter:
    """Base emitter: a bounded queue drained by one daemon thread into `_deliver(batch)`.

    Subclasses implement `_deliver(events: list[dict]) -> None` (runs on the background thread; may
    raise, which counts every event of the batch as dropped) and may override `_open()` / `_close()`.
    """

    def __init__(self, *, max_queue: int = 10_000, validate: bool = True, batch_size: int = 500,
                 name: str = "rebalance-monitor-emitter"):
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, int(max_queue)))
        self._validate = validate
        self._batch_size = max(1, int(batch_size))
        self._lock = threading.Lock()
        self._counts = {"emitted": 0, "sent": 0, "dropped": 0, "errors": 0, "invalid": 0}
        self._tickers: list[Callable[[], None]] = []
        self._closed = False
        self._idle = threading.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # --- called from any thread ------------------------------------------------------------------
    def emit(self, event: dict) -> bool:
        """Queue one event; False (and counted as dropped) if the queue is full or the emitter closed."""
        try:
            if self._closed:
                self._count("dropped")
                return False
            self._queue.put_nowait(event)
            self._idle.clear()
            self._count("emitted")
            return True
        except queue.Full:
            self._count("dropped")
            return False
        except Exception:  # never let the caller see an exception
            self._count("errors")
            return False

    def count_error(self, n: int = 1) -> None:
        """Count a failure seen by an instrumentation hook (the hook swallowed it)."""
        self._count("errors", n)

    def add_ticker(self, fn: Callable[[], None]) -> None:
        """Run `fn` about every 200 ms on the emitter thread (used to flush rate-limited poll events)."""
        with self._lock:
            self._tickers.append(fn)

    def remove_ticker(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if fn in self._tickers:
                self._tickers.remove(fn)

    def stats(self) -> dict:
        with self._lock:
            out = dict(self._counts)
        out["queued"] = self._queue.qsize()
        return out

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued event was handed to the sink (and the sink flushed); True if so."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._queue.empty() and self._idle.wait(timeout=0.05):
                return self._flush_sink(max(0.0, deadline - time.monotonic()))
            time.sleep(0.01)
        return False

    def close(self, timeout: float = 10.0) -> None:
        """Deliver what is queued (bounded by `timeout`), stop the thread, release the sink."""
        if self._closed:
            return
        deadline = time.monotonic() + timeout
        self.flush(timeout=max(0.0, timeout * 0.8))
        self._closed = True
        try:
            self._queue.put(_STOP, timeout=max(0.01, deadline - time.monotonic()))
        except queue.Full:
            pass
        self._thread.join(timeout=max(0.01, deadline - time.monotonic()))
        # anything still queued is lost
        left = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                left += 1
        if left:
            self._count("dropped", left)
        try:
            self._close(max(0.01, deadline - time.monotonic()))
        except Exception:
            self._count("errors")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- background thread -----------------------------------------------------------------------
    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counts[key] += n

    def _run_tickers(self) -> None:
        with self._lock:
            tickers = list(self._tickers)
        for fn in tickers:
            try:
                fn()
            except Exception:
                self._count("errors")

    def _run(self) -> None:
        last_tick = 0.0
        while True:
            now = time.monotonic()
            if now - last_tick >= 0.2:
                last_tick = now
                self._run_tickers()
            try:
                first = self._queue.get(timeout=0.2)
            except queue.Empty:
                self._idle.set()
                continue
            batch = [first]
            while len(batch) < self._batch_size:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(item is _STOP for item in batch)
            events = [item for item in batch if item is not _STOP]
            if self._validate:
                good = []
                for ev in events:
                    if isinstance(parse_event(ev), Rejected):
                        self._count("invalid")
                        self._count("dropped")
                        log.debug("dropping invalid event %r: %s", ev, parse_event(ev))
                    else:
                        good.append(ev)
                events = good
            if events:
                try:
                    self._deliver(events)
                except Exception as exc:
                    self._count("errors")
                    self._count("dropped", len(events))
                    log.debug("emitter sink failed: %s", exc)
            if self._queue.empty():
                self._idle.set()
            if stop:
                self._run_tickers()
                return

    # --- sink interface --------------------------------------------------------------------------
    def _deliver(self, events: list[dict]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _flush_sink(self, timeout: float) -> bool:
        return True

    def _close(self, timeout: float) -> None:
        pass

    # accounting helpers for sinks
    def _sent(self, n: int = 1) -> None:
        self._count("sent", n)

    def _failed(self, n: int = 1) -> None:
        self._count("dropped", n)
        self._count("errors", 1)


class MemoryEmitter(Emitter):
    """Keeps events in a list (`.events`): for tests, examples and in-process use."""

    def __init__(self, **kw):
        self.events: list[dict] = []
        self._events_lock = threading.Lock()
        super().__init__(**kw)

    def _deliver(self, events: list[dict]) -> None:
        with self._events_lock:
            self.events.extend(events)
        self._sent(len(events))

    def snapshot(self) -> list[dict]:
        with self._events_lock:
            return list(self.events)


class CallbackEmitter(Emitter):
    """Calls `fn(event_dict)` for each event on the background thread (e.g. to write JSON lines)."""

    def __init__(self, fn: Callable[[dict], None], **kw):
        self._fn = fn
        super().__init__(**kw)

    def _deliver(self, events: list[dict]) -> None:
        for ev in events:
            try:
                self._fn(ev)
                self._sent()
            except Exception:
                self._failed()


class KafkaEmitter(Emitter):
    """Sends events as JSON record values to `topic`, keyed by the group id (one group stays ordered).

    The producer (kafka-python) is created lazily on the background thread, so constructing the
    emitter never blocks, even with the broker down. While no producer can be created, batches are
    dropped and counted, and creation is retried at most every `retry_s` seconds.
    """

    def __init__(self, bootstrap: str, topic: str, *, max_queue: int = 10_000, validate: bool = True,
                 client_id: str = "rebalance-monitor-instrument", retry_s: float = 5.0,
                 producer_configs: dict | None = None):
        self.bootstrap = bootstrap
        self.topic = topic
        self._client_id = client_id
        self._retry_s = retry_s
        self._producer = None
        self._next_attempt = 0.0
        self._producer_configs = dict(producer_configs or {})
        super().__init__(max_queue=max_queue, validate=validate, name=f"rm-emitter-{topic}")

    def _make_producer(self):
        from kafka import KafkaProducer

        cfg = {
            "bootstrap_servers": self.bootstrap,
            "client_id": self._client_id,
            "acks": 1,
            "linger_ms": 50,
            "max_block_ms": 2000,
            "request_timeout_ms": 5000,
            "delivery_timeout_ms": 15000,
            "buffer_memory": 8 * 1024 * 1024,
            "retries": 2,
            "bootstrap_timeout_ms": 3000,
        }
        known = getattr(KafkaProducer, "DEFAULT_CONFIG", None)
        if known:  # keep only the defaults this kafka-python release knows; user options go through as is
            cfg = {k: v for k, v in cfg.items() if k in known}
        cfg.update(self._producer_configs)
        return KafkaProducer(**cfg)

    def _ensure_producer(self):
        if self._producer is not None:
            return self._producer
        now = time.monotonic()
        if now < self._next_attempt:
            return None
        self._next_attempt = now + self._retry_s
        try:
            self._producer = self._make_producer()
        except Exception as exc:
            self._count("errors")
            log.debug("events producer unavailable (%s): dropping events", exc)
            self._producer = None
        return self._producer

    def _deliver(self, events: list[dict]) -> None:
        producer = self._ensure_producer()
        if producer is None:
            self._count("dropped", len(events))
            return
        for i, ev in enumerate(events):
            try:
                value = json.dumps(ev, separators=(",", ":")).encode("utf-8")
                key = str(ev.get("group", "")).encode("utf-8")
                fut = producer.send(self.topic, value=value, key=key)
            except Exception as exc:
                # typically KafkaTimeoutError (no metadata within max_block_ms): broker or topic down
                self._failed(len(events) - i)
                log.debug("events send failed: %s", exc)
                return
            fut.add_callback(lambda _md: self._sent())
            fut.add_errback(lambda _exc: self._failed())

    def _flush_sink(self, timeout: float) -> bool:
        if self._producer is None:
            return True
        try:
            self._producer.flush(timeout=timeout)
            return True
        except Exception:
            self._count("errors")
            return False

    def _close(self, timeout: float) -> None:
        if self._producer is not None:
            try:
                self._producer.close(timeout=timeout)
            finally:
                self._producer = None


def read_events(bootstrap: str, topic: str, *, timeout_s: float = 10.0, group: str | None = None,
                until: Callable[[list[dict]], bool] | None = None, idle_s: float = 2.0) -> list[dict]:
    """Read the JSON events of `topic` from the beginning (a helper for tests, the demo and checks).

    Stops when `until(events)` is true, after `idle_s` without new records (once something was read),
    or at `timeout_s`. With `group`, keeps only that group's events.
    """
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=int(idle_s * 1000))
    out: list[dict] = []
    deadline = time.monotonic() + timeout_s
    last_new = time.monotonic()
    try:
        while time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=200)
            got = False
            for records in batch.values():
                for rec in records:
                    got = True
                    try:
                        ev = json.loads(rec.value)
                    except ValueError:
                        continue
                    if group is None or (isinstance(ev, dict) and ev.get("group") == group):
                        out.append(ev)
            if got:
                last_new = time.monotonic()
            if until is not None and until(out):
                break
            if until is None and out and time.monotonic() - last_new > idle_s:
                break
    finally:
        consumer.close()
    return out


def iter_valid(events: Iterable[dict]):
    """The events that pass `parse_event`, parsed."""
    for ev in events:
        parsed = parse_event(ev)
        if not isinstance(parsed, Rejected):
            yield parsed
