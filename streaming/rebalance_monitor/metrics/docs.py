"""Generate docs/metrics.md from the catalogue and a run of the real updater on sample records.

    python -m rebalance_monitor.metrics.docs > docs/metrics.md
    python -m rebalance_monitor.metrics.docs --check docs/metrics.md   # exit 1 when the file is stale
"""
from __future__ import annotations

import sys

from .catalogue import CATALOGUE, LAG_GRANULARITIES, MetricSpec
from .updater import MetricsUpdater

T0 = 1_700_000_000_000      # fixed sample time (ms) so the page is reproducible
SAMPLE_LINES = 8


def sample_records() -> list[dict]:
    """A small, realistic history of two groups, as the core would emit it."""
    g = "orders-service"
    return [
        {"kind": "end_offsets", "group": "", "ts": T0 - 60_000, "offsets": [["orders", 0, 1000], ["orders", 1, 900]]},
        {"kind": "coordinator", "group": g, "ts": T0 - 59_000, "partition": 17, "broker": 2, "action": "elected"},
        {"kind": "offsets_committed", "group": g, "ts": T0 - 55_000, "member_id": "c-1",
         "offsets": [["orders", 0, 990], ["orders", 1, 900]]},
        {"kind": "rebalance_started", "group": g, "generation": 11, "started_ms": T0 - 40_000,
         "causes": [{"cause": "member_left", "member_id": "c-3", "client_id": "orders-3", "host": "/10.0.0.13",
                     "reason": "the consumer is being closed"}]},
        {"kind": "generation", "group": g, "generation": 12, "protocol": "cooperative-sticky", "leader": "c-1",
         "started_ms": T0 - 40_000, "completed_ms": T0 - 37_600, "ts": T0 - 37_600, "duration_ms": 2_400,
         "causes": [{"cause": "member_left", "member_id": "c-3"}], "members": ["c-1", "c-2"],
         "assignment": {"c-1": [["orders", 0]], "c-2": [["orders", 1]]},
         "expected_assignment": {"c-1": [["orders", 0]], "c-2": [["orders", 1]]}, "mismatched_partitions": 0,
         "unassigned_partitions": 0, "partitions_moved": 1, "imbalance": 0, "min_moves": 1},
        {"kind": "member_timeout", "group": g, "member_id": "c-2", "timeout": "poll", "last_seen_ms": T0 - 330_000,
         "deadline_ms": T0 - 30_000, "detected_ms": T0 - 29_000, "client_id": "orders-2", "host": "/10.0.0.12"},
        {"kind": "broker_view", "group": g, "ts": T0 - 25_000, "broker_epoch": 12, "monitor_epoch": 12,
         "agrees": False, "differences": ["member c-4: the broker has it, the monitor does not"]},
        {"kind": "storm", "group": g, "started_ms": T0 - 20_000, "ended_ms": None, "rebalances": 4,
         "window_ms": 600_000, "pattern": "rolling_restart", "pattern_detail": "2 members restarted in turn"},
        {"kind": "end_offsets", "group": "", "ts": T0 - 30_000, "offsets": [["orders", 0, 1300], ["orders", 1, 960]]},
        {"kind": "end_offsets", "group": "", "ts": T0, "offsets": [["orders", 0, 1600], ["orders", 1, 960]]},
        {"kind": "offsets_committed", "group": g, "ts": T0, "member_id": "c-1",
         "offsets": [["orders", 0, 1150], ["orders", 1, 960]]},
        {"kind": "group_status", "group": g, "ts": T0, "state": "Stable", "generation": 12,
         "protocol": "cooperative-sticky", "leader": "c-1", "members": 2, "max_heartbeat_gap_ratio": 0.31,
         "heartbeat_gap_ratios": {"c-1": 0.31, "c-2": 0.05}, "in_storm": True, "rebalancing_since_ms": None,
         "coordinator_partition": 17, "max_poll_gap_ratio": 0.12, "poll_gap_ratios": {"c-1": 0.12, "c-2": 0.02},
         "client_standard_metrics": [
             {"client_id": "py-worker", "client_instance_id": "Zm9vYmFyYmF6cXV4MTIzNA", "source": "kip714",
              "ts": T0, "poll_idle_ratio": 0.82, "rebalance_latency_avg_ms": 140, "rebalance_latency_max_ms": 310,
              "rebalances_total": None, "rebalance_latency_total_ms": 450},
             {"client_id": "java-1", "client_instance_id": "cXV4YmF6YmFyZm9vMTIzNA", "source": "kip714",
              "ts": T0, "poll_idle_ratio": 0.4, "rebalance_latency_avg_ms": 35, "rebalance_latency_max_ms": 60,
              "rebalances_total": 3, "rebalance_latency_total_ms": 105}]},
        # a streams group (KIP-1071): its members' tasks, the tasks moved, the sticky task assignor's check
        {"kind": "generation", "group": "word-count", "generation": 3, "protocol": "sticky", "group_type": "streams",
         "started_ms": T0 - 27_500, "completed_ms": T0 - 26_000, "ts": T0 - 26_000, "duration_ms": 1_500,
         "causes": [{"cause": "member_joined", "member_id": "s2"}], "members": ["s1", "s2"],
         "expected_assignment": None, "mismatched_partitions": None, "partitions_moved": None,
         "mismatched_tasks": 0, "tasks_moved": 1, "tasks_moved_between_processes": 1,
         "tasks_moved_within_process": 0, "tasks": {
             "s1": {"process_id": "p1", "client_id": "wc-1-StreamThread-1-consumer", "epoch": 3,
                    "active": [["0", 0], ["1", 0]], "standby": [["0", 1]], "warmup": []},
             "s2": {"process_id": "p2", "client_id": "wc-2-StreamThread-1-consumer", "epoch": 3,
                    "active": [["0", 1], ["1", 1]], "standby": [["0", 0]], "warmup": []}}},
        {"kind": "member_at_risk", "group": "word-count", "ts": T0 - 2_000, "member_id": "s2", "risk": "session",
         "last_seen_ms": T0 - 25_000, "warn_ms": T0 - 2_500, "deadline_ms": T0 + 20_000, "limit_ms": 45_000,
         "detected_ms": T0 - 2_000, "client_id": "wc-2-StreamThread-1-consumer", "host": "/10.0.0.22"},
    ]


class _FixedClock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def sample_exposition(lag_granularity: str = "partition") -> str:
    clock = _FixedClock(T0 / 1000)
    u = MetricsUpdater(clock=clock, max_groups=2, group_deny=r"tmp-.*", lag_granularity=lag_granularity)
    u.apply(sample_records(), now_ms=T0)
    u.apply([{"kind": "generation", "group": "tmp-console-consumer-1", "generation": 1, "completed_ms": T0},
             {"kind": "generation", "group": "billing", "generation": 1, "completed_ms": T0}], now_ms=T0)
    u.set_ready(True)
    u.record_batch(41, {"events": 5200, "offsets-topic": 310}, {"invalid_json": 2}, 0.42, 1830, T0 - 12_000,
                   {"generation": 1, "group_status": 1, "offsets_committed": 2}, notes={"unresolved_topic_id": 3})
    u.note_sink_error("kafka")
    u.note_broker_facts_error("describe_configs_denied")
    return u.render()


def _family_lines(text: str, spec: MetricSpec) -> list[str]:
    names = {spec.name}
    if spec.type == "histogram":
        names |= {spec.name + s for s in ("_bucket", "_count", "_sum")}
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        n = line.split("{", 1)[0].split(" ", 1)[0]
        if n in names:
            out.append(line)
    return out


SECTIONS = [
    ("Rebalances and generations", lambda m: m.name.startswith("kafka_consumergroup_") and not any(
        k in m.name for k in ("lag", "offset", "timeout", "heartbeat", "at_risk", "storm"))),
    ("Members and storms", lambda m: any(k in m.name for k in ("timeout", "heartbeat", "at_risk", "storm"))),
    ("Streams groups: tasks", lambda m: m.name.startswith("kafka_streamsgroup_")),
    ("Lag and offsets", lambda m: m.name.startswith("kafka_") and any(k in m.name for k in ("lag", "offset"))),
    ("The monitor itself", lambda m: m.name.startswith("rebalance_monitor_")),
]

INTRO = """# Metrics reference

<!-- Generated by `python -m rebalance_monitor.metrics.docs` from
     streaming/rebalance_monitor/metrics/catalogue.py; do not edit by hand. -->

The rebalance monitor serves these metrics on `/metrics` (Prometheus text format 0.0.4) of its exporter,
default `http://127.0.0.1:9308`. Every series with a `group` label belongs to one consumer group, and
carries the group's type next to it: `group_type` is `classic`, `consumer` (KIP-848), `streams` (KIP-1071),
`share` (KIP-932), or `unknown` until a record of the group says it (a group known by its commits alone). When a
group's type changes (a classic group upgraded to KIP-848), all its series continue under the new label, counters
whole: aggregate with `sum by (group)` or `sum without (group_type)` across such a change. The
definitions live in one module, `rebalance_monitor.metrics.catalogue`; the exporter, this page and the
Grafana dashboards are generated from it.

The samples below come from running the real exporter state (`MetricsUpdater`) on a short sample history
of a group `orders-service` (a member left, a rebalance of 2.4 s, a poll timeout, a storm, lag on two
partitions) and a streams group `word-count` (its members' tasks, a task moved, a member at risk), with `max_groups=2` and `group_deny="tmp-.*"` so the drop counters show.

## Endpoints

| Path | Answer |
| --- | --- |
| `/metrics` | the exposition; gzip when the scraper accepts it; behind basic auth when configured |
| `/healthz` | 200 while the process lives |
| `/ready` | 200 when the streaming job reported ready and its last micro-batch ended less than `ready_max_age_s` (300 s) ago, else 503 |

Exporter settings (`ExporterSettings`, made from the configuration by `ExporterSettings.from_config`):
`host` (default `127.0.0.1`, loopback only), `port` (9308), `tls_cert_file`/`tls_key_file` (PEM; HTTPS when
set), `basic_auth_user`/`basic_auth_password` (the password may come from `exporter.basic_auth_password_file`
or the environment variable `RM_EXPORTER_BASIC_AUTH_PASSWORD`; it is never logged),
`max_groups` (5000), `group_allow`/`group_deny` (regular expressions, full match on the group name),
`idle_group_ttl_s` (86400), `ready_max_age_s` (300), `gzip` (true), `lag_granularity` (`partition`; the
configuration's `lag.granularity`, see "Lag granularity" below).
"""

SEMANTICS = """## Semantics

### Counting rebalances

* One `generation` record is one completed rebalance: `kafka_consumergroup_generations_total` +1, and
  `kafka_consumergroup_rebalances_total` +1 for each distinct cause the record lists (a generation
  triggered by a member leaving and another joining counts once under `member_left` and once under
  `member_joined`; the same cause listed twice counts once). No cause known: `cause="unknown"`. So
  `sum by (group) (rebalances_total) >= generations_total`; use `generations_total` to count rebalances
  and `rebalances_total` to break them down.
* The duration histogram observes `duration_ms` (first trigger seen to completion); generations whose start
  is unknown are counted but not observed.
* `partitions_moved_total` adds each generation's `partitions_moved`. `needless_moves` is
  `partitions_moved - min_moves` of the latest generation (absent when either is unknown).
* Latest-generation gauges (`generation`, `members`, assignment gauges, `protocol_info`) keep the
  highest generation: a late record of an older generation is counted but does not move them back.

### Counters across restarts

Counters never go backwards, also across restarts of the job: with `exporter.persist_state` (the default)
the job writes the exporter's state to `<state.checkpoint_location>/metrics-state.json` after every
micro-batch, tagged with the micro-batch id, and loads it when it starts. A restarted job therefore exports
the same counters as a run that never stopped: each micro-batch is counted exactly once (a batch Spark runs
again after a crash is skipped when the snapshot already holds it), and a counter is exported only once it
is in the snapshot, so a crash never takes back a value Prometheus scraped (which it would count again as a
reset). Kept: every counter and histogram of the groups, the events read, rejects, input notes, output records, batches,
batch durations and dropped groups, and the gauges records set on a group (generation, state, members,
protocol, assignment gauges, storm, coordinator, ...), so quiet groups are exported again at once. Per
process, from scratch at each start: `up`, `ready`, the last batch time, state rows, watermark delay,
`sink_errors_total` (a counter reset on restart) and the offsets (committed and end offsets, lag), which the
next commit record or broker poll brings back. `persist_state: false` restores the old behaviour: counters
start at 0 in each process, a counter reset for Prometheus. Details and crash windows: docs/reliability.md.

Within one process, a replayed record does not count twice either: generations are deduplicated on
`(group, generation, completed_ms)`, rebalance starts on `(group, generation, started_ms)`, member timeouts
on `(group, member_id, timeout, detected_ms)`, storms on `(group, started_ms)` and micro-batches on their
batch id (the most recent 256 keys per group and 1024 batch ids are remembered). Of these keys only the
storms' are kept across restarts, because a storm's end record repeats its start's key; the job emits the
other records once, and a micro-batch it runs again is skipped whole.

### Group lifecycle and cardinality

* A `group_deleted` record removes every series of the group at once; a group with no record for
  `idle_group_ttl_s` (default one day) is removed the same way. If it comes back, its counters restart
  at 0 (a new series for Prometheus).
* Groups that do not fully match `group_allow`, or fully match `group_deny`, are not exported and count
  once each in `rebalance_monitor_groups_dropped_total{reason="denied"}`. When `max_groups` groups are
  tracked, further groups are not exported and count once each under `reason="max_groups"`; they are
  admitted as soon as room frees up (a group deleted or expired). The names remembered for counting once
  are bounded (at least 10,000, or 4 x `max_groups`).
* The exporter renders each group's lines once and reuses them until the group (or an end offset of a
  partition it committed on) changes; by default the re-rendering happens at the end of each micro-batch's
  `apply`, so a scrape only sends cached text (cached gzip too). See `bench/bench_exporter.py` for the cost
  at 1,000 groups x 50 partitions.
* `lag.granularity` bounds the per-partition series: see below.

### Lag granularity

Three families have a series per partition: `kafka_consumergroup_lag` and
`kafka_consumergroup_committed_offset` (per group, topic and partition) and `kafka_topic_partition_end_offset`
(per partition some tracked group committed on). In a fleet they are most of the exposition. The setting
`lag.granularity` (like KMinion's `granularity`) sums them:

| `lag.granularity` | `kafka_consumergroup_lag`, `_committed_offset` | `kafka_topic_partition_end_offset` |
| --- | --- | --- |
| `partition` (default) | one series per group, topic and partition | one per partition |
| `topic` | summed over each topic's partitions: labels `group`, `topic` | summed per topic: label `topic` |
| `group` | summed over all the group's partitions: label `group` | not exported |

The lag sum skips partitions without a known end offset, as the per-partition lines do. Summed committed
(and end) offsets are for rates: `rate()` of them is the group's consumption (and the topic's produce) rate;
they jump when a partition is added. `kafka_consumergroup_lag_sum` and `kafka_consumergroup_lag_seconds`
are per group at every level, and so are the shipped rules. The dashboards' queries sum by labels every
level has; the group dashboard's "Lag by topic and partition" table needs `partition` for a row per
partition (at `topic` a row per topic; at `group` one row and no log-end offset) and its "Lag (offsets)"
panel shows the total alone at `group`; `tests/dashboards/test_dashboards_lag_levels.py` runs every lag query
of the dashboards and the rules on a real Prometheus at each level.

What a fleet of 1,000 groups (10 members each, 50 partitions over 5 topics per group) costs, measured with
`python bench/bench_exporter.py` (the three levels side by side in one run; two runs on the 2-core machine
while other work loaded it to 12-17, so the times vary with that load; the sizes do not):

| `lag.granularity` | series per scrape | of them per-partition families | exposition | gzip (what Prometheus fetches) | HTTP scrape, gzip | render, nothing changed |
| --- | --- | --- | --- | --- | --- | --- |
| `partition` | 191,020 | 150,000 | 17.8 MB | 0.66 MB | 3-22 ms | 41-46 ms |
| `topic` | 56,020 | 15,000 | 4.9 MB | 0.22 MB | 1.5-2 ms | 8.5-14 ms |
| `group` | 43,020 | 2,000 | 3.8 MB | 0.17 MB | 1.3-4 ms | 0.4-0.7 ms |

The other 41,020 series are the groups' own (about 41 per group: the rebalance-duration histogram's 15, the
state's 5, counters and gauges) and the monitor's. Prometheus stores every series it scrapes: at a 30 s
scrape interval `partition` adds 6,400 samples/s and 191,000 active series, `topic` 1,900 and 56,000,
`group` 1,400 and 43,000.

### Group state

`kafka_consumergroup_state` has one series per state (Empty, PreparingRebalance, CompletingRebalance,
Stable, Dead); the current one is 1. It follows the `group_status` records. Until the first
`group_status` of a group arrives it is inferred: `rebalance_started` -> PreparingRebalance, `generation`
-> Stable (Empty when the generation has no member). `rebalance_in_progress` is 1 in PreparingRebalance
and CompletingRebalance.

### Offset lag

`kafka_consumergroup_lag = max(0, end - committed)` per partition the group committed on, where `end`
is the log-end offset (high watermark) and `committed` the group's committed offset (the next offset it
will read). The clamp at 0 covers a commit read after the end offset. Lag does not depend on the group
state: it is reported for Empty groups (nobody consuming: the lag grows) and for rebalancing groups.
Partitions without a known end offset have a `committed_offset` series but no `lag`. `lag_sum` adds the
group's partitions.

Where the offsets come from: committed offsets from `offsets_committed` records (the `__consumer_offsets`
adapter and instrumented clients emit them); for tracked groups that have none on the stream, the broker
poller (`rebalance_monitor.metrics.broker_offsets.BrokerOffsetsPoller`) asks the brokers on an interval
(OffsetFetch). Log-end offsets come from `end_offsets` records or from the same poller (ListOffsets latest)
for every partition a tracked group committed on.

A share group (KIP-932, `group_type="share"`) commits no offsets; the same poller asks its coordinator for its
share-partitions (DescribeShareGroupOffsets, docs/inputs.md "Share-group lag"). Its `committed_offset` is the
share-partition start offset (every record below it acknowledged or archived), and its `lag` is the share
coordinator's own lag (Kafka 4.2+, the `LAG` column of `kafka-share-groups --describe --offsets`): the records at
or above the start offset not yet acknowledged, available or in flight alike; where the broker gives none (Kafka
4.1), `end - start offset`, an upper bound. Its time lag is the age of the record at the start offset. A
share-partition the group has not fetched from yet has no series.

### Time lag

`kafka_consumergroup_lag_seconds` estimates the age of the oldest unconsumed record, max over the group's
partitions. Each partition keeps a bounded table (60 points) of `(time, end offset)` samples, one per
`end_offsets` record or broker poll; runs of equal end offsets are compressed to their first and last
sample, and a log end that goes backwards (topic re-created) resets the table. For a committed offset `c`:

| Case | Value |
| --- | --- |
| idle partition, `c >= end` | 0 s |
| `c` inside the table | `now - t`, `t` interpolated linearly between the two samples around the time the end passed `c` |
| `c` before the oldest sample, the table shows the end moving | extrapolated backwards with the table's mean produce rate (oldest to newest sample) |
| `c` before the oldest sample, the end did not move during the table | `now - oldest sample time`: a lower bound |
| fresh partition (one sample) and `c < end` | no value |

When a lagging partition has no value, the group has no `lag_seconds` either (the maximum is unknown);
it appears with the second end-offset sample. `now` is the time of the latest update (the records'
batch), so the value is as fresh as the end offsets.

### Lag growth around rebalances

When a rebalance starts (a `rebalance_started` record, or a `group_status` entering a rebalancing state),
the exporter snapshots the group's `lag_sum` into `kafka_consumergroup_lag_sum_at_rebalance_start` and the
start time into `kafka_consumergroup_last_rebalance_start_timestamp_seconds`. The recording rules in
`conf/rules/lag-recording.yml` derive:

* `kafka_consumergroup:lag_growth_since_rebalance_start:offsets` = `lag_sum - lag_sum_at_rebalance_start`;
* `kafka_consumergroup:lag_growth_rebalance_window:offsets`: the same, only while the group rebalances and
  during the 15 minutes after the rebalance started;
* `kafka_consumergroup:lag_sum:deriv1m` (offsets/s) and `kafka_consumergroup:lag_seconds:max`.

### Self metrics

`record_batch(batch_id, events_read, rejects, duration_s, state_rows, watermark_ms, output_counts, notes)` is
called by the streaming job once per micro-batch; `watermark_delay_seconds` is wall time minus the
watermark. `rebalance_monitor_ready` mirrors `/ready`. `rebalance_monitor_up` is 1 while the exporter runs.
"""


def _labels(labels) -> str:
    return ", ".join(f"`{x}`" for x in labels)


def granularity_labels(m: MetricSpec) -> str:
    """What `lag.granularity` does to the family's labels (empty for the families it does not touch)."""
    if not m.rollup:
        return ""
    coarser = [f"{_labels(m.labels_at(g))} at `{g}`" if m.exported_at(g) else f"not exported at `{g}`"
               for g in LAG_GRANULARITIES[1:]]
    return f"with `lag.granularity` `{LAG_GRANULARITIES[0]}` (the default); " + "; ".join(coarser)


def render_markdown() -> str:
    text = sample_exposition()
    coarse = {g: sample_exposition(g) for g in LAG_GRANULARITIES[1:]}
    out = [INTRO, "## Metrics\n"]
    out.append("| Metric | Type | Labels | Unit |\n| --- | --- | --- | --- |")
    for m in CATALOGUE:
        labels = _labels(m.labels) or "-"
        if m.rollup:
            labels += " (fewer: `lag.granularity`)"
        out.append(f"| [`{m.name}`](#{m.name}) | {m.type} | {labels} | {m.unit or '-'} |")
    out.append("")
    done = set()
    for title, pred in SECTIONS:
        out.append(f"## {title}\n")
        for m in CATALOGUE:
            if m.name in done or not pred(m):
                continue
            done.add(m.name)
            out.append(_metric_section(m, text, coarse))
    rest = [m for m in CATALOGUE if m.name not in done]
    if rest:
        out.append("## Other\n")
        out.extend(_metric_section(m, text, coarse) for m in rest)
    out.append(SEMANTICS)
    return "\n".join(out).rstrip() + "\n"


def _metric_section(m: MetricSpec, text: str, coarse: dict[str, str]) -> str:
    lines = [f"### {m.name}\n", m.help, ""]
    lines.append(f"* type: {m.type}" + (" (exposed as a gauge, value 1)" if m.type == "info" else ""))
    lines.append(f"* labels: {_labels(m.labels) or 'none'}"
                 + (f" {granularity_labels(m)}" if m.rollup else ""))
    if m.unit:
        lines.append(f"* unit: {m.unit}")
    if m.buckets:
        lines.append(f"* buckets (seconds): {', '.join(f'{b:g}' for b in m.buckets)}, +Inf")
    sample = _family_lines(text, m)
    lines.append("")
    if sample:
        shown = sample[:SAMPLE_LINES]
        if len(sample) > SAMPLE_LINES:
            shown.append(f"# ... {len(sample) - SAMPLE_LINES} more lines")
        lines.append("```\n" + "\n".join(shown) + "\n```")
    else:
        lines.append("_(no series in the sample: present only when the monitor has a value)_")
    for g, other in coarse.items():
        sample = _family_lines(other, m) if m.rollup else []
        if sample:
            lines.append(f"\nWith `lag.granularity: {g}`:\n\n```\n" + "\n".join(sample[:SAMPLE_LINES]) + "\n```")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    md = render_markdown()
    if argv[:1] == ["--check"]:
        path = argv[1] if len(argv) > 1 else "docs/metrics.md"
        with open(path, encoding="utf-8") as f:
            if f.read() != md:
                print(f"{path} is stale: regenerate with python -m rebalance_monitor.metrics.docs > {path}",
                      file=sys.stderr)
                return 1
        return 0
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
