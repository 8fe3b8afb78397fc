#!/usr/bin/env bash
# Install everything the monitor and its tests need, idempotently:
#   - a virtualenv in .venv with the package (editable) and its test extras, at the versions of requirements.lock,
#   - Apache Kafka's jars with Maven into var/kafka (scripts/fetch_kafka.sh),
#   - Spark's Kafka connector jars with Maven into var/spark-jars (scripts/fetch_spark_jars.sh),
#   - the monitor's Java plugins (streaming/java/) with Maven into var/java (scripts/build_java.sh),
#   - Java and Maven (for Spark and Kafka), tmux, and Prometheus/promtool/Alertmanager from Debian's packages when missing.
# Usage: scripts/bootstrap.sh [--no-system]   (--no-system skips apt, e.g. for the demo only)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="$ROOT/.venv"
PY=${PYTHON:-python3}

want_system=1
[ "${1:-}" = "--no-system" ] && want_system=0

log() { printf '[bootstrap] %s\n' "$*" >&2; }

# --- Debian packages ------------------------------------------------------------------------
if [ "$want_system" = 1 ]; then
  missing=()
  command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  command -v tmux >/dev/null 2>&1 || missing+=(tmux)
  command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  command -v prometheus-alertmanager >/dev/null 2>&1 || missing+=(prometheus-alertmanager)
  if [ ${#missing[@]} -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1; then
      SUDO=""
      [ "$(id -u)" != 0 ] && SUDO="sudo"
      log "installing Debian packages: ${missing[*]}"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
    else
      log "missing ${missing[*]} and no apt-get: install them with your package manager"
      exit 1
    fi
  fi
fi

# --- Python ---------------------------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.bootstrap-stamp"
digest=$(cat pyproject.toml requirements.lock | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  log "installing Python dependencies into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  # Exact versions from the lock (scripts/lock_python.sh writes it), so a fresh machine next month builds the same.
  "$VENV/bin/python" -m pip install -q -c requirements.lock -e ".[test,fast,dashboards,demo]"
  echo "$digest" > "$stamp"
fi
# --- Apache Kafka (the broker of the tests and the demo) from Maven Central ---------------------
scripts/fetch_kafka.sh
# --- Spark's own Kafka connector (spark-sql-kafka at PySpark's version) from Maven Central -------
PYTHON="$VENV/bin/python" scripts/fetch_spark_jars.sh
# --- The monitor's Java plugins (KIP-714 broker plugin, client metrics reporter) --------------------------
scripts/build_java.sh
log "ready: $VENV"
