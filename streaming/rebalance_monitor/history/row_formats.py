"""Print `history` rows as an aligned table (times as local clock times), JSON lines or CSV (times as ISO 8601)."""
from __future__ import annotations

import csv
import json
import re
import time as _time
from datetime import datetime, timezone
from typing import IO, Sequence

TIME_FIELDS = ("time", "first", "last")
_RELATIVE = re.compile(r"^(\d+)\s*(s|m|h|d|w)$")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}


def parse_when(text: str | None, now_ms: int | None = None) -> int | None:
    """`12h`, `7d`, `30m` (that long ago), an ISO 8601 time (UTC when it has no zone), or epoch milliseconds."""
    if text is None:
        return None
    text = text.strip()
    now = int(_time.time() * 1000) if now_ms is None else now_ms
    m = _RELATIVE.match(text)
    if m:
        return now - int(m.group(1)) * _UNIT_MS[m.group(2)]
    if text.isdigit():
        return int(text)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use 12h, 7d, 30m, an ISO 8601 time, or epoch ms)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def _iso(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")


def _local(ms: int | None) -> str:
    return "" if ms is None else datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def render(rows: list[dict], columns: Sequence[str], fmt: str, out: IO[str], title: str = "") -> None:
    if fmt == "json":
        for r in rows:
            out.write(json.dumps({k: (_iso(r[k]) if k in TIME_FIELDS else r[k]) for k in columns}) + "\n")
        return
    if fmt == "csv":
        w = csv.writer(out)
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if r[k] is None else (_iso(r[k]) if k in TIME_FIELDS else r[k]) for k in columns])
        return
    if title:
        out.write(title + "\n")
    cells = [[_local(r[k]) if k in TIME_FIELDS else ("" if r[k] is None else str(r[k])) for k in columns]
             for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(widths[i]) for i, c in enumerate(columns)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(v.ljust(widths[i]) for i, v in enumerate(row)).rstrip() + "\n")
    if not rows:
        out.write("(nothing in this range)\n")
