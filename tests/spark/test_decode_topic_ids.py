"""The decode stage names the topics of KIP-848 `__consumer_offsets` records (inputs/topic_ids.py) and counts the
ids it cannot name in the batch's clock row, which the processor hands to the driver."""
from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql import Row

import helpers.offsets_encoder as enc
from helpers.processor_handle import TimerValues, new_processor

from rebalance_monitor.decoding.decoded_rows import CLUSTER_SHARD, PACK_COLUMNS, unpack_events

from rebalance_monitor.decoding.row_batches import make_decoder

KNOWN, GONE = "5f0e7c1e-8a3b-4c1d-9e2f-0a1b2c3d4e5f", "00000000-0000-0000-0000-0000000000aa"
TS = 1_700_000_000_000


def _batch(records) -> pa.RecordBatch:
    n = len(records)
    return pa.RecordBatch.from_pydict({
        "topic": ["offs"] * n, "partition": pa.array([0] * n, pa.int32()), "offset": list(range(n)),
        "timestamp": pa.array([TS + i for i in range(n)], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        "key": pa.array([k for k, _ in records], pa.binary()), "value": pa.array([v for _, v in records], pa.binary())})


def test_kip848_assignments_are_named_and_unknown_ids_counted(tmp_path):
    ids = tmp_path / "ids.json"
    ids.write_text(json.dumps({KNOWN: "orders"}))
    batch = _batch([
        (enc.group_key(8, "cg", "m-1"), enc.cg_current_assignment_value(3, 2, 0, [(KNOWN, [0, 1])])),
        (enc.group_key(8, "cg", "m-2"), enc.cg_current_assignment_value(3, 2, 0, [(GONE, [0]), (KNOWN, [2])])),
    ])
    out = list(make_decoder({"offs": "offsets-topic"}, 1 << 20, 10 ** 13,
                            topic_ids=(str(ids), None))(iter([batch])))[0].to_pylist()
    events = [json.loads(p) for r in out if r["kind"] == "events"
              for p in unpack_events(r["packed"])[PACK_COLUMNS.index("payload")]]
    assert {e["member_id"]: e["assignment"] for e in events} == {
        "m-1": [["orders", 0], ["orders", 1]], "m-2": [[GONE, 0], ["orders", 2]]}
    tick = [r for r in out if r["kind"] == "tick"]
    assert json.loads(tick[0]["payload"]) == {"left_out": [], "unresolved_topic_ids": {GONE: 1}}
    clock = [json.loads(r.payload)
             for r in new_processor().handleInputRows((CLUSTER_SHARD,), iter([Row(**tick[0])]), TimerValues(0))]
    assert clock[0]["unresolved_topic_ids"] == {GONE: 1} and "left_out" not in clock[0]
    # without a map the ids stay ids, and nothing is counted (the job was not asked to name them)
    plain = list(make_decoder({"offs": "offsets-topic"}, 1 << 20, 10 ** 13)(iter([batch])))[0].to_pylist()
    assert [r["payload"] for r in plain if r["kind"] == "tick"] == [""]


def test_the_job_reads_a_topic_ids_file_on_the_driver_and_refuses_a_missing_one(tmp_path):
    """kafka.topic_ids as a file: checked when the configuration loads, read once by the job (its content goes to
    the workers, which need not see the file)."""
    import pytest

    from rebalance_monitor.config import ConfigError, load_config
    from rebalance_monitor.inputs.topic_ids import resolver_for

    with pytest.raises(ConfigError, match="kafka.topic_ids"):
        load_config(env={}, overrides={"kafka.offsets_topic": "__consumer_offsets",
                                       "kafka.topic_ids": str(tmp_path / "missing.json")})
    names = resolver_for(str(tmp_path / "gone.json"), {KNOWN: "orders"})  # the content, as the job passes it
    assert names.get(KNOWN) == "orders"
