"""The job hands on, of one group's run, each partition's last commit (spark/output_commits.py): the metrics end
in exactly the state that every `offsets_committed` record would have left them in."""
from __future__ import annotations

import random
import time

from rebalance_monitor.metrics.store import MetricsStore
from rebalance_monitor.spark.output_commits import last_commits

T0 = int(time.time() * 1000)  # (the metrics store expires groups idle by its clock)


def _commit(ts, *offsets, member="m1", group="g"):
    return {"kind": "offsets_committed", "group": group, "ts": ts, "member_id": member,
            "offsets": [list(o) for o in offsets]}


def _end_offsets(ts):
    return {"kind": "end_offsets", "group": "", "ts": ts,
            "offsets": [["orders", p, 10_000] for p in range(4)] + [["audit", 0, 500]]}


def _state(records):
    store = MetricsStore()
    store.apply([_end_offsets(T0)] + records, now_ms=T0 + 120_000)
    s = store.series("g")
    if s is None:
        return None
    return s.committed, s.committed_ts, s.stream_commits, sorted(store.committed_partitions())


def test_a_steady_member_gives_its_last_commit_only():
    records = [_commit(T0 + 1000 * i, ("orders", 0, 100 + i), ("orders", 1, 200 + i)) for i in range(10)]
    status = {"kind": "group_status", "group": "g", "ts": T0 + 9000}
    out = last_commits(records + [status])
    assert out == [records[-1], status]
    assert _state(out) == _state(records + [status])


def test_a_partial_commit_keeps_what_nothing_later_commits():
    a = _commit(T0, ("orders", 0, 5), ("orders", 1, 7))
    b = _commit(T0 + 10, ("orders", 0, 6), member="m2")
    out = last_commits([a, b])
    assert out == [_commit(T0, ("orders", 1, 7)), b]
    assert a["offsets"] == [["orders", 0, 5], ["orders", 1, 7]]  # the input is not changed


def test_an_invalid_offset_supersedes_nothing():
    """An offset of -1 is skipped by the metrics: the commit before it still counts."""
    a = _commit(T0, ("orders", 0, 5))
    b = _commit(T0 + 10, ("orders", 0, -1))
    assert last_commits([a, b]) == [a, b]


def test_an_older_commit_after_a_newer_one_is_kept():
    """Out of time order (not what the runner gives, but exact anyway): the metrics keep the newer one."""
    a = _commit(T0 + 50, ("orders", 0, 9))
    b = _commit(T0, ("orders", 0, 5))
    assert last_commits([a, b]) == [a, b]
    assert _state(last_commits([a, b])) == _state([a, b])


def test_duplicate_partitions_in_one_commit_keep_the_last():
    a = _commit(T0, ("orders", 0, 5), ("orders", 0, 6))
    b = _commit(T0, ("orders", 1, 1))
    assert last_commits([a, b]) == [_commit(T0, ("orders", 0, 6)), b]
    assert _state(last_commits([a, b])) == _state([a, b])


def test_random_runs_leave_the_metrics_as_every_record_would():
    rng = random.Random(1979)
    dropped = 0
    total = 0
    for _ in range(500):
        records, ts = [], T0
        for _ in range(rng.randint(0, 25)):
            ts += rng.choice((0, 0, 1, 250, 1000)) if rng.random() > 0.05 else -rng.randint(1, 2000)
            if rng.random() < 0.15:
                records.append({"kind": rng.choice(("generation", "group_status", "member_timeout")), "group": "g",
                                "ts": ts})
                continue
            offsets = []
            for _ in range(rng.randint(0, 4)):
                r = rng.random()
                if r < 0.05:
                    offsets.append(["orders", rng.randint(0, 3)])  # malformed: skipped by the metrics
                elif r < 0.1:
                    offsets.append(["orders", rng.randint(0, 3), -1])
                else:
                    offsets.append([rng.choice(("orders", "audit")), rng.randint(0, 3), rng.randint(0, 9_000)])
            records.append(_commit(ts, *offsets, member=rng.choice(("m1", "m2", "m3"))))
        out = last_commits(records)
        assert _state(out) == _state(records)
        # what stays: the other records untouched and in order, and each commit's entries a subsequence
        assert [r for r in out if r["kind"] != "offsets_committed"] == \
            [r for r in records if r["kind"] != "offsets_committed"]
        it = iter([r for r in records if r["kind"] == "offsets_committed"])
        for r in (r for r in out if r["kind"] == "offsets_committed"):
            src = next((x for x in it if x["ts"] == r["ts"] and x["member_id"] == r["member_id"] and
                       all(e in x["offsets"] for e in r["offsets"])), None)
            assert src is not None
        total += sum(r["kind"] == "offsets_committed" for r in records)
        dropped += sum(r["kind"] == "offsets_committed" for r in records) - \
            sum(r["kind"] == "offsets_committed" for r in out)
    assert total > 2000 and dropped > total // 4  # the inputs did give it commits to drop
