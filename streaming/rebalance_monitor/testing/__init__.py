"""The local stack that ships with the package: what `rebalance-monitor demo`, the workloads, bench/ and scripts/
start, and what users' own tests can start too. What only the project's tests use (an S3 server, Alertmanager, a
three-node cluster, a log shipper, readers of a job's output) is in the repository's `tests/helpers/`.

| module | holds |
| --- | --- |
| `kafka_install.py` | where Apache Kafka's releases and the project's Java consumer are (`var/kafka/<version>/`) |
| `broker.py` | one Apache Kafka KRaft node on loopback ports (`Broker`), the tests' broker settings |
| `sasl_listener.py` | a broker's client listener secured with SASL_SSL and SCRAM (`Broker(sasl_ssl=...)`) |
| `kafka_admin.py` | create topics and wait for them, add partitions |
| `processes.py` | a free port, wait for a child, stop its process group; `ServerProcess` (Prometheus, Alertmanager) |
| `prometheus.py` | a real Prometheus (`PrometheusServer`), a registry served for it to scrape |
| `spark_cluster.py` | a Spark standalone cluster (master and workers) |
| `java_telemetry.py` | the Java plugins and the stock Kafka tools run with them, the plain Java consumer |
| `witnesses.py`, `witness_compare.py` | a group's three witnesses read back from Kafka, and held against each other |
| `assignor_oracle.py` | Kafka's own assignor classes in one JVM, answering `rebalance-monitor assign` cases |
| `assignor_cases.py`, `assignor_coverage.py` | generated assignor cases and what each covers |
| `assignor_shrink.py`, `assignor_soak.py` | a disagreement shrunk; the soak (`make assignors-soak`) |
"""
