"""kafka_reach: the probe `run` makes before it starts Spark, the one-line errors, the back-off steps."""
from __future__ import annotations

import pytest

from rebalance_monitor.kafka_connection import KafkaConnection
from rebalance_monitor.spark.kafka_reach import Backoff, KafkaReach, one_line, probe
from rebalance_monitor.testing.broker import free_port

SPARK_FAILURE = """[STREAM_FAILED] Query [id = 1f, runId = 2e] terminated with exception: Traceback (most recent call last):
  File "/x/kafka_source.py", line 290, in partitions
    md = self.admin.list_topics(timeout=30)
cimpl.KafkaException: KafkaError{code=_TRANSPORT,val=-195,str="Failed to get metadata: Local: Broker transport failure"}
\tat org.apache.spark.api.python.PythonRunner$$anon$3.read(PythonRunner.scala:600)
"""


def test_one_line_picks_the_clients_error_out_of_a_trace():
    assert one_line(RuntimeError(SPARK_FAILURE)) == (
        'cimpl.KafkaException: KafkaError{code=_TRANSPORT,val=-195,str="Failed to get metadata: Local: Broker '
        'transport failure"}')
    assert one_line(RuntimeError("the history sink failed\nmore detail")) == "the history sink failed"
    assert len(one_line("x" * 1000)) == 400


def test_backoff_doubles_to_its_cap_and_resets():
    b = Backoff(1, 60)
    assert [b.step() for _ in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    b.reset()
    assert b.step() == 1


@pytest.mark.parametrize("client,error", [("confluent", "Connection refused"),
                                          ("kafka-python", "Unable to bootstrap")])
def test_a_closed_port_gives_the_clients_error(client, error):
    address = f"127.0.0.1:{free_port()}"
    reach = KafkaReach(KafkaConnection(address, security_protocol="PLAINTEXT"), client, timeout_s=3)
    found = reach.check()
    assert found is not None and error in found and "\n" not in found
    assert reach.down_since is not None and reach.failures == 1
    line = reach.reason(found, 4)
    assert line.startswith(f"Kafka at {address} is not reachable (security protocol PLAINTEXT): ")
    assert line.endswith("; retrying in 4 s")


@pytest.mark.integration
@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_a_broker_that_answers_gives_none(broker, client):
    reach = KafkaReach(KafkaConnection(broker.bootstrap, security_protocol="PLAINTEXT"), client)
    assert reach.check() is None and reach.down_since is None
    assert probe(KafkaConnection(broker.bootstrap, security_protocol="SSL"), client, timeout_s=3) is not None
