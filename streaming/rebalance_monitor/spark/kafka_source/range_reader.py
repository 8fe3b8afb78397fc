"""The read loop of the Python Kafka source: one partition's offset range, with either client (range_clients.py).

Records come in offset order; offsets may have gaps (compaction, transaction markers), which the client's fetch
position skips. Records are gathered column by column (columns.py) and handed on every ``arrowBatchRows`` records,
as Arrow batches (the source's rows) or, for the decoder, as record tuples. A range with no progress for
``kafkaConsumer.pollTimeoutMs`` fails; records gone from the log fail it as data loss (with failOnDataLoss).
A range read to its end hands its client back to the process's pool (client_pool.py) for the partition's next
range; any other end closes it.
"""
from __future__ import annotations

import time
from bisect import bisect_left
from typing import Iterator

from . import client_pool
from .range_clients import open_range_client
from .columns import Columns, arrow_schema
from .offsets import DataLossError
from .options import SourceOptions

MAX_POLL_RECORDS = 10_000


def _chunk(cols: Columns, r, schema, as_records: bool):
    return cols.records(r.topic, r.partition) if as_records else cols.to_batch(r.topic, r.partition, schema)


def read_range(opts: SourceOptions, client: str, r, as_records: bool = False) -> Iterator:
    """The range's records in Arrow batches (the source's rows), or with `as_records` in chunks of
    `Columns.records` tuples. `r`: the range (topic, partition, start, end), `client`: "confluent" or
    "kafka-python"."""
    schema = arrow_schema(opts.include_headers)
    key = client_pool.pool_key(opts, client, r.topic, r.partition) if opts.reuse_clients else None
    c = (open_range_client(opts, client, r) if key is None
         else client_pool.POOL.take(key, r.start, lambda: open_range_client(opts, client, r)))
    kept = False
    try:
        nxt = r.start
        cols = Columns(opts.include_headers)
        last_progress = time.monotonic()
        while nxt < r.end:
            before = nxt
            polled = c.poll(min(MAX_POLL_RECORDS, max(1, r.end - nxt)))
            offsets = polled.offsets
            if offsets:
                # a partition's records come in offset order: keep those in [nxt, end)
                lo = bisect_left(offsets, nxt) if offsets[0] < nxt else 0
                hi = len(offsets)
                if offsets[-1] >= r.end:
                    hi = bisect_left(offsets, r.end)
                if lo < hi:
                    cols.extend(polled, lo, hi)
                    nxt = offsets[hi - 1] + 1
                if hi < len(offsets):
                    nxt = r.end
            if polled.gone is not None and nxt < r.end:
                raise DataLossError(
                    f"records {r.topic}-{r.partition} from offset {nxt} are no longer available ({polled.gone}); "
                    "set failOnDataLoss=false to skip them") from polled.gone.__cause__
            if len(cols) >= opts.arrow_batch_rows:
                yield _chunk(cols, r, schema, as_records)
                cols = Columns(opts.include_headers)
            if nxt > before:
                last_progress = time.monotonic()
            elif nxt < r.end:
                # Offsets may have gaps (compaction, transaction markers): trust the fetch position.
                pos = c.position()
                if pos is not None and pos >= r.end:
                    break
                if pos is not None and pos > nxt:
                    nxt = pos
                if (time.monotonic() - last_progress) * 1000 > opts.poll_timeout_ms:
                    raise TimeoutError(f"no records for {r} at offset {nxt} within "
                                       f"kafkaConsumer.pollTimeoutMs={opts.poll_timeout_ms}")
        # read to the end: the client is kept for the partition's next range before the last chunk is handed on
        # (whoever takes the chunk may stop reading there)
        kept = key is not None and client_pool.POOL.give_back(key, c)
        if len(cols):
            yield _chunk(cols, r, schema, as_records)
    finally:
        if not kept:
            c.close()
