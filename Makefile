# Everything goes through scripts/bootstrap.sh first, so each target works on a fresh machine.
PY := .venv/bin/python

.PHONY: bootstrap test test-fast demo bench soak assignors-soak docs dashboards check-generated clean

bootstrap:
	@scripts/bootstrap.sh

test: bootstrap
	$(PY) -m pytest -q

# Pure-logic tests only (no broker, Spark or Prometheus).
test-fast: bootstrap
	$(PY) -m pytest -q -m "not integration"

demo: bootstrap
	.venv/bin/rebalance-monitor demo

# The assignors against Kafka's own classes on many random cases, large groups included (ASSIGNOR_CASES per assignor).
ASSIGNOR_CASES ?= 20000
assignors-soak: bootstrap
	RM_ASSIGNOR_EXAMPLES=$(ASSIGNOR_CASES) RM_ASSIGNOR_RANDOM=1 RM_ASSIGNOR_SIZE=large \
		$(PY) -m pytest -q -p no:cacheprovider --durations=0 tests/assignors/test_assignors_vs_kafka.py

bench: bootstrap
	$(PY) bench/run_all.py

docs: bootstrap
	$(PY) -m rebalance_monitor.metrics.docs > docs/metrics.md

# Regenerate the dashboards JSON, the PrometheusRule and the alerts doc from their sources.
dashboards: bootstrap
	$(PY) scripts/gen_dashboards.py

check-generated: bootstrap
	$(PY) scripts/gen_dashboards.py --check
	$(PY) -m rebalance_monitor.metrics.docs --check docs/metrics.md

clean:
	rm -rf var .pytest_cache .hypothesis
