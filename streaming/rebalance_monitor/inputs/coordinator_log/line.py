"""The anatomy of a broker log line: its timestamp, level, the coordinator's identification (`[GroupCoordinator
id=1 topic=__consumer_offsets partition=7]`, ...), the logger, and a JSON wrapper of a log shipper around it."""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone


MAX_TS = 1 << 53

TS_RE = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})(?:[,.](?P<frac>\d{1,9}))?"
    r"(?:\s?(?P<zone>Z|[+-]\d{2}:?\d{2})(?![\d:]))?")
LEVEL_RE = re.compile(r"(?:^|[\s\]|])(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b")
IDENT_RE = re.compile(
    r"\[(?:GroupCoordinator(?: id=(?P<b1>\d+)| (?P<b2>\d+))?(?: topic=(?P<topic>\S+) partition=(?P<part>\d+))?"
    r"|GroupMetadataManager brokerId=(?P<b3>\d+)|Group Metadata Manager on Broker (?P<b4>\d+))\]:?\s*")
LOGGER_RE = re.compile(r"\s*\((?P<logger>(?:kafka|org\.apache\.kafka)(?:\.[\w$]+)+)(?::\d+)?\)(?:\s*\[[^\]]*\])?\s*$")
COORD_LOGGER_RE = re.compile(r"^(?:kafka\.coordinator\.(?:group\.|GroupCoordinator|GroupMetadataManager)"
                              r"|org\.apache\.kafka\.coordinator\.group\.)")


def _parse_iso_ms(text: str) -> int | None:
    m = TS_RE.search(text)
    if m is None:
        return None
    return match_ms(m)


def match_ms(m: re.Match) -> int | None:
    try:
        dt = datetime.strptime(f"{m['date']} {m['time']}", "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    frac = m["frac"] or "0"
    micros = int((frac + "000000")[:6])
    zone = m["zone"]
    if zone is None or zone == "Z":
        tz = timezone.utc
    else:
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        from datetime import timedelta
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))
    ms = int(dt.replace(microsecond=micros, tzinfo=tz).timestamp() * 1000)
    return ms if 0 <= ms < MAX_TS else None


def _wrapper_ts(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        ms = int(value * 1000) if abs(value) < 1e11 else int(value)
        return ms if 0 <= ms < MAX_TS else None
    if isinstance(value, str):
        s = value.strip()
        if re.fullmatch(r"\d+(\.\d+)?", s):
            return _wrapper_ts(float(s) if "." in s else int(s))
        return _parse_iso_ms(s)
    return None


def unwrap(value) -> tuple[str, int | None] | None:
    """(line, wrapper timestamp) — None when the value is a JSON object without a log line in it."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8", errors="replace")
    text = value.strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            return text, None
        if not isinstance(obj, dict):
            return text, None
        line = next((obj[k] for k in ("message", "log", "msg") if isinstance(obj.get(k), str)), None)
        if line is None:
            return None
        ts = None
        for k in ("@timestamp", "timestamp", "time", "ts"):
            if k in obj:
                ts = _wrapper_ts(obj[k])
                if ts is not None:
                    break
        return line.strip(), ts
    return text, None


def line_ts(wrapper_ts: int | None, head: str, record_ts_ms) -> int | None:
    """A log line's time: the shipper's wrapper's, else the line's own (`head`: where its timestamp is), else the
    Kafka record's; None when none is there."""
    if wrapper_ts is not None:
        return wrapper_ts
    tm = TS_RE.search(head)
    ts = match_ms(tm) if tm else None
    if ts is None and isinstance(record_ts_ms, int) and 0 <= record_ts_ms < MAX_TS:
        ts = record_ts_ms
    return ts
