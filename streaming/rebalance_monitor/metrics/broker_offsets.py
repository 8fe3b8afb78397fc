"""Committed and log-end offsets read from the brokers (kafka-python admin client).

The stream gives committed offsets for groups whose commits it sees (``offsets_committed`` records). For the
other tracked groups, and for the log-end offsets of every partition some group committed on, a
:class:`BrokerOffsetsPoller` asks the brokers on an interval (OffsetFetch and ListOffsets(latest)) and turns the
answers into the same record shapes, which it applies to a :class:`MetricsUpdater`:

* ``{"kind": "offsets_committed", "group": g, "ts": ms, "member_id": None, "source": "broker", "offsets": [...]}``
* ``{"kind": "end_offsets", "group": "", "ts": ms, "source": "broker", "offsets": [...]}``

The ``source: "broker"`` marker keeps a group on the broker path (a group only leaves it when the stream
delivers commits of its own).

Share groups (KIP-932; the tracked groups whose records say ``group_type: "share"``) commit no offsets: they are
asked with DescribeShareGroupOffsets (API 90, ``broker_facts/share_group_offsets.py``) at their coordinator, and
their record carries each share-partition's start offset in ``offsets`` and the share coordinator's lag (Kafka
4.2+; None where it gave none) in ``share_lag``:

* ``{"kind": "offsets_committed", "group": g, "ts": ms, "member_id": None, "source": "broker", "group_type":
  "share", "offsets": [[t, p, start offset], ...], "share_lag": [[t, p, lag or None], ...]}``
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

log = logging.getLogger(__name__)


class BrokerOffsets:
    """Reads committed and end offsets from a Kafka cluster."""

    def __init__(self, bootstrap_servers: str | list[str], *, request_timeout_ms: int = 10_000,
                 client_id: str = "rebalance-monitor-offsets", **client_config) -> None:
        from kafka import KafkaAdminClient

        self._admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id=client_id,
                                       request_timeout_ms=request_timeout_ms, **client_config)

    def close(self) -> None:
        self._admin.close()

    def committed(self, groups: Iterable[str]) -> dict[str, dict[tuple[str, int], int]]:
        """``{group: {(topic, partition): committed offset}}``; partitions without a commit (-1) are left out."""
        out: dict[str, dict[tuple[str, int], int]] = {}
        for g in groups:
            try:
                res = self._admin.list_group_offsets({g: None})
            except Exception as exc:  # a group may vanish or move between listing and fetching
                log.warning("offset fetch for group %r failed: %s", g, exc)
                continue
            offs = res.get(g) or {}
            out[g] = {(tp.topic, tp.partition): om.offset for tp, om in offs.items()
                      if om is not None and om.offset is not None and om.offset >= 0}
        return out

    def share(self, groups: Iterable[str]) -> dict[str, dict[tuple[str, int], tuple[int, int | None]]]:
        """``{group: {(topic, partition): (share-partition start offset, broker's lag or None)}}`` of the share
        groups; partitions not initialised (start offset -1) are left out, and so is a group whose answer is an
        error (logged)."""
        from ..broker_facts.share_group_offsets import share_offsets

        groups = list(groups)
        if not groups:
            return {}
        try:
            answers = share_offsets(self._admin, groups)
        except Exception as exc:  # a broker not reached, an answer that does not decode: the other lag still flows
            log.warning("share group offsets of %d groups failed: %s", len(groups), exc)
            return {}
        out = {}
        for g, answer in answers.items():
            if answer.error is not None:
                log.warning("share group offsets of %r: %s %s", g, answer.error, answer.error_message or "")
                continue
            out[g] = {k: (v.start_offset, v.lag) for k, v in answer.partitions.items() if v.start_offset >= 0}
        return out

    def end_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Log-end offsets (ListOffsets latest) of the partitions."""
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        specs = {TopicPartition(t, p): OffsetSpec.LATEST for t, p in set(partitions)}
        if not specs:
            return {}
        res = self._admin.list_partition_offsets(specs)
        out = {}
        for tp, info in res.items():
            off = getattr(info, "offset", info)
            if isinstance(off, int) and off >= 0:
                out[(tp.topic, tp.partition)] = off
        return out

    def records(self, groups: Iterable[str], extra_partitions: Iterable[tuple[str, int]] = (),
                now_ms: int | None = None, share_groups: Iterable[str] = ()) -> list[dict]:
        """Output-shaped records for the groups' committed offsets, the share groups' start offsets and lag, and
        the end offsets of their partitions (plus ``extra_partitions``)."""
        ts = int(time.time() * 1000) if now_ms is None else now_ms
        committed = self.committed(groups)
        recs = [{"kind": "offsets_committed", "group": g, "ts": ts, "member_id": None, "source": "broker",
                 "offsets": [[t, p, o] for (t, p), o in sorted(offs.items())]}
                for g, offs in committed.items() if offs]
        shared = self.share(share_groups)
        recs += [{"kind": "offsets_committed", "group": g, "ts": ts, "member_id": None, "source": "broker",
                  "group_type": "share", "offsets": [[t, p, so] for (t, p), (so, _lag) in sorted(offs.items())],
                  "share_lag": [[t, p, lag] for (t, p), (_so, lag) in sorted(offs.items())]}
                 for g, offs in shared.items() if offs]
        parts = ({k for offs in committed.values() for k in offs} | {k for offs in shared.values() for k in offs}
                 | set(extra_partitions))
        ends = self.end_offsets(parts)
        if ends:
            recs.append({"kind": "end_offsets", "group": "", "ts": ts, "source": "broker",
                         "offsets": [[t, p, o] for (t, p), o in sorted(ends.items())]})
        return recs


class BrokerOffsetsPoller:
    """Every ``interval_s``: committed offsets of the updater's groups that send none on the stream, and
    end offsets of every partition any tracked group committed on; applied to ``updater``."""

    def __init__(self, updater, offsets: BrokerOffsets, interval_s: float = 30.0,
                 extra_groups: Iterable[str] = ()) -> None:
        self.updater = updater
        self.offsets = offsets
        self.interval_s = interval_s
        self.extra_groups = list(extra_groups)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.polls = 0
        self.errors = 0

    def poll_once(self) -> list[dict]:
        share = getattr(self.updater, "share_groups", lambda: [])()
        groups = sorted((set(self.updater.groups_without_commits()) | set(self.extra_groups)) - set(share))
        if share:
            recs = self.offsets.records(groups, self.updater.committed_partitions(), share_groups=share)
        else:
            recs = self.offsets.records(groups, self.updater.committed_partitions())
        self.updater.apply(recs)
        self.polls += 1
        return recs

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as exc:
                self.errors += 1
                log.warning("broker offsets poll failed: %s", exc)
            self._stop.wait(self.interval_s)

    def start(self) -> "BrokerOffsetsPoller":
        self._thread = threading.Thread(target=self._run, name="broker-offsets", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
