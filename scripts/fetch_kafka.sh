#!/usr/bin/env bash
# Fetch Apache Kafka from Maven Central into var/kafka/<version>/libs (idempotent), one directory per pom in
# scripts/maven/kafka-*/: the broker of the tests and the demo (4.x), 4.0.0 (its server assignors' own rules) and
# the classic-coordinator era (3.9.x); and Kafka's own Kafka Streams examples (scripts/maven/stock-streams-examples/:
# the examples jar, Kafka Streams 4.4 and RocksDB) into var/stock-examples/<version>/.
# Also compiles the project's small Java consumer (streaming/java/test-programs/java-consumer/) against each
# release's kafka-clients. (The assignor oracle, scripts/java-oracle/, is compiled on first use by
# rebalance_monitor.testing.assignor_oracle.)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
log() { printf '[fetch_kafka] %s\n' "$*" >&2; }
command -v mvn >/dev/null 2>&1 || { log "Maven (mvn) is needed: apt-get install maven"; exit 1; }
consumer=streaming/java/test-programs/java-consumer  # RmJavaConsumer.java, compiled per release
for pom in scripts/maven/kafka-*/pom.xml; do
  version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom" | head -1)
  dest="$ROOT/var/kafka/$version"
  stamp="$dest/.stamp"
  digest=$(cat "$pom" "$consumer"/*.java 2>/dev/null | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then continue; fi
  log "fetching Apache Kafka $version with Maven into $dest"
  rm -rf "$dest"; mkdir -p "$dest/libs" "$dest/classes"
  mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DoutputDirectory="$dest/libs" -DincludeScope=runtime >&2
  if ls "$consumer"/*.java >/dev/null 2>&1; then
    javac -nowarn -d "$dest/classes" -cp "$dest/libs/*" "$consumer"/*.java 2>&1 | grep -v '^Note:' >&2 || true
    ls "$dest/classes"/*.class >/dev/null
  fi
  echo "$digest" > "$stamp"
done
# Kafka's own Kafka Streams examples (a Streams application the project did not write) with the Kafka Streams they
# run on; var/kafka/4.4.0/libs gives the rest. A stamp of its own: a change here fetches no Kafka release again.
pom=scripts/maven/stock-streams-examples/pom.xml
version=$(sed -n 's:.*<examples.version>\(.*\)</examples.version>.*:\1:p' "$pom" | head -1)
dest="$ROOT/var/stock-examples/$version"
stamp="$dest/.stamp"
digest=$(sha256sum "$pom" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  log "fetching Kafka's Streams examples $version with Maven into $dest"
  rm -rf "$dest"; mkdir -p "$dest"
  mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DoutputDirectory="$dest" -DincludeScope=runtime >&2
  ls "$dest"/kafka-streams-examples-"$version".jar >/dev/null
  echo "$digest" > "$stamp"
fi
