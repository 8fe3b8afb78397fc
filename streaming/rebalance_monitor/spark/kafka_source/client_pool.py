"""Range clients kept by a Python worker between micro-batches, one per partition, as Spark's connector keeps its
consumers.

Opening a consumer costs about as much as reading a busy partition's share of a batch: on a local broker a range
of 100 records took 29-47 ms with confluent-kafka and 218 ms with kafka-python, a range of 50,000 records 95 ms and
506 ms, a new client each time (`bench/bench_source.py --ranges`, docs/operations.md). Spark reuses
its Python workers, so the next batch's task for the same partition usually lands in a process that already has
a consumer assigned to it, positioned where the last range ended.

A client is handed back only after its range was read to the end; it is paused while it waits (no fetching, no
memory growing), resumed and sought to the next range's start when taken: even where it stopped, since a
confluent-kafka consumer resumed without a seek waited about 0.9 s for its next records, and 10-35 ms with one
(measured on the local broker). A client whose read failed or was cut short is closed, never kept. At most
`MAX_IDLE` wait per process; one idle longer than `IDLE_MS` is closed (by a daemon thread of the process, or at
the next take or give-back); all close when the process exits. Clients that cannot pause, resume and seek (a test's scripted client) are never kept.
"""
from __future__ import annotations

import atexit
import threading
import time
from collections import OrderedDict

MAX_IDLE = 32
IDLE_MS = 60_000  # a job's next batch comes within its trigger interval; a client idle this long is not needed


def pool_key(opts, client: str, topic: str, partition: int) -> tuple:
    """What a kept client must share with a new range to serve it: the client kind, the connection's settings
    (not the throwaway group id, nor objects such as the log adapter) and the source's own consumer settings,
    the partition."""
    conn = opts.connection.confluent() if client == "confluent" else opts.connection.kafka_python()
    settings = tuple(sorted((str(k), repr(v)) for k, v in conn.items()
                            if k not in ("group.id", "group_id") and isinstance(v, (str, int, float, bool))))
    return client, settings, opts.fail_on_data_loss, opts.include_headers, topic, partition


def reusable(c) -> bool:
    return all(callable(getattr(c, name, None)) for name in ("pause", "resume", "seek"))


class ClientPool:
    """The idle clients of this process: key -> (client, idle since), the longest idle first."""

    def __init__(self, max_idle: int = MAX_IDLE, idle_ms: int = IDLE_MS, clock=time.monotonic):
        self.max_idle = max_idle
        self.idle_ms = idle_ms
        self.clock = clock
        self.idle: OrderedDict = OrderedDict()
        self.lock = threading.Lock()
        self.opened = 0  # clients this process opened
        self.reused = 0  # ranges served by a kept client
        self._janitor: threading.Thread | None = None

    def take(self, key: tuple, start: int, open_client):
        """A client for a range of `key` from `start`: a kept one, resumed and sought to `start`, or
        `open_client()` (assigned at `start`)."""
        with self.lock:
            hit = self.idle.pop(key, None)
            stale = self._expired()
        for c in stale:
            _close(c)
        if hit is not None:
            c = hit[0]
            try:
                c.resume()
                c.seek(start)
                self.reused += 1
                return c
            except Exception:  # a client that will not resume or seek is no longer trusted
                _close(c)
        self.opened += 1
        return open_client()

    def give_back(self, key: tuple, c) -> bool:
        """Keep `c` (its range read to the end); False (the caller closes it) when it cannot be kept."""
        if not reusable(c):
            return False
        try:
            c.pause()
        except Exception:
            return False
        with self.lock:
            old = self.idle.pop(key, None)
            self.idle[key] = (c, self.clock())
            extra = []
            while len(self.idle) > self.max_idle:
                extra.append(self.idle.popitem(last=False)[1][0])
            extra.extend(self._expired())
        if old is not None:
            extra.append(old[0])
        for other in extra:
            _close(other)
        self._watch()
        return True

    def _watch(self) -> None:
        """Start the thread that closes clients idle past `idle_ms` while the process reads nothing."""
        if self._janitor is not None and self._janitor.is_alive():
            return

        def sweep():
            while True:
                time.sleep(self.idle_ms / 2000)
                with self.lock:
                    stale = self._expired()
                    empty = not self.idle
                for c in stale:
                    _close(c)
                if empty:
                    return

        self._janitor = threading.Thread(target=sweep, name="rmkafka-client-pool", daemon=True)
        self._janitor.start()

    def _expired(self) -> list:
        """Remove and return the clients idle past `idle_ms` (oldest first; the lock held)."""
        now, out = self.clock(), []
        while self.idle:
            key, (c, since) = next(iter(self.idle.items()))
            if (now - since) * 1000 <= self.idle_ms:
                break
            del self.idle[key]
            out.append(c)
        return out

    def close_all(self) -> None:
        with self.lock:
            kept = [c for c, _ in self.idle.values()]
            self.idle.clear()
        for c in kept:
            _close(c)


def _close(c) -> None:
    try:
        c.close()
    except Exception:  # closing what is no longer wanted must not fail a read
        pass


POOL = ClientPool()
atexit.register(POOL.close_all)
