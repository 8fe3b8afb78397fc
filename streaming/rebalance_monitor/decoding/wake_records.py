"""The wake-up records the job writes to its input at start (`StreamingQueryJob.wake_input`, spark/job.py): Spark
runs a batch after a restart on a quiet input only once a record comes (from then on it runs one at every
trigger). The decoder reads them by their key and drops them; the marker one carries (the job's start) reaches
every shard (spark/start_marks.py)."""
from __future__ import annotations

import orjson

# the key of a wake-up record (the JVM packing stage passes such records on unpacked: EventPacking.WAKE_KEY)
WAKE_KEY = b"rebalance-monitor/wake"


def wake_marker(value, topic: str, partition: int) -> str | None:
    """The marker a wake-up record carries ({"start", "n"}: the job's start and how many it wrote, see
    `job.wake_input`) with the record's topic and partition, as JSON text; None for a bare wake-up."""
    try:
        note = orjson.loads(value) if value else None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(note, dict) or type(note.get("start")) is not int or type(note.get("n")) is not int:
        return None
    return orjson.dumps({"start": note["start"], "n": note["n"], "tp": f"{topic}:{partition}"}).decode()
