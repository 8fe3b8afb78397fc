"""The Python Kafka source as Spark sees it: format "rmkafka", a `DataSource` with a streaming reader.

The reader plans each micro-batch on the driver (the offsets to read up to, with Spark's admission control: a
``maxOffsetsPerTrigger`` limit is honoured by ``Trigger.AvailableNow`` too) and reads each planned range in a task
(range_reader.py), or decodes it there with the option "decode" (decoding/record_decoder.py): the JVM then carries a
row per group, not a row per record.
"""
from __future__ import annotations

import logging
from typing import Any, Iterator, Mapping

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from ...decoding.decoded_rows import DECODED_SCHEMA
from ...decoding.record_decoder import make_record_decoder
from .columns import output_schema
from .metadata import Metadata, open_meta
from .offsets import EARLIEST, LATEST, TP, DataLossError, from_json_offsets, plan_ranges, rate_limit, to_json_offsets
from .options import FORMAT, SourceOptions, resolve_client, truthy
from .range_reader import read_range

log = logging.getLogger("rebalance_monitor.spark.kafka_source")

# with option `decode`, a read task packs each group's events over this many records into one row
PACK_RECORDS = 250_000


class KafkaRange(InputPartition):
    """Records [start, end) of one Kafka partition: one Spark task."""

    def __init__(self, topic: str, partition: int, start: int, end: int):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end

    def __repr__(self) -> str:
        return f"KafkaRange({self.topic}-{self.partition} [{self.start}, {self.end}))"


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches from the partitions' offsets and reads them; offsets are `offsets.to_json_offsets`'s."""

    def __init__(self, options: Mapping[str, Any]):
        self.opts = SourceOptions.parse(options)
        self.client, self.client_reason = resolve_client(self.opts.client)
        self._meta: Metadata | None = None
        self._new_starts: dict[TP, int] = {}
        self._target: dict[TP, int] | None = None
        self._last_latest: dict[TP, int] | None = None
        self._announced = False

    # The reader is pickled with the read function: never ship live clients.
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_meta"] = None
        return state

    @property
    def meta(self) -> Metadata:
        """The metadata client, opened on first use (on the driver), announcing the client and options once."""
        if self._meta is None:
            if not self._announced:
                log.debug("rmkafka: reading %s with the %s client (%s); options %s", self.opts.subscription(),
                         self.client, self.client_reason, self.opts.connection.redacted())
                self._announced = True
            self._meta = open_meta(self.opts, self.client)
        return self._meta

    def _current(self) -> tuple[list[TP], dict[TP, int]]:
        tps = self.meta.partitions()
        latest = self.meta.latest(tps)
        self._last_latest = latest
        return tps, latest

    def initialOffset(self) -> dict:
        tps, latest = self._current()
        starting = self.opts.starting
        if starting == "latest":
            return to_json_offsets(latest)
        earliest = self.meta.earliest(tps)
        if starting == "earliest":
            return to_json_offsets(earliest)
        given = from_json_offsets(starting)
        out = {}
        for tp in tps:
            off = given.get(tp, EARLIEST)
            out[tp] = earliest[tp] if off == EARLIEST else latest[tp] if off == LATEST else off
        missing = [tp for tp in given if tp not in out]
        if missing:
            log.warning("startingOffsets names partitions that are not (yet) there: %s", missing)
        return to_json_offsets(out)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        _, latest = self._current()
        self._target = dict(latest)
        log.debug("rmkafka: Trigger.AvailableNow target %s", to_json_offsets(self._target))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        starts = from_json_offsets(start)
        tps, latest = self._current()
        if self._target is not None:
            latest = {tp: min(off, self._target[tp]) for tp, off in latest.items() if tp in self._target}
        new = [tp for tp in latest if tp not in starts]
        if new:
            earliest = self.meta.earliest(new)
            for tp in new:
                self._new_starts[tp] = earliest[tp]
            log.info("rmkafka: new partitions %s start at their earliest offsets", sorted(new))
        eff_starts = {tp: starts.get(tp, self._new_starts.get(tp, 0)) for tp in latest}
        shrunk = {tp: (eff_starts[tp], off) for tp, off in latest.items() if off < eff_starts[tp]}
        if shrunk:
            detail = ", ".join(f"{t}-{p} from {a} to {b}" for (t, p), (a, b) in sorted(shrunk.items()))
            if self.opts.fail_on_data_loss:
                raise DataLossError(f"latest offsets went backwards ({detail}): topic recreated or log truncated; "
                                    "set failOnDataLoss=false to wait until they pass the old position")
            log.warning("rmkafka: latest offsets went backwards (%s); holding the old position", detail)
        # Never go backwards.
        ends = {tp: max(off, eff_starts[tp]) for tp, off in latest.items()}
        if isinstance(limit, ReadMaxRows):
            ends = rate_limit(eff_starts, ends, limit.max_rows)
        for tp, off in starts.items():  # partitions that disappeared keep their position
            ends.setdefault(tp, off)
        result = to_json_offsets(ends)
        return start if result == start else result

    def reportLatestOffset(self):
        return None if self._last_latest is None else to_json_offsets(self._last_latest)

    def partitions(self, start: dict, end: dict):
        starts = from_json_offsets(start)
        ends = from_json_offsets(end)
        missing = [tp for tp in ends if tp not in starts and tp not in self._new_starts]
        if missing:  # a batch replayed after a restart that had discovered new partitions
            self._new_starts.update(self.meta.earliest(missing))
        eff = {tp: starts.get(tp, self._new_starts.get(tp, 0)) for tp in ends}
        return [KafkaRange(r.topic, r.partition, r.start, r.end)
                for r in plan_ranges(eff, ends, self.opts.min_partitions)]

    def read(self, partition: KafkaRange) -> Iterator:
        d = self.opts.decode
        if d is None:
            return read_range(self.opts, self.client, partition)
        # decode where the records are read: the JVM then carries a row per group, not a row per record
        spec = d.get("topic_ids")  # kafka.topic_ids: `cluster` is the cluster read, a file came as its content
        topic_ids = None if not spec else (spec, self.opts.connection if spec == "cluster" else d.get("topic_id_names"))
        decode = make_record_decoder(d["topics"], int(d.get("max_bytes", 1 << 20)),
                                     int(d.get("max_future_ms", 3_600_000)), int(d.get("pack_records", PACK_RECORDS)),
                                     d.get("groups"), int(d.get("shards", 50)), topic_ids)
        return decode(read_range(self.opts, self.client, partition, as_records=True))

    def commit(self, end: dict) -> None:
        # Spark's checkpoint owns the offsets; forget start offsets of partitions now in the offsets.
        done = from_json_offsets(end)
        for tp in list(self._new_starts):
            if tp in done:
                del self._new_starts[tp]

    def stop(self) -> None:
        if self._meta is not None:
            try:
                self._meta.close()
            finally:
                self._meta = None


class KafkaDataSource(DataSource):
    """Format "rmkafka": Kafka records as rows, like Spark's "kafka" format (streaming reads only)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self):
        opts = {str(k).lower(): v for k, v in self.options.items()}
        if opts.get("decode"):
            return DECODED_SCHEMA
        return output_schema(truthy(opts.get("includeheaders", "false")))

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(self.options)
