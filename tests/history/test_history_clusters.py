"""Several Kafka clusters' history: every record the sinks write carries its cluster's name (`kafka_cluster`), and
`rebalance-monitor history --cluster NAME` reads one cluster's, or without it every cluster's it finds, each row
naming its cluster. The Parquet files are the real sink's (spark/sinks.py `Sinks`, local files), laid out as the
job's clusters write them: the default cluster's in `sinks.history.parquet_path`, another's in
`<parquet_path>/clusters/<name>`; the legacy files are what the sink wrote before the field existed."""
from __future__ import annotations

import io
import json
import subprocess
import sys

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from rebalance_monitor.cluster_stamp import stamp_prefix, stamped
from rebalance_monitor.history.cluster_sources import UnknownCluster, kafka_sources, of_cluster
from rebalance_monitor.spark.sinks import Sinks

T0 = 1_700_000_000_000


def generation(group: str, gen: int, ts: int, client: str) -> dict:
    return {"kind": "generation", "group": group, "ts": ts, "generation": gen, "duration_ms": 1000,
            "members": ["m1"], "partitions_moved": 1, "mismatched_partitions": 0,
            "causes": [{"cause": "member_joined", "member_id": "m1", "client_id": client}]}


def rows(records: list[dict]) -> list[tuple]:
    """The rows the job hands its history sink (spark/batch.py): kind, group, ts, payload."""
    return [(r["kind"], r["group"], r["ts"], json.dumps(r, separators=(",", ":"))) for r in records]


def write(path, cluster: str, batches: list[list[dict]], first_batch: int = 0) -> None:
    sinks = Sinks(str(path), None, None, None, None, cluster=cluster)
    for batch_id, records in enumerate(batches, first_batch):
        sinks.write_history(batch_id, rows(records))


def write_legacy(path, batch_id: int, records: list[dict]) -> None:
    """A batch as the sink wrote it before kafka_cluster: four columns, the core's record as it is."""
    (path / f"batch_id={batch_id}").mkdir(parents=True)
    pd.DataFrame(rows(records), columns=["kind", "group", "ts", "payload"]).to_parquet(
        path / f"batch_id={batch_id}" / "part-0.parquet", index=False)


@pytest.fixture
def two_clusters(tmp_path):
    """orders on the default cluster (3 generations, the first in a legacy file) and on prod-us (2), payments on
    prod-us only (1)."""
    base = tmp_path / "history"
    write_legacy(base, 0, [generation("orders", 1, T0, "legacy-client")])
    write(base, "default", [[generation("orders", 2, T0 + 1000, "eu-1")], [generation("orders", 3, T0 + 2000, "eu-2")]],
          first_batch=1)  # (the job upgraded: its batches go on)
    write(base / "clusters" / "prod-us", "prod-us",
          [[generation("orders", 7, T0 + 500, "us-1"), generation("payments", 1, T0 + 600, "us-p")],
           [generation("orders", 8, T0 + 1500, "us-2")]])
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(yaml.safe_dump({"sinks": {"history": {"parquet_path": str(base)}}}))
    return cfg


def history(cfg, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rebalance_monitor", "history", "--config", str(cfg), *args],
                          capture_output=True, text=True, timeout=120)


def json_rows(proc) -> list[dict]:
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_the_sinks_stamp_every_record_with_the_clusters_name(tmp_path):
    sinks = Sinks(str(tmp_path / "h"), None, str(tmp_path / "dlq"), None, None, cluster="prod-us")
    sinks.write_history(4, rows([generation("orders", 1, T0, "c")]))
    sinks.write_dead_letters(4, [json.dumps({"kind": "dead_letter", "reason": "not_json", "raw": "{"})])
    table = pq.read_table(tmp_path / "h" / "batch_id=4" / "part-0.parquet")
    assert table.column_names == ["kind", "group", "ts", "payload", "kafka_cluster"]
    assert table.column("kafka_cluster").to_pylist() == ["prod-us"]
    payload = json.loads(table.column("payload")[0].as_py())
    assert list(payload)[0] == "kafka_cluster" and payload == {"kafka_cluster": "prod-us",
                                                                **generation("orders", 1, T0, "c")}
    dead = [json.loads(line) for line in (tmp_path / "dlq" / "dead-letters-000000000004.jsonl").read_text().splitlines()]
    assert dead == [{"kafka_cluster": "prod-us", "kind": "dead_letter", "reason": "not_json", "raw": "{"}]


def test_the_stamp_keeps_any_object_valid_json():
    prefix = stamp_prefix('we"ird')
    assert json.loads(stamped("{}", prefix)) == {"kafka_cluster": 'we"ird'}
    assert json.loads(stamped('{ "a": 1}', prefix)) == {"kafka_cluster": 'we"ird', "a": 1}


def test_the_same_group_on_two_clusters_is_kept_apart(two_clusters):
    us = json_rows(history(two_clusters, "--group", "orders", "--cluster", "prod-us", "--format", "json"))
    assert [(r["cluster"], r["generation"]) for r in us] == [("prod-us", 7), ("prod-us", 8)]
    default = json_rows(history(two_clusters, "--group", "orders", "--cluster", "default", "--format", "json"))
    # the default's directory holds prod-us's folder: its files are not the default's
    assert [(r["cluster"], r["generation"]) for r in default] == [("default", 1), ("default", 2), ("default", 3)]
    both = json_rows(history(two_clusters, "--group", "orders", "--format", "json"))
    assert [(r["cluster"], r["generation"]) for r in both] == [
        ("default", 1), ("prod-us", 7), ("default", 2), ("prod-us", 8), ("default", 3)]  # in time order
    table = history(two_clusters, "--group", "orders", "--cluster", "prod-us")
    assert table.returncode == 0 and table.stdout.startswith("group orders on cluster prod-us: 2 events")
    assert table.stdout.splitlines()[1].split()[:3] == ["time", "cluster", "event"]


def test_the_fleet_view_ranks_a_clusters_groups(two_clusters):
    fleet = json_rows(history(two_clusters, "--format", "json"))
    assert [(r["cluster"], r["group"], r["rebalances"]) for r in fleet] == [
        ("default", "orders", 3), ("prod-us", "orders", 2), ("prod-us", "payments", 1)]
    assert [r["top_member"] for r in fleet] == ["legacy-client", "us-1", "us-p"]
    us = json_rows(history(two_clusters, "--format", "json", "--cluster", "prod-us"))
    assert [(r["cluster"], r["group"], r["rebalances"]) for r in us] == [("prod-us", "orders", 2),
                                                                         ("prod-us", "payments", 1)]
    csv = history(two_clusters, "--format", "csv", "--top", "1")
    assert csv.returncode == 0 and csv.stdout.splitlines()[0].startswith("cluster,group,rebalances,")
    assert csv.stdout.splitlines()[1].startswith("default,orders,3,")


def test_legacy_records_are_the_configured_default_clusters(two_clusters, tmp_path):
    """A history written before kafka_cluster, read with a configuration naming its cluster: its records are that
    cluster's, the name the configuration gives the top level's paths."""
    settings = yaml.safe_load(two_clusters.read_text())
    settings["kafka"] = {"cluster_name": "prod-eu"}
    named = tmp_path / "named.yaml"
    named.write_text(yaml.safe_dump(settings))
    got = json_rows(history(named, "--group", "orders", "--cluster", "prod-eu", "--format", "json"))
    # the legacy record is prod-eu's; those the sink stamped "default" keep the name they were written with
    assert [(r["cluster"], r["generation"]) for r in got] == [("prod-eu", 1)]
    fleet = json_rows(history(named, "--format", "json"))
    assert {(r["cluster"], r["group"]): r["rebalances"] for r in fleet} == {
        ("prod-eu", "orders"): 1, ("default", "orders"): 2, ("prod-us", "orders"): 2, ("prod-us", "payments"): 1}


def test_an_unknown_cluster_is_said_plainly(two_clusters, tmp_path):
    for name in ("nope", "Prod-us"):  # matched exactly, case included
        proc = history(two_clusters, "--group", "orders", "--cluster", name)
        assert proc.returncode == 2 and proc.stdout == ""
        assert f"--cluster: no cluster {name!r} in the configuration or the history" in proc.stderr
        assert "(clusters: default, prod-us;" in proc.stderr
    # a missing history is still the missing history's error, whatever the cluster
    cfg = tmp_path / "none.yaml"
    cfg.write_text(yaml.safe_dump({"sinks": {"history": {"parquet_path": str(tmp_path / "none")}}}))
    proc = history(cfg, "--cluster", "prod-us")
    assert proc.returncode == 1 and "no history at" in proc.stderr


def test_a_kafka_history_is_kept_apart_by_the_records_cluster():
    from rebalance_monitor.config import load_config

    cfg = load_config(env={}, overrides={"sinks.history.kafka_topic": "h", "kafka.cluster_name": "eu"})
    assert [(name, topic) for name, _, topic in kafka_sources(cfg, None)] == [("eu", "h")]
    with pytest.raises(UnknownCluster, match="no cluster 'us'"):
        kafka_sources(cfg, "us")
    recs = [{"group": "g", "ts": 1}, {"group": "g", "ts": 2, "kafka_cluster": "us"},
            {"group": "g", "ts": 3, "kafka_cluster": "eu"}]
    assert [r["ts"] for r in of_cluster([dict(r) for r in recs], "eu", "eu")] == [1, 3]
    assert [r["kafka_cluster"] for r in of_cluster([dict(r) for r in recs], "eu", None)] == ["eu", "us", "eu"]


def test_replay_stamps_its_records_like_the_sinks(tmp_path):
    from helpers.events import stable_group

    from rebalance_monitor.config import load_config
    from rebalance_monitor.replay import run_replay

    text = "".join(json.dumps(e) + "\n" for e in stable_group(("a", "b")))
    for cluster, want in ((None, "default"), ("prod-us", "prod-us")):
        out = io.StringIO()
        assert run_replay(load_config(env={}), "events", io.StringIO(text), out, io.StringIO(), cluster=cluster) == 0
        recs = [json.loads(line) for line in out.getvalue().splitlines()]
        assert recs and all(list(r)[0] == "kafka_cluster" and r["kafka_cluster"] == want for r in recs)
