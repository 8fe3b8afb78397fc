#!/usr/bin/env bash
# Build the monitor's Java plugins (streaming/java/: the KIP-714 broker plugin and the client metrics reporter) with
# Maven and put their jars in var/java/ (broker-telemetry-plugin.jar, client-metrics-reporter.jar;
# streams-test-app.jar, a Kafka Streams application the tests watch, from test-programs/; spark-input-stage.jar, the
# job's JVM input stage on Spark's connector's rows: __consumer_offsets' commits compacted, the events' heartbeats,
# polls and commits packed per group; compiled against the installed PySpark's own jars). Idempotent:
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
jars=(broker-telemetry-plugin client-metrics-reporter streams-test-app spark-input-stage)
# a jar's Maven module: the Java test programs' home is test-programs/ (the streams app; the plain Java consumer
# beside it is compiled per Kafka release by scripts/fetch_kafka.sh)
module_dir() { case "$1" in streams-test-app) echo "test-programs/$1" ;; *) echo "$1" ;; esac; }
PY=${PYTHON:-$ROOT/.venv/bin/python}
pyspark_jars=$("$PY" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
spark_jars="$ROOT/var/spark-jars"
beside_spark() {  # the job's JVM stage goes where spark.jars_dir points (scripts/fetch_spark_jars.sh refills it)
  # the same stage's jar under the module's former name would put its classes twice on the class path
  rm -f "$dest/spark-commit-compaction.jar" "$spark_jars/spark-commit-compaction.jar"
  if [ -d "$spark_jars" ] && ! cmp -s "$dest/spark-input-stage.jar" "$spark_jars/spark-input-stage.jar"; then
    cp "$dest/spark-input-stage.jar" "$spark_jars/"
  fi
}
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
  ok=1; for j in "${jars[@]}"; do [ -f "$dest/$j.jar" ] || ok=0; done
  if [ "$ok" = 1 ]; then beside_spark; exit 0; fi
fi
log "building streaming/java with Maven into $dest"
mvn_args=(-q -B -Dstyle.color=never "-Dpyspark.jars=$pyspark_jars" -f streaming/java/pom.xml package)
# offline first (the cache is warm after one build); online when something is missing from it
mvn -o "${mvn_args[@]}" >/dev/null 2>&1 || mvn "${mvn_args[@]}" >&2
mkdir -p "$dest"
for j in "${jars[@]}"; do cp "streaming/java/$(module_dir "$j")/target/$j-0.1.0.jar" "$dest/$j.jar"; done
echo "$digest" > "$stamp"
beside_spark
