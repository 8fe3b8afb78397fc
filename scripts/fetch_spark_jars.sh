#!/usr/bin/env bash
# Fetch Spark's own Kafka connector (org.apache.spark:spark-sql-kafka-0-10_2.13 at the installed PySpark's exact
# version, and its runtime dependencies) with Maven into var/spark-jars (idempotent). Jars PySpark already ships
# (Scala, slf4j, compression codecs, ...) are left out, so the connector runs on PySpark's own copies.
# The job adds var/spark-jars to the driver's and executors' class path (config key spark.jars_dir), so no run
# needs Ivy or the network when its SparkSession starts.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
log() { printf '[fetch_spark_jars] %s\n' "$*" >&2; }
command -v mvn >/dev/null 2>&1 || { log "Maven (mvn) is needed: apt-get install maven"; exit 1; }
pom=scripts/maven/spark-kafka/pom.xml
want=$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' "$pom" | head -1)
read -r have pyspark_jars < <("$PY" -c 'import os, pyspark; print(pyspark.__version__, os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
if [ "$have" != "$want" ]; then
  log "PySpark $have is installed but $pom names Spark $want: keep the two equal (pyproject.toml pins pyspark)"
  exit 1
fi
dest="$ROOT/var/spark-jars"
stamp="$dest/.stamp"
digest=$( (cat "$pom"; echo "$have") | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then exit 0; fi
log "fetching spark-sql-kafka-0-10_2.13 $want with Maven into $dest"
rm -rf "$dest"; mkdir -p "$dest"
mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DoutputDirectory="$dest" -DincludeScope=runtime >&2
# Leave out what PySpark ships already (same artifact, any version): one copy of each class on the class path.
for jar in "$dest"/*.jar; do
  artifact=$(basename "$jar" .jar | sed -E 's/-[0-9][0-9A-Za-z.+_-]*$//')
  if ls "$pyspark_jars/$artifact"-[0-9]*.jar >/dev/null 2>&1; then rm -f "$jar"; fi
done
ls "$dest"/spark-sql-kafka-0-10_2.13-"$want".jar >/dev/null
log "$(ls "$dest"/*.jar | wc -l) jars: $(cd "$dest" && ls *.jar | tr '\n' ' ')"
echo "$digest" > "$stamp"
