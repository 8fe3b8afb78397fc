#!/usr/bin/env bash
# The inputs' tests in the base install, as many users have it: `pip install .` without extras (no confluent-kafka:
# the Python source reads with kafka-python), in a virtualenv of its own (.venv-base, at requirements.lock's
# versions), plus pytest to run them. A missing extra can then never hide a broken input again (issue 27).
# Usage: scripts/test_base_install.sh [pytest args replacing the default tests]   (make test runs it after the main suite)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="$ROOT/.venv-base"
PY=${PYTHON:-python3}
log() { printf '[base-install] %s\n' "$*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.base-stamp"
digest=$(cat pyproject.toml requirements.lock $(git ls-files streaming | sort) 2>/dev/null | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  log "installing the package without extras into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  # a real (not editable) install of the package, as `pip install .` gives users
  "$VENV/bin/python" -m pip install -q -c requirements.lock . pytest
  echo "$digest" > "$stamp"
fi
if "$VENV/bin/python" -c "import confluent_kafka" 2>/dev/null; then
  log "confluent-kafka is importable in $VENV: this is not the base install"
  exit 1
fi
# run from the tests' own directory so that `rebalance_monitor` is the installed package, not streaming/
cd "$ROOT"
export RM_KAFKA_HOME="$ROOT/var/kafka"  # the installed package is not in the checkout: Kafka's jars are here
scripts/build_java.sh                   # and the Java plugins' (up to date: nothing to do)
export RM_JAVA_HOME="$ROOT/var/java"
# the inputs' tests, the newcomer's whole day on the broker alone (run by the base install's monitor), the
# client-metrics command, the describe answers' decoders (broker_facts: APIs 69, 77, 89 and 90's schemas are package
# data), and what the monitor asks the broker
# (Spark's connector is the same jar with or without extras: the main suite reads with it)
tests=(tests/inputs/test_inputs_each_reader.py -k "not spark-connector" tests/inputs/test_inputs_integration.py
       tests/witnesses/test_witnesses_real_data.py tests/history/test_history_kafka_readers.py tests/newcomer
       # the client-metrics command (kafka-python's admin), on the broker plugin's Kafka 4.4
       "tests/java/test_client_metrics_command.py::test_the_command_sets_up_the_subscription_a_stock_java_consumer_pushes_under[kafka-4.4-exporter]"
       tests/java/test_client_metrics_command.py::test_bad_arguments_name_the_option_and_the_allowed_values
       tests/broker_facts/test_describe_decode.py tests/broker_facts/test_describe_routing.py
       tests/broker_facts/test_streams_describe_decode.py tests/broker_facts/test_share_group_offsets_decode.py
       tests/broker_facts/test_group_config_events.py
       # what the monitor asks the broker, on real brokers (kafka-python's admin: the base install's only client)
       tests/broker_facts/test_broker_group_configs.py tests/broker_facts/test_describe_configs_denied.py
       tests/broker_facts/test_release_on_real_brokers.py tests/broker_facts/test_poller_stamps.py
       # share groups (KIP-932) from __consumer_offsets, on a real Kafka 4.4 broker with Kafka's console share consumers
       tests/inputs/test_offsets_share_groups.py tests/inputs/test_share_group_on_kafka.py
       tests/inputs/test_share_group_lag_on_kafka.py
       # streams groups (KIP-1071) from __consumer_offsets, on a real Kafka 4.4 broker with a Kafka Streams application
       tests/inputs/test_offsets_streams_groups.py tests/inputs/test_streams_group_on_kafka.py
       tests/inputs/test_streams_partitions_added_on_kafka.py
       # ... and with Kafka's own WordCountDemo (kafka-streams-examples), its members' early warnings through the plugin
       tests/inputs/test_stock_streams_app_on_kafka.py tests/java/test_streams_protocol_warnings.py
       # both new group types' captured Kafka 4.4 run: __consumer_offsets and the coordinator's log replayed
       tests/witnesses/test_witnesses_new_group_types.py
       # several clusters from one monitor: two 4.4 clusters (one behind SASL_SSL with SCRAM) and a 3.9 one, the
       # upgrade from one cluster, an outage; the SASL_SSL listener's parts; the history of several clusters
       tests/reliability/test_several_clusters_on_kafka.py tests/reliability/test_sasl_ssl_broker.py
       tests/history/test_history_clusters.py)
[ $# -gt 0 ] && tests=("$@")  # e.g. scripts/test_base_install.sh tests/newcomer -x
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$ROOT" "${tests[@]}"
