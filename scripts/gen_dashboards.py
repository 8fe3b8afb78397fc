#!/usr/bin/env python3
"""Generate the Grafana dashboards (dashboards/generated/*.json), deploy/k8s/prometheusrule.yaml,
deploy/k8s/dashboards-configmap.yaml and docs/alerts.md from their sources.

    .venv/bin/python scripts/gen_dashboards.py           # write what changed
    .venv/bin/python scripts/gen_dashboards.py --check   # drift check: exit 1 if anything is out of date
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dashboards.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
