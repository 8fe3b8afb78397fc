"""Read back what a job wrote (history sink, dead-letter files, its checkpoint) and put records in a form two runs
can be compared in: the tests of the connectors and of the standalone cluster use these. Paths are local, or
`s3a://` URIs with `hadoop_conf`, the job's S3A settings (read with pyarrow's S3 client)."""
from __future__ import annotations

import json
from pathlib import Path

from rebalance_monitor.core.vocabulary import DETECTED_KINDS, RecordKind


def _files(path, hadoop_conf: dict | None):
    """(pyarrow file system, path inside it, what it holds there: {base name: is a directory})."""
    import pyarrow.fs as pafs

    from rebalance_monitor.history.reader import filesystem_for

    fs, root = filesystem_for(str(path), hadoop_conf or {})
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        return fs, root, {}
    return fs, root, {i.base_name: i.type == pafs.FileType.Directory
                      for i in fs.get_file_info(pafs.FileSelector(root))}


def history_records(parquet_dir, hadoop_conf: dict | None = None) -> list[dict]:
    """Every record of a history sink's Parquet directory, in batch order."""
    import pyarrow.parquet as pq

    fs, root, names = _files(parquet_dir, hadoop_conf)
    batches = sorted((int(n.split("=", 1)[1]), n) for n, is_dir in names.items() if is_dir and n.startswith("batch_id="))
    out = []
    for _, name in batches:
        _, directory, files = _files(f"{parquet_dir}/{name}", hadoop_conf)
        for f in sorted(n for n, is_dir in files.items() if not is_dir and n.endswith(".parquet")):
            out += [json.loads(p) for p in pq.read_table(f"{directory}/{f}", filesystem=fs).column("payload").to_pylist()]
    return out


def dead_letter_reasons(directory) -> list[str]:
    return sorted(json.loads(ln)["reason"] for f in sorted(Path(directory).glob("*.jsonl"))
                  for ln in f.read_text().splitlines() if ln.strip())


def comparable(records: list[dict]) -> list[str]:
    """Records as sorted JSON texts, without what depends on batch boundaries: the group_status snapshots and
    when a timeout or a warning was noticed (detected_ms, and the record's ts, which is that time: DETECTED_KINDS);
    and without the cluster's name the sinks stamp on the way out (kafka_cluster, cluster_stamp.py), which the
    core's own records (replay_records) do not carry."""
    out = []
    for r in records:
        if r["kind"] == RecordKind.GROUP_STATUS:
            continue
        r = dict(r)
        r.pop("kafka_cluster", None)
        if r["kind"] in DETECTED_KINDS:
            r.pop("detected_ms", None)
            r.pop("ts", None)
        out.append(json.dumps(r, sort_keys=True))
    return sorted(out)


def committed_batches(checkpoint_query_dir, hadoop_conf: dict | None = None) -> list[int]:
    """The ids of the micro-batches the query committed (its checkpoint's commits/ log), in order."""
    _, _, names = _files(f"{checkpoint_query_dir}/commits", hadoop_conf)
    return sorted(int(n) for n, is_dir in names.items() if not is_dir and n.isdigit())


def committed_offsets(checkpoint_query_dir, hadoop_conf: dict | None = None) -> dict:
    """{topic: {partition: next offset}} of the last micro-batch the query committed (its checkpoint's offsets
    log entry of the newest commits/ entry), or {} before the first commit."""
    commits = committed_batches(checkpoint_query_dir, hadoop_conf)
    if not commits:
        return {}
    fs, offsets, _ = _files(f"{checkpoint_query_dir}/offsets", hadoop_conf)
    with fs.open_input_stream(f"{offsets}/{max(commits)}") as f:
        text = f.read().decode().splitlines()
    out: dict = {}
    for line in text[2:]:  # version line, batch metadata, then one line per source
        try:
            source = json.loads(line)
        except ValueError:
            continue
        if isinstance(source, dict):
            for topic, parts in source.items():
                if isinstance(parts, dict):
                    out.setdefault(topic, {}).update({int(p): int(o) for p, o in parts.items()})
    return out
