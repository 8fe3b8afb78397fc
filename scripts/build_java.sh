#!/usr/bin/env bash
# Build the monitor's Java plugins (streaming/java/: the KIP-714 broker plugin and the client metrics reporter) with
# Maven and put their jars in var/java/ (broker-telemetry-plugin.jar, client-metrics-reporter.jar;
# streams-test-app.jar, a Kafka Streams application the tests watch). Idempotent:
# nothing is built while the sources are unchanged. The Java unit tests (Surefire) run as part of the build.
# Offline after the first run (Maven's cache holds everything; the first run fetches the plugins from Maven Central).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
log() { printf '[build_java] %s\n' "$*" >&2; }
command -v mvn >/dev/null 2>&1 || { log "Maven (mvn) is needed: apt-get install maven"; exit 1; }
dest="$ROOT/var/java"
stamp="$dest/.stamp"
digest=$(find streaming/java -path '*/target' -prune -o -type f \( -name '*.java' -o -name 'pom.xml' \) -print \
  | LC_ALL=C sort | xargs cat | sha256sum | cut -d' ' -f1)
jars=(broker-telemetry-plugin client-metrics-reporter streams-test-app)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
  ok=1; for j in "${jars[@]}"; do [ -f "$dest/$j.jar" ] || ok=0; done
  [ "$ok" = 1 ] && exit 0
fi
log "building streaming/java with Maven into $dest"
mvn_args=(-q -B -Dstyle.color=never -f streaming/java/pom.xml package)
# offline first (the cache is warm after one build); online when something is missing from it
mvn -o "${mvn_args[@]}" >/dev/null 2>&1 || mvn "${mvn_args[@]}" >&2
mkdir -p "$dest"
for j in "${jars[@]}"; do cp "streaming/java/$j/target/$j-0.1.0.jar" "$dest/$j.jar"; done
echo "$digest" > "$stamp"
