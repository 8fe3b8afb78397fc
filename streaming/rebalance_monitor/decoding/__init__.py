"""The decode room: one Kafka record (any of the three sources) to canonical events or a rejection.

| module | what |
| --- | --- |
| `reference.py` | the reference decoder, `decode_record(source, value, key, ts_ms)`: events (`core/event_parsing.py`), the broker's coordinator log and `__consumer_offsets` (through `inputs/`' decoders, one per input); `topic_names_for` |
| `decoded.py` | `Decoded`, the result type of the inputs' own decoders (`inputs/coordinator_log/`, `inputs/offsets_topic/`) |
| `event_columns.py` | the fast path: a heartbeat, poll or commit checked once, as `parse_event` would, and carried as columns (`hot_fields`), rebuilt as the same event (`hot_event`) |
| `decoded_rows.py` | the rows the Spark decode stage hands on (`DECODED_SCHEMA`, `DecodedRows`, packs of events per group, `shard_of`) |
| `input_commits.py` | `__consumer_offsets`' live offset commits compacted over a chunk before any is decoded (`CommitCompactor`) |
| `append_time.py` | a record's Kafka timestamp, read only where the decoder needs it (`append_ms`) |
| `json_parser.py` | the one place the core's JSON parser is chosen (`use_fastest_available`), called by the entry points that read at volume |

The fast paths give what the reference gives: `tests/decoding/test_fast_paths_equal_reference.py`. Importing a
module here changes no parser (`tests/decoding/test_json_parser.py`). Spark's stage (`spark/decode_stage.py`) is an
adapter calling this room; `core/event_parsing.py` (canonical JSON to the event model, pure) stays in the core.
"""
