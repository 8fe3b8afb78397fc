"""The `kafka_cluster` field of every record the monitor writes out: the name of the Kafka cluster the record is
of (`kafka.cluster_name`, exactly as configured). The core knows of one cluster only and never writes it: the
writers stamp it on the way out (the job's sinks, spark/sinks.py; replay's JSON output), as the record's first
field. A record without it (written before it existed) is the configuration's default cluster's."""
from __future__ import annotations

import json

FIELD = "kafka_cluster"


def stamp_prefix(cluster: str) -> str:
    """What `stamped` puts at the start of a record's JSON object: `{"kafka_cluster":<name>,`."""
    return "{" + json.dumps(FIELD) + ":" + json.dumps(cluster, ensure_ascii=False) + ","


def stamped(payload: str, prefix: str) -> str:
    """A record's JSON object text with the field of `prefix` (`stamp_prefix`) first: spliced into the text, not
    parsed and written again (the records are the monitor's own JSON objects, written without a field of that
    name)."""
    if not payload.startswith("{"):  # never so (every record is a JSON object), but never write broken JSON
        return payload
    rest = payload[1:].lstrip()
    return prefix[:-1] + rest if rest.startswith("}") else prefix + rest
