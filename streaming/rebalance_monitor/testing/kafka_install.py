"""Where the project's Apache Kafka lives: the releases scripts/fetch_kafka.sh fetched with Maven into
`var/kafka/<version>/` (jars in `libs/`, the project's Java consumer in `classes/`), and Kafka's own Kafka Streams
examples with the Kafka Streams and RocksDB jars they run on in `var/stock-examples/<version>/`.

`RM_KAFKA_HOME` points at another cache root (a directory holding `<version>/libs`; the examples are in its
sibling `stock-examples/`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# The release the tests and the demo run, 4.0.0, and the classic-coordinator era (3.9.x). Keep in step with
# scripts/maven/kafka-*/pom.xml.
KAFKA_VERSION = "4.4.0"
KAFKA_CLASSIC_VERSION = "3.9.2"
# the first KIP-848 release, whose uniform server assignor differs from 4.0.1's and later ones' (docs/assignors.md):
# the assignor oracle's 4.0.0 classes, and a broker of the test that the monitor follows the broker's release
KAFKA_4_0_VERSION = "4.0.0"
RELEASES = (KAFKA_VERSION, KAFKA_4_0_VERSION, KAFKA_CLASSIC_VERSION)
# Kafka's own Kafka Streams examples (org.apache.kafka:kafka-streams-examples; 4.0.0 is the newest on Maven Central),
# run on KAFKA_VERSION's jars. Keep in step with scripts/maven/stock-streams-examples/pom.xml.
STOCK_EXAMPLES_VERSION = "4.0.0"


class KafkaNotInstalled(RuntimeError):
    pass


def project_root() -> Path:
    return Path(__file__).resolve().parents[3]


def cache_root() -> Path:
    return Path(os.environ.get("RM_KAFKA_HOME") or project_root() / "var" / "kafka")


def kafka_home(version: str = KAFKA_VERSION, fetch: bool = True) -> Path:
    """The directory of one fetched release; runs scripts/fetch_kafka.sh once when it is missing."""
    home = cache_root() / version
    if not (home / "libs").is_dir() or not any((home / "libs").glob("kafka_2.13-*.jar")):
        script = project_root() / "scripts" / "fetch_kafka.sh"
        if fetch and script.exists() and shutil.which("mvn"):
            subprocess.run([str(script)], check=True)
        if not (home / "libs").is_dir():
            raise KafkaNotInstalled(
                f"Apache Kafka {version} is not in {cache_root()}: run scripts/fetch_kafka.sh (needs Maven)")
    return home


def classpath(version: str = KAFKA_VERSION) -> str:
    home = kafka_home(version)
    return f"{home / 'libs'}/*:{home / 'classes'}"


def stock_examples_jar(version: str = STOCK_EXAMPLES_VERSION, fetch: bool = True) -> Path:
    """Kafka's own kafka-streams-examples jar (its WordCountDemo: a Streams application the project did not write),
    beside the Kafka Streams 4.4 and RocksDB jars it runs on (`stock_examples_classpath`); runs
    scripts/fetch_kafka.sh once when it is missing."""
    path = cache_root().parent / "stock-examples" / version / f"kafka-streams-examples-{version}.jar"
    if not path.is_file():
        script = project_root() / "scripts" / "fetch_kafka.sh"
        if fetch and script.exists() and shutil.which("mvn"):
            subprocess.run([str(script)], check=True)
        if not path.is_file():
            raise KafkaNotInstalled(f"{path} is missing: run scripts/fetch_kafka.sh (needs Maven)")
    return path


def stock_examples_classpath(version: str = STOCK_EXAMPLES_VERSION) -> str:
    """The class path of Kafka's own Streams examples: their jars (the examples, Kafka Streams 4.4, RocksDB), then
    Kafka 4.4's (kafka-clients, slf4j, log4j, Jackson)."""
    return f"{stock_examples_jar(version).parent}/*:{classpath(KAFKA_VERSION)}"


def java_binary() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise KafkaNotInstalled("Java is needed to run Apache Kafka: run scripts/bootstrap.sh")
    return found
