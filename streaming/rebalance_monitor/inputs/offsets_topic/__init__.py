"""Decoder for the records of Kafka's internal `__consumer_offsets` topic.

Each record's key starts with an int16 that names the record type (Kafka calls it the key version; from 4.0
on it is the coordinator record type's `apiKey`), and each non-null value starts with an int16 value version.
The layouts follow Kafka's JSON message definitions (core/src/main/resources/common/message/ before 3.5,
group-coordinator/src/main/resources/common/message/ after), every version:

| key | record | value versions decoded | event |
| --- | --- | --- | --- |
| 0, 1 | OffsetCommit (key: group, topic, partition) | 0-4 (4 is flexible) | `commit` |
| 2 | GroupMetadata (key: group) | 0-4 (4 is flexible) | `generation_completed`, or `group_empty` when no members |
| 3 | ConsumerGroupMetadata (KIP-848) | 0 | `rebalance_started` (epoch bump) |
| 4 | ConsumerGroupPartitionMetadata | 0 | none (learns topic id -> name) |
| 5 | ConsumerGroupMemberMetadata | 0 | `join`; tombstone -> `member_removed` |
| 6 | ConsumerGroupTargetAssignmentMetadata | 0 | `generation_completed` (assignment epoch) |
| 7 | ConsumerGroupTargetAssignmentMember | 0 | none (decoded, counted) |
| 8 | ConsumerGroupCurrentMemberAssignment | 0 | `sync` (member epoch as generation) |
| 9 | ShareGroupPartitionMetadata (Kafka 4.0 only) | 0 | none (learns topic id -> name) |
| 10 | ShareGroupMemberMetadata (KIP-932) | 0 | `join` (`group_protocol` `share`); tombstone -> `member_removed` |
| 11 | ShareGroupMetadata | 0 | `rebalance_started` (epoch bump); tombstone -> `group_deleted` |
| 12 | ShareGroupTargetAssignmentMetadata | 0 | `generation_completed` (assignment epoch, protocol `simple`) |
| 13 | ShareGroupTargetAssignmentMember | 0 | none (decoded, counted) |
| 14 | ShareGroupCurrentMemberAssignment | 0 | `sync` (member epoch as generation; `topic_ids` of the named topics) |
| 15 | ShareGroupStatePartitionMetadata | 0 | `share_partitions` (its initialised partitions); learns topic id -> name |
| 16 | ConsumerGroupRegularExpression | - | counted |
| 17 | StreamsGroupMetadata (KIP-1071) | 0 | `streams_topology` (`num_standby_replicas` of its last assignment configs, when written), then `rebalance_started` (epoch bump, with its metadata hash and validated topology epoch); tombstone -> `group_deleted` |
| 18 | StreamsGroupPartitionMetadata (builds before 4.1) | 0 | none (learns topic id -> name) |
| 19 | StreamsGroupMemberMetadata | 0 | `join` (`group_protocol` `streams`, process id); tombstone -> `member_removed` |
| 20 | StreamsGroupTargetAssignmentMetadata | 0 | `generation_completed` (assignment epoch, protocol `sticky`) |
| 21 | StreamsGroupTargetAssignmentMember | 0 | none (decoded, counted) |
| 22 | StreamsGroupCurrentMemberAssignment | 0 | `sync` (member epoch; active, standby, warm-up tasks) |
| 23 | StreamsGroupTopology | 0 | `streams_topology` (subtopologies: source, repartition and changelog topics) |

Tombstones: a GroupMetadata / ConsumerGroupMetadata / ShareGroupMetadata / StreamsGroupMetadata tombstone gives
`group_deleted`, a ConsumerGroupMemberMetadata / ShareGroupMemberMetadata / StreamsGroupMemberMetadata one
`member_removed`; an OffsetCommit tombstone (offset
deletion or expiry) is only counted.

Within GroupMetadataValue the members' `subscription` and `assignment` bytes are decoded when the protocol
type is `consumer` (ConsumerProtocolSubscription v0-v3: topics, user data, owned partitions, generation id,
rack; ConsumerProtocolAssignment v0-v3), plus the sticky assignors' user data (StickyAssignorUserData v0/v1
for `sticky`, the bare generation of `cooperative-sticky`). Like Kafka, a newer consumer-protocol version is
read with the newest known layout, and unreadable sticky user data is ignored (Kafka's assignor ignores it too).

KIP-848 and share group records name topics by topic id. The ids are resolved to names with the
ConsumerGroupPartitionMetadata, ShareGroupPartitionMetadata and ShareGroupStatePartitionMetadata records seen so far when a `topic_names` map is passed (`OffsetsTopicDecoder` keeps one); an unknown id is
written as its canonical UUID string.

Malformed input never raises: the result carries a `rejected_reason` naming the field that failed, e.g.
`truncated:GroupMetadataValue.members[2].client_id`. Reason classes: `missing_key`, `truncated`, `bad_length`,
`bad_null`, `bad_utf8`, `bad_varint`, `bad_value`, `bad_version`, `unknown_key_version`, `unsupported_value_version`,
`bad_timestamp`, and for `decode_dump_line` also `not_json`, `bad_dump_line`, `bad_base64`.

The package: `wire.py` (the Reader and shared shapes), `consumer_protocol.py` (the consumer's embedded
protocol), `classic_values.py` (OffsetCommit, GroupMetadata), `consumer_group_values.py` (KIP-848 records), `share_group_values.py` (KIP-932 share group records),
`streams_group_values.py` (KIP-1071 streams group records and their events),
`record_types.py` (the record type table and the events of each record); this module: the entry points.
"""
from __future__ import annotations

import base64
import binascii
import json

from rebalance_monitor.decoding.decoded import Decoded

from .consumer_protocol import (decode_consumer_assignment, decode_consumer_subscription,  # noqa: F401 (API)
                                decode_cooperative_user_data, decode_sticky_user_data)
from .consumer_group_values import KIP848_MEMBER_STATES  # noqa: F401 (API)
from .record_types import RECORD_TYPES, decode_record  # noqa: F401 (API)
from .wire import DecodeError, Reader  # noqa: F401 (API)

__all__ = ["decode_offsets_record", "decode_dump_line", "OffsetsTopicDecoder", "DecodeError", "Reader",
           "RECORD_TYPES", "KIP848_MEMBER_STATES", "decode_consumer_subscription", "decode_consumer_assignment",
           "decode_sticky_user_data", "decode_cooperative_user_data"]


def decode_offsets_record(key: bytes | None, value: bytes | None, ts_ms: int,
                          topic_names: dict | None = None) -> Decoded:
    """Decode one `__consumer_offsets` record into canonical events. Never raises.

    `ts_ms` is the record's timestamp (the coordinator's clock when it appended the record); when it is not
    usable (negative, e.g. -1), the commit timestamp / current-state timestamp inside the value is used.
    `topic_names`, when given, maps topic ids to names for KIP-848 records and is updated from
    ConsumerGroupPartitionMetadata records.
    """
    if key is None:
        return Decoded([], rejected_reason="missing_key", detail="__consumer_offsets records always have a key")
    try:
        key = bytes(key)
        value = None if value is None else bytes(value)
        return decode_record(key, value, ts_ms, topic_names)
    except DecodeError as err:
        return Decoded([], rejected_reason=err.reason, detail=err.detail)
    except (TypeError, ValueError, OverflowError, RecursionError, MemoryError) as exc:
        return Decoded([], rejected_reason="decoder_error", detail=f"{type(exc).__name__}: {exc}"[:300])


class OffsetsTopicDecoder:
    """Stateful wrapper: remembers topic id -> name from the records that name topics (ConsumerGroupPartitionMetadata,
    ShareGroupPartitionMetadata, ShareGroupStatePartitionMetadata)."""

    def __init__(self):
        self.topic_names: dict[str, str] = {}

    def decode(self, key: bytes | None, value: bytes | None, ts_ms: int) -> Decoded:
        return decode_offsets_record(key, value, ts_ms, self.topic_names)

    def decode_dump_line(self, line: str | bytes) -> Decoded:
        return decode_dump_line(line, self.topic_names)


def _b64(value, field: str) -> bytes:
    if not isinstance(value, str):
        raise DecodeError(f"bad_dump_line:{field}", "expected a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DecodeError(f"bad_base64:{field}", str(exc)) from None


def decode_dump_line(line: str | bytes, topic_names: dict | None = None) -> Decoded:
    """One line of the replay format `{"ts": ms, "key": base64, "value": base64 | null}`. Never raises."""
    try:
        if isinstance(line, (bytes, bytearray)):
            line = bytes(line).decode("utf-8")
        obj = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return Decoded([], rejected_reason="not_json", detail=str(exc)[:200])
    try:
        if not isinstance(obj, dict):
            raise DecodeError("bad_dump_line:value", "expected a JSON object")
        ts = obj.get("ts")
        if not isinstance(ts, int) or isinstance(ts, bool):
            raise DecodeError("bad_dump_line:ts", "expected integer epoch milliseconds")
        if "key" not in obj or obj["key"] is None:
            return Decoded([], rejected_reason="missing_key")
        key = _b64(obj["key"], "key")
        value = obj.get("value")
        value = None if value is None else _b64(value, "value")
    except DecodeError as err:
        return Decoded([], rejected_reason=err.reason, detail=err.detail)
    return decode_offsets_record(key, value, ts, topic_names)
