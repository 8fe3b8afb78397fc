# Everything goes through scripts/bootstrap.sh first, so each target works on a fresh machine.
PY := .venv/bin/python

.PHONY: bootstrap test test-fast demo bench soak assignors-soak docs dashboards check-generated clean

bootstrap:
	@scripts/bootstrap.sh

# The whole suite, then the inputs' tests again in the base install (pip install ., no extras: kafka-python only).
test: bootstrap
	$(PY) -m pytest -q --durations=30
	scripts/test_base_install.sh

# Pure-logic tests only (no broker, Spark or Prometheus).
test-fast: bootstrap
	$(PY) -m pytest -q -m "not integration"

demo: bootstrap
	.venv/bin/rebalance-monitor demo

# The assignors against Kafka's own classes on many random cases (rebalance_monitor.testing.assignor_soak):
# ASSIGNOR_CASES in all, the six assignors taking turns, mostly small and medium groups and 1% large ones;
# ASSIGNOR_MINUTES stops it sooner (0: no limit); ASSIGNOR_JVMS oracle JVMs; ASSIGNOR_SEED another set of cases.
# Figures in $(ASSIGNOR_OUT)/summary.json, disagreements (shrunk) in $(ASSIGNOR_OUT)/.
ASSIGNOR_CASES ?= 1000000
ASSIGNOR_MINUTES ?= 0
ASSIGNOR_JVMS ?= 2
ASSIGNOR_SEED ?= 1
ASSIGNOR_OUT ?= var/assignor-soak
assignors-soak: bootstrap
	$(PY) -m rebalance_monitor.testing.assignor_soak --cases $(ASSIGNOR_CASES) --minutes $(ASSIGNOR_MINUTES) \
		--jvms $(ASSIGNOR_JVMS) --seed $(ASSIGNOR_SEED) --out $(ASSIGNOR_OUT)

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
