#!/usr/bin/env bash
# Fetch Apache Kafka from Maven Central into var/kafka/<version>/libs (idempotent), one directory per pom in
# scripts/maven/kafka-*/: the broker of the tests and the demo (4.x), 4.0.0 (its server assignors' own rules) and
# the classic-coordinator era (3.9.x).
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
