"""The decode stage over `__consumer_offsets` offset commits, in one process, with and without the commit
compaction (decoding/input_commits.py), side by side in one run: CPU per record of the decoder alone (no Kafka,
no Spark). The whole path through Spark: bench_pieces.py --inputs offsets.

    .venv/bin/python bench/bench_decode_offsets.py [--groups 50] [--partitions 8] [--commits 250] [--chunk 10000]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import helpers.offsets_encoder as enc  # noqa: E402

from rebalance_monitor.decoding import record_decoder  # noqa: E402

T0 = 1_700_000_000_000


def commit_records(groups: int, partitions: int, commits: int) -> list[tuple]:
    recs, n = [], 0
    for i in range(commits):
        for g in range(groups):
            for p in range(partitions):
                recs.append(("__consumer_offsets", g % 50, n, T0 + n, enc.offset_commit_key(f"g{g}", "orders", p),
                             enc.offset_commit_value(3, i, "", commit_ts=T0 + n)))
                n += 1
    return recs


def decode_cpu_s(recs: list[tuple], chunk: int, compact: bool) -> float:
    held = record_decoder.is_live_commit
    if not compact:
        record_decoder.is_live_commit = lambda key, value: False  # every commit decoded, as before compaction
    try:
        decode = record_decoder.make_record_decoder({"__consumer_offsets": "offsets-topic"}, 1 << 20, 10 ** 12,
                                                    shards=50)
        t = time.process_time()
        for _ in decode(recs[i:i + chunk] for i in range(0, len(recs), chunk)):
            pass
        return time.process_time() - t
    finally:
        record_decoder.is_live_commit = held


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--commits", type=int, default=250, help="commits of each group")
    ap.add_argument("--chunk", type=int, default=10_000, help="records per chunk (Spark's Arrow batch: 10,000)")
    args = ap.parse_args()
    recs = commit_records(args.groups, args.partitions, args.commits)
    for _ in range(2):
        every, compacted = decode_cpu_s(recs, args.chunk, False), decode_cpu_s(recs, args.chunk, True)
        print(f"{len(recs):,} commit records of {args.groups} groups x {args.partitions} partitions, "
              f"{args.chunk:,}-record chunks: every commit decoded {len(recs) / every:,.0f}/s "
              f"({every / len(recs) * 1e6:.1f} us CPU/record); compacted {len(recs) / compacted:,.0f}/s "
              f"({compacted / len(recs) * 1e6:.2f} us CPU/record): {every / compacted:.1f}x", flush=True)


if __name__ == "__main__":
    main()
