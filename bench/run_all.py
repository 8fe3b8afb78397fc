"""`make bench`: every benchmark of the project, one after the other, printing their figures."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = [
    ("core reconstruction", ["bench_core.py"]),
    ("assignors vs kafka-python", ["bench_assignors.py"]),
    ("assignor soak: CPU per case of each stage", ["bench_assignor_soak.py"]),
    ("exporter scrape", ["bench_exporter.py"]),
    ("exported-metrics snapshot", ["bench_metrics_state.py"]),
    ("Kafka source vs plain consumers", ["bench_source.py", "--records", "200000"]),
    ("whole job vs plain consumer", ["bench_job.py"]),
    ("a fleet at live cadence: 1,000 groups x 10 members for 150 s", ["bench_fleet.py", "--groups", "1000"]),
    ("several clusters: one deployment watching N against N deployments, 100 groups x 5 members each",
     ["bench_clusters.py", "--counts", "1,3"]),
    ("a fleet at live cadence without Spark: the stateful step's and the driver's time per group and batch",
     ["bench_live_groups.py"]),
    ("where the job's time goes: read, decode, shuffle, job; both readers, both inputs", ["bench_pieces.py"]),
    ("standalone cluster vs local mode vs plain consumer, both Kafka readers", ["bench_cluster.py"]),
    ("__consumer_offsets under a commit load, job vs plain consumer", ["bench_offsets_topic.py"]),
    ("__consumer_offsets decode, commits compacted or not", ["bench_decode_offsets.py"]),
    ("events carried as text: parsed and checked (decode stage) or rebuilt once checked (processor)",
     ["bench_checked_events.py"]),
    ("history: a year of a fleet's history, one group and the top 20", ["bench_history.py"]),
    ("KIP-714 broker plugin: a broker's cost under 2,000 clients' pushes, with and without it",
     ["bench_telemetry_plugin.py"]),
]


def main() -> int:
    only = set(sys.argv[1:])
    failed = 0
    for title, cmd in BENCHES:
        if only and cmd[0].removesuffix(".py").removeprefix("bench_") not in only:
            continue
        if not (HERE / cmd[0]).exists():
            continue
        print(f"\n=== {title} ({cmd[0]}) ===", flush=True)
        rc = subprocess.call([sys.executable, str(HERE / cmd[0]), *cmd[1:]])
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
