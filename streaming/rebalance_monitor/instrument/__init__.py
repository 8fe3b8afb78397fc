"""Client-side instrumentation: emit the canonical `join`/`sync`/`heartbeat`/`poll`/`leave`/`commit`
(and `revoked`/`lost`) events of contract section 1 from a running consumer to an events topic.

    from rebalance_monitor.instrument import KafkaEmitter, instrument_consumer
    emitter = KafkaEmitter("broker:9092", "rebalance-events")
    consumer = KafkaConsumer(group_id="orders", ...)
    instrument_consumer(consumer, emitter)        # kafka-python
    consumer.subscribe(["orders"])

For confluent-kafka use `InstrumentedConfluentConsumer(config, emitter)` (imported lazily from
`rebalance_monitor.instrument.confluent`, so this package does not need confluent-kafka).
See docs/instrumentation.md.
"""
from .emitter import CallbackEmitter, Emitter, KafkaEmitter, MemoryEmitter, read_events

__all__ = ["Emitter", "KafkaEmitter", "MemoryEmitter", "CallbackEmitter", "read_events",
           "instrument_consumer", "InstrumentedKafkaConsumer", "KafkaPythonInstrumentation",
           "InstrumentedConfluentConsumer"]


def __getattr__(name):
    if name in ("instrument_consumer", "InstrumentedKafkaConsumer", "KafkaPythonInstrumentation"):
        from . import kafka_python

        return getattr(kafka_python, name)
    if name == "InstrumentedConfluentConsumer":
        from .confluent import InstrumentedConfluentConsumer

        return InstrumentedConfluentConsumer
    raise AttributeError(name)
