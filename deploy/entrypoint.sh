#!/usr/bin/env bash
# The image's entry point (under tini). Three modes:
#   driver ARGS...    Spark on Kubernetes (the Spark operator, or spark-submit --master k8s://...) starts the
#                     driver pod with these arguments: run spark-submit in client mode inside the pod.
#   executor          ... and each executor pod like this: start the executor backend, configured by the
#                     SPARK_* environment variables Spark's Kubernetes scheduler sets on the pod.
#   anything else     the rebalance-monitor command line (default: run --config /etc/rebalance-monitor/monitor.yaml).
# SPARK_HOME is PySpark's own distribution (bin/, jars/ with spark-kubernetes, and the Kafka connector when the
# image was built with WITH_SPARK_KAFKA=1).
set -euo pipefail
SPARK_HOME=${SPARK_HOME:-$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}
export SPARK_HOME

need() {
  for name in "$@"; do
    if [ -z "${!name:-}" ]; then
      echo "entrypoint: $name is not set (Spark's Kubernetes scheduler sets it on executor pods)" >&2
      exit 2
    fi
  done
}

case "${1:-}" in
  driver)
    shift
    exec "$SPARK_HOME/bin/spark-submit" --deploy-mode client \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS:-0.0.0.0}" "$@"
    ;;
  executor)
    shift
    need SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES SPARK_APPLICATION_ID SPARK_EXECUTOR_POD_IP \
      SPARK_EXECUTOR_MEMORY
    # the pod's JVM options come as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in order
    java_opts=()
    while IFS='=' read -r name _; do
      java_opts+=("${!name}")
    done < <(env | grep -E '^SPARK_JAVA_OPT_[0-9]+=' | sort -t_ -k4 -n)
    exec java "${java_opts[@]}" -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" \
      -cp "${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$SPARK_HOME/jars/*" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" --podName "${SPARK_EXECUTOR_POD_NAME:-$(hostname)}"
    ;;
  *)
    exec rebalance-monitor "$@"
    ;;
esac
