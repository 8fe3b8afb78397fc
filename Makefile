# Everything goes through scripts/bootstrap.sh first, so each target works on a fresh machine.
PY := .venv/bin/python

.PHONY: bootstrap test test-fast demo bench soak docs dashboards check-generated clean

bootstrap:
	@scripts/bootstrap.sh

test: bootstrap
	$(PY) -m pytest -q

# Pure-logic tests only (no broker, Spark or Prometheus).
test-fast: bootstrap
	$(PY) -m pytest -q -m "not integration"

demo: bootstrap
	.venv/bin/rebalance-monitor demo

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
