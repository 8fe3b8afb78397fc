"""The decode room: one Kafka record (any of the three sources) to canonical events or a rejection.

| module | what |
| --- | --- |
| `reference.py` | the reference decoder, `decode_record(source, value, key, ts_ms)`: events (`core/event_parsing.py`), the broker's coordinator log and `__consumer_offsets` (through `inputs/`' decoders, one per input); `topic_names_for` |
| `decoded.py` | `Decoded`, the result type of the inputs' own decoders (`inputs/coordinator_log/`, `inputs/offsets_topic/`) |
| `event_columns.py` | the fast path: a heartbeat, poll or commit checked once, as `parse_event` would, and carried as columns (`hot_fields`), rebuilt as the same event (`hot_event`) |
| `decoded_rows.py` | the rows the Spark decode stage hands on (`DECODED_SCHEMA`, `DecodedRows`, packs of events per group, `shard_of`) |
| `record_decoder.py` | the decode stage's decoder: Kafka records to those rows, the fast path or the reference per record, dead letters with their reasons (`decode_records`, `make_record_decoder`, run by the Python source as it reads) |
| `row_batches.py` | the same decoder as a mapInArrow function over Arrow batches of Kafka rows (`make_decoder`, Spark's connector), with the columns of the rows the JVM stages packed |
| `wake_records.py` | the job's wake-up records: their key (`WAKE_KEY`, written by `spark/job.py`) and the marker they carry (`wake_marker`) |
| `input_commits.py` | `__consumer_offsets`' live offset commits compacted over a chunk before any is decoded (`CommitCompactor`) |
| `append_time.py` | a record's Kafka timestamp, read only where the decoder needs it (`append_ms`) |
| `json_parser.py` | the one place the core's JSON parser is chosen (`use_fastest_available`), called by the entry points that read at volume |

The fast paths give what the reference gives: `tests/decoding/test_fast_paths_equal_reference.py`. Importing a
module here changes no parser (`tests/decoding/test_json_parser.py`). The room imports nothing of Spark's room
(`spark/`): the job's plan (`spark/query_plan.py`) and its Python source (`spark/kafka_source/`) call it
(`tests/test_import_cycles.py`). `core/event_parsing.py` (canonical JSON to the event model, pure) stays in the core.
"""
