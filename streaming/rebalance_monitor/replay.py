"""`rebalance-monitor replay`: the streaming job's reconstruction without Spark, over a file or stdin. Its JSON
records carry `kafka_cluster` as the job's sinks write it (cluster_stamp.py): `--cluster`, else the configuration's
`kafka.cluster_name`."""
from __future__ import annotations

import base64
import json
import sys
from typing import IO, Iterable

from .cluster_stamp import stamp_prefix, stamped
from .config import MonitorConfig
from .core.events import Rejected
from .core.reconstruct import Reconstructor
from .core.vocabulary import RecordKind
from .decoding.json_parser import use_fastest_available
from .decoding.reference import decode_record, topic_names_for


def _records_of(source: str, lines: Iterable[str], topic_names=None, max_future_ms: int | None = None):
    """Yield (events, rejects) per input line. `max_future_ms`: kafka.max_future_skew, as the job decodes with it
    (an event whose own time is that far ahead of its arrival time takes the arrival time; no wall clock here)."""
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        if source == "offsets-topic":
            yield decode_record("offsets-dump", line, topic_names=topic_names, max_future_ms=max_future_ms)
        else:
            yield decode_record(source, line.encode("utf-8", "surrogateescape"), max_future_ms=max_future_ms)


def run_replay(cfg: MonitorConfig, source: str, stream: IO[str], out: IO[str], err: IO[str],
               fmt: str = "json", with_status: bool = False, cluster: str | None = None) -> int:
    use_fastest_available()
    recon = Reconstructor(cfg.core_settings(), max_disorder_ms=int(cfg.state.watermark_delay),
                          emit_status=with_status, group_filter=cfg.group_filter(),
                          offsets_partitions=cfg.kafka.offsets_topic_partitions)
    printer = TablePrinter(out) if fmt == "table" else JsonPrinter(out, cluster or cfg.kafka.cluster_name)
    topic_names = topic_names_for(cfg) if source == "offsets-topic" else None
    for events, rejects in _records_of(source, stream, topic_names, int(cfg.kafka.max_future_skew)):
        for rej in rejects:
            recon.feed(rej)
            _print_reject(rej, err)
        for ev in events:
            printer.write(recon.feed(ev))
        for rej in recon.rejects:
            if rej.reason == "late_event":
                _print_reject(rej, err)
        recon.rejects.clear()
    printer.write(recon.finish())
    printer.close()
    st = recon.stats
    reasons = ", ".join(f"{k}={v}" for k, v in sorted(st.rejected.items())) or "none"
    emitted = ", ".join(f"{k}={v}" for k, v in sorted(st.records.items())) or "none"
    err.write(f"replay: {st.events} input events/records, {st.used} used, {st.rejected_total} rejected "
              f"({reasons}), {st.groups_filtered} filtered by group; output: {emitted}\n")
    if topic_names is not None:
        unresolved = topic_names.take_unresolved()
        if unresolved:
            from .inputs.topic_ids import UNRESOLVED_REASON

            err.write(f"replay: {UNRESOLVED_REASON}={sum(unresolved.values())}: topic ids left as ids "
                      f"(kafka.topic_ids={cfg.kafka.topic_ids}): {', '.join(sorted(unresolved))}\n")
    return 0


def _print_reject(rej: Rejected, err: IO[str]) -> None:
    raw = rej.raw
    if isinstance(raw, (bytes, bytearray)):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raw = "base64:" + base64.b64encode(raw).decode()
    elif not isinstance(raw, str):
        raw = repr(raw)
    detail = f" ({rej.detail})" if rej.detail else ""
    err.write(f"rejected: {rej.reason}{detail}: {raw[:200]}\n")


class JsonPrinter:
    """One JSON object a line, each stamped with the cluster's name."""

    def __init__(self, out: IO[str], cluster: str = "default"):
        self.out = out
        self._prefix = stamp_prefix(cluster)

    def write(self, records: list[dict]) -> None:
        for rec in records:
            self.out.write(stamped(json.dumps(rec, separators=(",", ":"), sort_keys=False), self._prefix) + "\n")

    def close(self) -> None:
        self.out.flush()


class TablePrinter:
    """A human-readable table: one line per generation, timeout and storm."""

    HEADER = f"{'group':<24} {'kind':<10} {'gen':>5} {'proto':<18} {'members':>7} {'duration':>9} " \
             f"{'moved':>5} {'mism':>4} {'unas':>4} {'imb':>3}  causes / detail"

    def __init__(self, out: IO[str]):
        self.out = out
        self.out.write(self.HEADER + "\n")

    @staticmethod
    def _n(v) -> str:
        return "-" if v is None else str(v)

    def write(self, records: list[dict]) -> None:
        for r in records:
            kind = r["kind"]
            g = r["group"][:24]
            if kind == RecordKind.GENERATION:
                dur = "-" if r["duration_ms"] is None else f"{r['duration_ms'] / 1000:.1f}s"
                causes = ", ".join(
                    c["cause"] + (f"({c.get('client_id') or c.get('member_id')})"
                                  if c.get("client_id") or c.get("member_id") else "")
                    for c in r["causes"])
                self.out.write(
                    f"{g:<24} {'gen':<10} {r['generation']:>5} {str(r['protocol'])[:18]:<18} "
                    f"{len(r['members']):>7} {dur:>9} {self._n(r['partitions_moved']):>5} "
                    f"{self._n(r['mismatched_partitions']):>4} {self._n(r['unassigned_partitions']):>4} "
                    f"{self._n(r['imbalance']):>3}  {causes}\n")
            elif kind == RecordKind.MEMBER_TIMEOUT:
                self.out.write(f"{g:<24} {'timeout':<10} {'':>5} {r['timeout']:<18} {'':>7} {'':>9} "
                               f"{'':>5} {'':>4} {'':>4} {'':>3}  {r['member_id']} "
                               f"deadline={r['deadline_ms']} detected={r['detected_ms']}\n")
            elif kind == RecordKind.STORM:
                state = "started" if r["ended_ms"] is None else f"ended at {r['ended_ms']}"
                self.out.write(f"{g:<24} {'storm':<10} {'':>5} {state:<18} {'':>7} {'':>9} {'':>5} {'':>4} "
                               f"{'':>4} {'':>3}  {r['rebalances']} rebalances in {r['window_ms'] // 1000}s, "
                               f"since {r['started_ms']}\n")

    def close(self) -> None:
        self.out.flush()


def open_input(path: str):
    if path == "-":
        return sys.stdin
    return open(path, "r", encoding="utf-8", errors="surrogateescape")
