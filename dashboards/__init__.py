"""Operations artefacts as code: the Grafana dashboards, and the files generated from the rule files.

``python -m dashboards`` (or ``scripts/gen_dashboards.py``) writes every generated file; ``--check`` reports
the ones whose committed content differs from what the sources give (the drift check):

* ``dashboards/generated/*.json``: the Grafana dashboards, built with grafana-foundation-sdk from the metric
  catalogue (:mod:`rebalance_monitor.metrics.catalogue`);
* ``deploy/k8s/prometheusrule.yaml``: ``conf/rules/*.yml`` as a Prometheus Operator ``PrometheusRule``;
* ``deploy/k8s/dashboards-configmap.yaml``: the dashboards in a ConfigMap for Grafana's dashboard sidecar;
* ``deploy/k8s/monitor-configmap.yaml``: ``deploy/monitor.yaml`` in a ConfigMap;
* ``docs/alerts.md``: the alert reference, from ``conf/rules/alerts.yml``.
"""
