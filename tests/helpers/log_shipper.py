"""A small log shipper for the tests: tails the brokers' coordinator log files and produces each
new line into a Kafka topic, as Filebeat, Fluent Bit or Vector would in production.

Two forms: `bare` (the line as the broker wrote it) and `json` (Filebeat's layout: the line in `message`, the
shipper's read time in `@timestamp`, the file and host beside it). Lines are read whole: a line still being
written waits for its newline.
"""
from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone
from pathlib import Path


def filebeat_json(line: str, path: str, host: str) -> bytes:
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return json.dumps({"@timestamp": now, "message": line, "log": {"file": {"path": path}},
                       "host": {"name": host}, "agent": {"type": "filebeat"}}).encode()


class LogShipper:
    """Ship every line of `files` into `topic` (form "bare" or "json"), from the start of each file."""

    def __init__(self, bootstrap: str, topic: str, files: list[Path], form: str = "bare", poll_s: float = 0.2):
        if form not in ("bare", "json"):
            raise ValueError(f"log shipper form {form!r}: bare or json")
        self.bootstrap, self.topic, self.files, self.form, self.poll_s = bootstrap, topic, files, form, poll_s
        self.shipped = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "LogShipper":
        self._thread = threading.Thread(target=self._run, name=f"log-shipper-{self.topic}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, client_id="rm-log-shipper", linger_ms=20)
        offsets = {str(f): 0 for f in self.files}
        partial = {str(f): b"" for f in self.files}
        try:
            while True:
                stopping = self._stop.is_set()
                for f in self.files:
                    key = str(f)
                    try:
                        with open(f, "rb") as fh:
                            fh.seek(offsets[key])
                            chunk = fh.read()
                    except FileNotFoundError:
                        continue
                    offsets[key] += len(chunk)
                    data = partial[key] + chunk
                    *lines, partial[key] = data.split(b"\n")
                    for raw in lines:
                        line = raw.decode("utf-8", errors="replace").rstrip("\r")
                        if not line:
                            continue
                        value = line.encode() if self.form == "bare" else filebeat_json(line, key, f"broker-{Path(key).parent.name}")
                        producer.send(self.topic, value)
                        self.shipped += 1
                producer.flush()
                if stopping:
                    return
                self._stop.wait(self.poll_s)
        finally:
            producer.close()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ship what is left, then stop."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def drain(self, quiet_s: float = 1.0) -> None:
        """Wait until the files have not grown for `quiet_s` (the broker stopped writing)."""
        last = -1
        while True:
            size = sum(f.stat().st_size for f in self.files if f.exists())
            if size == last:
                return
            last = size
            time.sleep(quiet_s)
