"""A Kafka streaming source written as a PySpark 4.x Python data source (format "rmkafka").

It gives the rows Spark's own Kafka connector gives (``key, value, topic, partition, offset, timestamp,
timestampType``, plus ``headers`` with ``includeHeaders=true``), with real per-micro-batch offset ranges,
so a user whose Spark lacks the spark-sql-kafka jar can still run the job. Offsets are JSON
``{topic: {partition: offset}}`` (the next offset to read), as in Spark's connector.

Options (names are case-insensitive):

- ``kafka.bootstrap.servers`` (required) and any other ``kafka.*`` client option, in Java, librdkafka or
  kafka-python spelling; security settings are mapped between the clients (`KafkaConnection.from_options`,
  kafka_connection.py).
- exactly one of ``subscribe`` (comma list), ``subscribePattern`` (regex, full match; topics starting
  with ``__`` only when the pattern does too) or ``assign`` (JSON ``{"topic": [0, 1]}``).
- ``startingOffsets``: ``earliest``, ``latest`` (default) or JSON ``{"t": {"0": 23}}`` (-2 earliest,
  -1 latest; partitions left out start at earliest). Used only when a query starts without checkpoint.
- ``maxOffsetsPerTrigger``: records per micro-batch, spread over partitions by their lag and rounded as
  Spark's own connector rounds (Spark's admission-control API: honoured by ``Trigger.AvailableNow`` too).
- ``minPartitions``: split offset ranges so a batch has at least this many Spark tasks
  (default one task per Kafka partition with new records).
- ``failOnDataLoss`` (default true): fail when records to read were deleted; false: skip them.
- ``client``: ``auto`` (default: confluent-kafka if importable, else kafka-python), ``confluent``,
  ``kafka-python``.
- ``verifyEndOffsets`` (default true): confirm the latest offsets with one fetch per partition. Some
  Kafka-protocol brokers (reimplementations such as Tansu) answer ListOffsets(latest) with the
  base offset of the last record batch plus one instead of the high watermark; the fetch response
  carries the true high watermark. ``false`` trusts ListOffsets (one request; right for Apache Kafka).
- ``kafkaConsumer.pollTimeoutMs`` (default 120000): give up reading a range after this long without
  progress. ``groupIdPrefix``: prefix of the (never joined) group id librdkafka requires.
- ``includeHeaders`` (default false), ``arrowBatchRows`` (default 20000).
- ``reuseClients`` (default true): a Python worker keeps each partition's consumer, paused, for the partition's
  next range (client_pool.py), as Spark's connector keeps its consumers; false opens one per range.

New partitions and new topics matching a pattern are picked up at the next micro-batch and read
from their earliest offset. Reads assign partitions directly and never join a consumer group;
offsets are not committed to Kafka (Spark's checkpoint owns them).

The modules: options.py (options, client choice), offsets.py (JSON offsets, rate limit, ranges; pure),
metadata.py (partitions and offsets from the cluster), range_clients.py (each client's range reader), client_pool.py (the
clients kept between ranges), range_reader.py (the read loop), columns.py (the rows' schema and column buffer),
datasource.py (what Spark calls). Import each name from its module: this package's `__init__` imports nothing, so
that importing one module (offsets.py, without pyspark) does not import them all. The choice between Spark's
connector and this source is spark/sources.py's (`kafka_stream`, `is_decoded`, `ConnectorMissing`).
"""
