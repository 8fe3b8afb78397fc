"""Read back what a job wrote (history sink, dead-letter files, its checkpoint) and put records in a form two runs
can be compared in: the tests of the connectors and of the standalone cluster use these."""
from __future__ import annotations

import json
from pathlib import Path

from ..core.vocabulary import RecordKind


def history_records(parquet_dir) -> list[dict]:
    """Every record of a history sink's Parquet directory, in batch order."""
    import pyarrow.parquet as pq

    root = Path(parquet_dir)
    if not root.exists():
        return []
    files = sorted(root.glob("batch_id=*/*.parquet"), key=lambda f: int(f.parent.name.split("=", 1)[1]))
    return [json.loads(p) for f in files for p in pq.read_table(f).column("payload").to_pylist()]


def dead_letter_reasons(directory) -> list[str]:
    return sorted(json.loads(ln)["reason"] for f in sorted(Path(directory).glob("*.jsonl"))
                  for ln in f.read_text().splitlines() if ln.strip())


def comparable(records: list[dict]) -> list[str]:
    """Records as sorted JSON texts, without what depends on batch boundaries: the group_status snapshots and
    when a timeout was noticed (detected_ms, and the record's ts, which is that time)."""
    out = []
    for r in records:
        if r["kind"] == RecordKind.GROUP_STATUS:
            continue
        r = dict(r)
        if r["kind"] == RecordKind.MEMBER_TIMEOUT:
            r.pop("detected_ms", None)
            r.pop("ts", None)
        out.append(json.dumps(r, sort_keys=True))
    return sorted(out)


def committed_offsets(checkpoint_query_dir) -> dict:
    """{topic: {partition: next offset}} of the last micro-batch the query committed (its checkpoint's offsets
    log entry of the newest commits/ entry), or {} before the first commit."""
    root = Path(checkpoint_query_dir)
    commits = [int(p.name) for p in (root / "commits").glob("[0-9]*")] if (root / "commits").exists() else []
    if not commits:
        return {}
    text = (root / "offsets" / str(max(commits))).read_text().splitlines()
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
