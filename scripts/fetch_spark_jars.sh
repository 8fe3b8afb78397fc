#!/usr/bin/env bash
# Fetch with Maven into var/spark-jars (idempotent):
#   - Spark's own Kafka connector (org.apache.spark:spark-sql-kafka-0-10_2.13 at the installed PySpark's exact
#     version, and its runtime dependencies): scripts/maven/spark-kafka/pom.xml;
#   - Hadoop's S3A file system (org.apache.hadoop:hadoop-aws at the version of PySpark's hadoop-client-api, with
#     the AWS SDK v2 modules it uses instead of the SDK's 650 MB bundle): scripts/maven/hadoop-aws/pom.xml; their
#     names are listed in var/spark-jars/s3a-jars.txt.
# Jars PySpark already ships (Scala, slf4j, Netty, httpclient, compression codecs, ...) are left out, so these
# run on PySpark's own copies. The job adds var/spark-jars to the driver's and executors' class path (config key
# spark.jars_dir), so no run needs Ivy or the network when its SparkSession starts.
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
aws_pom=scripts/maven/hadoop-aws/pom.xml
hadoop_want=$(sed -n 's:.*<hadoop.version>\(.*\)</hadoop.version>.*:\1:p' "$aws_pom" | head -1)
hadoop_have=$(cd "$pyspark_jars" && ls hadoop-client-api-*.jar | sed -E 's/^hadoop-client-api-(.*)\.jar$/\1/' | head -1)
if [ "$hadoop_have" != "$hadoop_want" ]; then
  log "PySpark ships hadoop-client-api $hadoop_have but $aws_pom names Hadoop $hadoop_want: keep the two equal"
  exit 1
fi
dest="$ROOT/var/spark-jars"
stamp="$dest/.stamp"
digest=$( (cat "$pom" "$aws_pom"; echo "$have") | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then exit 0; fi

# copy_jars POM DIR: the POM's runtime dependencies into DIR, less what PySpark ships already (same artifact,
# any version): one copy of each class on the class path.
copy_jars() {
  mvn -q -B -Dstyle.color=never -f "$1" dependency:copy-dependencies -DoutputDirectory="$2" -DincludeScope=runtime >&2
  for jar in "$2"/*.jar; do
    artifact=$(basename "$jar" .jar | sed -E 's/-[0-9][0-9A-Za-z.+_-]*$//')
    if ls "$pyspark_jars/$artifact"-[0-9]*.jar >/dev/null 2>&1; then rm -f "$jar"; fi
  done
}
rm -rf "$dest"; mkdir -p "$dest"
log "fetching spark-sql-kafka-0-10_2.13 $want with Maven into $dest"
copy_jars "$pom" "$dest"
ls "$dest"/spark-sql-kafka-0-10_2.13-"$want".jar >/dev/null
log "fetching hadoop-aws $hadoop_want (S3A) and the AWS SDK modules it uses with Maven into $dest"
s3a_tmp="$dest/.s3a"
copy_jars "$aws_pom" "$s3a_tmp"
for jar in "$s3a_tmp"/*.jar; do
  if [ -e "$dest/$(basename "$jar")" ]; then rm -f "$jar"; fi  # already there for the Kafka connector
done
ls "$s3a_tmp"/hadoop-aws-"$hadoop_want".jar >/dev/null
(cd "$s3a_tmp" && ls *.jar) > "$dest/s3a-jars.txt"
mv "$s3a_tmp"/*.jar "$dest"/
rmdir "$s3a_tmp"
log "$(ls "$dest"/*.jar | wc -l) jars ($(du -ch "$dest"/*.jar | tail -1 | cut -f1)): $(cd "$dest" && ls *.jar | tr '\n' ' ')"
echo "$digest" > "$stamp"
