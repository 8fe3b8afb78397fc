"""Read the history sink back: the records the job kept (generations, timeouts, storms, ...) from its Parquet
directory (pyarrow datasets: only the asked group's rows and time range are decoded, the filters pushed down to
the row groups) or from its Kafka topic (keyed by group), for one group and a time range, or the whole fleet.

One directory holds one cluster's history: the default cluster's is `sinks.history.parquet_path` itself, without
its `clusters/` folder, where each other cluster's is (`clusters/<name>`, history/cluster_sources.py; the layout of
config_clusters.py). A directory's files are listed here and handed to pyarrow as a list: pyarrow's own discovery
of a directory walks every folder under it, the nested clusters' too, and would read their files twice. (The job
writes these files itself, `batch_id=<N>/part-0.parquet`, not through Spark's file sink: there is no
`_spark_metadata` log of the files to follow; names starting with `.` or `_`, a replacing write's temporary file
among them, are skipped as pyarrow skips them.)

The Parquet directory may be local (a path or `file://`) or on S3 (`s3a://bucket/prefix`, read with pyarrow's
S3FileSystem, set from the same `fs.s3a.*` settings the job's Spark gets, in `spark.conf` as
`spark.hadoop.fs.s3a.*`: endpoint, path-style access, TLS, region, keys; else the AWS SDK's defaults, e.g. the
AWS_* variables). Another scheme (`hdfs://`, ...) is not read here: use the Kafka history topic."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Iterator
from urllib.parse import urlparse

from ..config_clusters import CLUSTERS_DIR  # the other clusters' folders under the default's path
from ..kafka_connection import KafkaConnection


@dataclass(frozen=True)
class Query:
    group: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None


def _keep(q: Query, group: str, ts: int) -> bool:
    return ((q.group is None or group == q.group) and (q.since_ms is None or ts >= q.since_ms)
            and (q.until_ms is None or ts <= q.until_ms))


def read_parquet(path: str, q: Query, hadoop_conf: dict | None = None) -> Iterator[dict]:
    """The history records under `path` (the job's `sinks.history.parquet_path`) that `q` asks for, in time order.
    `hadoop_conf`: the Hadoop settings of the job (`fs.s3a.*`) for an `s3a://` path."""
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    filesystem, where = filesystem_for(path, hadoop_conf or {})
    if filesystem.get_file_info(where).type != pafs.FileType.Directory:
        raise FileNotFoundError(f"no history at {path!r} (sinks.history.parquet_path)")
    files = [i.path for i in filesystem.get_file_info(pafs.FileSelector(where, recursive=True))
             if i.type == pafs.FileType.File and _own_file(i.path[len(where):])]
    if not files:
        return  # the job has created the directory but written no batch yet: no history so far
    data = ds.dataset(files, filesystem=filesystem, format="parquet", partitioning="hive",
                      partition_base_dir=where, exclude_invalid_files=True)
    if not {"ts", "payload"} <= set(data.schema.names):
        return  # the job has created the directory but written no batch yet: no history so far
    cond = None
    for part in ((ds.field("group") == q.group) if q.group is not None else None,
                 (ds.field("ts") >= q.since_ms) if q.since_ms is not None else None,
                 (ds.field("ts") <= q.until_ms) if q.until_ms is not None else None):
        if part is not None:
            cond = part if cond is None else cond & part
    table = data.to_table(columns=["ts", "payload"], filter=cond).sort_by([("ts", "ascending")])
    for payload in table.column("payload").to_pylist():
        yield json.loads(payload)


def _own_file(relative: str) -> bool:
    """A file of the directory's own cluster (`relative`: its path under the directory): not under `clusters/`,
    no name on its way starting with `.` or `_`."""
    parts = [p for p in relative.split("/") if p]
    return bool(parts) and parts[0] != CLUSTERS_DIR and not any(p.startswith((".", "_")) for p in parts)


def nested_clusters(path: str, hadoop_conf: dict | None = None) -> list[str]:
    """The names of the clusters whose history is nested in the default's directory `path` (its
    `clusters/<name>` folders), sorted; raises FileNotFoundError when `path` is no directory."""
    import pyarrow.fs as pafs

    filesystem, where = filesystem_for(path, hadoop_conf or {})
    if filesystem.get_file_info(where).type != pafs.FileType.Directory:
        raise FileNotFoundError(f"no history at {path!r} (sinks.history.parquet_path)")
    nested = f"{where}/{CLUSTERS_DIR}"
    if filesystem.get_file_info(nested).type != pafs.FileType.Directory:
        return []
    return sorted(i.base_name for i in filesystem.get_file_info(pafs.FileSelector(nested))
                  if i.type == pafs.FileType.Directory and not i.base_name.startswith((".", "_")))


def filesystem_for(path: str, conf: dict):
    """(pyarrow file system, path inside it) for a history path or URI."""
    import pyarrow.fs as pafs

    url = urlparse(path)
    scheme = url.scheme if len(url.scheme) > 1 else ""  # (a Windows drive letter is no scheme)
    if scheme in ("", "file"):
        return pafs.LocalFileSystem(), os.path.abspath(url.path if scheme else path)
    if scheme in ("s3a", "s3", "s3n"):
        return pafs.S3FileSystem(**s3_options(conf, url.netloc)), f"{url.netloc}{url.path}".rstrip("/")
    raise FileNotFoundError(f"cannot read a {scheme}:// history here (local paths and s3a:// only): "
                            "read the history topic (--source kafka) or copy the directory")


def s3_options(conf: dict, bucket: str) -> dict:
    """pyarrow S3FileSystem arguments from S3A's settings (`fs.s3a.bucket.<bucket>.<key>` before `fs.s3a.<key>`)."""

    def get(key: str):
        value = conf.get(f"fs.s3a.bucket.{bucket}.{key}", conf.get(f"fs.s3a.{key}"))
        return None if value is None else str(value)

    opts: dict = {}
    ssl = (get("connection.ssl.enabled") or "true").lower() != "false"
    endpoint = get("endpoint")
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"{'https' if ssl else 'http'}://{endpoint}")
        opts["endpoint_override"] = parsed.netloc
        opts["scheme"] = parsed.scheme
    elif not ssl:
        opts["scheme"] = "http"
    region = get("endpoint.region") or get("region")
    if region:
        opts["region"] = region
    if get("access.key") and get("secret.key"):
        opts["access_key"] = get("access.key")
        opts["secret_key"] = get("secret.key")
        if get("session.token"):
            opts["session_token"] = get("session.token")
    # S3A addresses buckets by virtual host unless path.style.access; pyarrow by path unless told otherwise
    opts["force_virtual_addressing"] = (get("path.style.access") or "false").lower() != "true"
    return opts


def hadoop_settings(spark_conf: dict) -> dict:
    """The Hadoop settings among a job's `spark.conf` (`spark.hadoop.X` -> `X`)."""
    return {k.removeprefix("spark.hadoop."): v for k, v in (spark_conf or {}).items() if k.startswith("spark.hadoop.")}


def read_kafka(connection: KafkaConnection, topic: str, q: Query, timeout_s: float = 60.0) -> Iterator[dict]:
    """The history records of the job's `sinks.history.kafka_topic` (read from its start to the end it has now,
    without joining a group) that `q` asks for, in time order. With confluent-kafka when installed, else with
    kafka-python (the base install)."""
    try:
        from confluent_kafka import Consumer, TopicPartition
    except ImportError:
        return _read_kafka_python(connection, topic, q, timeout_s)

    c = Consumer({**connection.confluent(), "group.id": "rebalance-monitor-history", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    out = []
    try:
        meta = c.list_topics(topic, timeout=10)
        if topic not in meta.topics or meta.topics[topic].error is not None:
            raise FileNotFoundError(f"no history topic {topic!r} (sinks.history.kafka_topic)")
        parts = sorted(meta.topics[topic].partitions)
        ends = {}
        for p in parts:
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high > low:
                ends[p] = high
        c.assign([TopicPartition(topic, p, 0) for p in ends])  # 0: from the earliest still there
        done: set = set()
        deadline = time.monotonic() + timeout_s
        while len(done) < len(ends) and time.monotonic() < deadline:
            for m in c.consume(1000, timeout=0.5):
                if m.error() is not None:
                    if m.error().code() == -191:  # _PARTITION_EOF
                        done.add(m.partition())
                    continue
                if m.offset() + 1 >= ends.get(m.partition(), 0):
                    done.add(m.partition())
                group = (m.key() or b"").decode()
                if q.group is not None and group != q.group:
                    continue
                rec = json.loads(m.value())
                if _keep(q, rec.get("group", group), int(rec.get("ts") or 0)):
                    out.append(rec)
    finally:
        c.close()
    out.sort(key=lambda r: r.get("ts") or 0)
    return iter(out)


def _read_kafka_python(connection: KafkaConnection, topic: str, q: Query, timeout_s: float) -> Iterator[dict]:
    """`read_kafka` with kafka-python's consumer (no group, no commit)."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(**connection.kafka_python(), group_id=None, enable_auto_commit=False,
                      allow_auto_create_topics=False)
    out = []
    try:
        parts = c.partitions_for_topic(topic)
        if not parts:
            raise FileNotFoundError(f"no history topic {topic!r} (sinks.history.kafka_topic)")
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        lows, highs = c.beginning_offsets(tps), c.end_offsets(tps)
        ends = {tp: highs[tp] for tp in tps if highs[tp] > lows[tp]}
        c.assign(list(ends))
        c.seek_to_beginning(*ends)
        deadline = time.monotonic() + timeout_s
        while ends and time.monotonic() < deadline:
            for tp, msgs in c.poll(timeout_ms=500, max_records=1000).items():
                for m in msgs:
                    group = (m.key or b"").decode()
                    if q.group is not None and group != q.group:
                        continue
                    rec = json.loads(m.value)
                    if _keep(q, rec.get("group", group), int(rec.get("ts") or 0)):
                        out.append(rec)
            ends = {tp: end for tp, end in ends.items() if c.position(tp) < end}
    finally:
        c.close()
    out.sort(key=lambda r: r.get("ts") or 0)
    return iter(out)
