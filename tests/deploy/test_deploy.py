"""Static checks of deploy/: the compose stack, the Kubernetes manifests and the image definition.

Docker and a cluster are not available in the test environment, so this validates what can be validated
offline: YAML/JSON parses; the compose file against the compose-spec JSON schema and the core Kubernetes
objects against their OpenAPI schemas when the packages that ship those schemas are installed
(check-jsonschema, kubernetes-validate); Prometheus and Alertmanager configurations with promtool/amtool;
the monitor configurations with the monitor's own loader; and the cross-references (mounted files exist,
ports, names, selectors, secret references, config paths) with structural checks.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE_DIR = DEPLOY / "compose"
COMPOSE = COMPOSE_DIR / "compose.yaml"
K8S = DEPLOY / "k8s"


def _load(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _tool(name: str) -> str:
    path = shutil.which(name) or f"/usr/bin/{name}"
    if not Path(path).exists():
        pytest.fail(f"{name} not found: run scripts/bootstrap.sh")
    return path


def _all_yaml() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yml", ".yaml"))


@pytest.mark.parametrize("path", _all_yaml(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_yaml_parses(path):
    docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    assert docs and all(isinstance(d, dict) for d in docs)


# ---- compose -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compose() -> dict:
    return _load(COMPOSE)


def _mounts(service: dict) -> list[tuple[str, str]]:
    """(source, target) of every short-syntax volume entry."""
    out = []
    for v in service.get("volumes") or []:
        parts = v.split(":")
        out.append((parts[0], parts[1]))
    return out


def _host_path(service: dict, container_path: str) -> Path | None:
    """The host file a container path of a bind mount maps to (None if not bind-mounted)."""
    best = None
    for src, dst in _mounts(service):
        if not src.startswith((".", "/")):
            continue
        if container_path == dst or container_path.startswith(dst.rstrip("/") + "/"):
            if best is None or len(dst) > len(best[1]):
                best = (src, dst)
    if best is None:
        return None
    src, dst = best
    return (COMPOSE_DIR / src / container_path[len(dst):].lstrip("/")).resolve()


def test_compose_matches_the_compose_spec_schema(compose):
    import importlib.util
    import json

    import jsonschema

    spec = importlib.util.find_spec("check_jsonschema")  # only its data file is used: no import needed
    if spec is None or not spec.origin:
        pytest.skip("check-jsonschema (which ships the compose-spec JSON schema) is not installed; the "
                    "structural compose checks below still run")
    schema_path = Path(spec.origin).parent / "builtin_schemas" / "vendor" / "compose-spec.json"
    schema = json.loads(schema_path.read_text())
    cls = jsonschema.validators.validator_for(schema)
    errors = sorted(cls(schema).iter_errors(compose), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


def test_compose_services(compose):
    services = compose["services"]
    assert {"kafka", "monitor", "prometheus", "alertmanager", "grafana"} <= set(services)
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    env = kafka["environment"]
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}, "KRaft combined mode"
    assert "zookeeper" not in str(compose).lower()
    for name, svc in services.items():
        for dep in svc.get("depends_on") or []:
            assert dep in services, f"{name} depends on unknown service {dep}"
        for src, _ in _mounts(svc):
            if src.startswith((".", "/")):
                assert (COMPOSE_DIR / src).resolve().exists(), f"{name}: mounted {src} does not exist"
            else:
                assert src in (compose.get("volumes") or {}), f"{name}: named volume {src} is not declared"


def test_compose_monitor_runs_the_deploy_config(compose):
    from rebalance_monitor.config import load_config

    mon = compose["services"]["monitor"]
    build = mon["build"]
    assert (COMPOSE_DIR / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
    cmd = mon["command"]
    assert cmd[:2] == ["run", "--config"]
    config = _host_path(mon, cmd[2])
    assert config == COMPOSE_DIR / "monitor.yaml"
    cfg = load_config(config, env={})
    assert cfg.exporter.host == "0.0.0.0", "the exporter must listen on all interfaces in a container"
    assert f"{cfg.exporter.port}:{cfg.exporter.port}" in mon["ports"]
    assert cfg.kafka.bootstrap_servers.split(":")[0] == "kafka"
    assert _host_path(mon, cfg.state.checkpoint_location) is None, "checkpoint on a named volume, not the repo"
    init = compose["services"]["kafka-init"]["command"][0]
    for topic in cfg.events_topics() + [cfg.sinks.history.kafka_topic, cfg.sinks.dead_letter.kafka_topic]:
        assert f"{topic}:" in init, f"topic {topic} is not created by kafka-init"


def test_compose_prometheus_config(compose, tmp_path):
    from rebalance_monitor.config import load_config

    prom = compose["services"]["prometheus"]
    cfg_arg = next(a for a in prom["command"] if a.startswith("--config.file="))
    host_cfg = _host_path(prom, cfg_arg.split("=", 1)[1])
    cfg = _load(host_cfg)
    # rule files: the container glob maps to conf/rules on the host
    host_rules = [_host_path(prom, r) for r in cfg["rule_files"]]
    assert host_rules == [ROOT / "conf" / "rules" / "*.yml"]
    monitor_port = load_config(COMPOSE_DIR / "monitor.yaml", env={}).exporter.port
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    targets = [t for sc in jobs["rebalance-monitor"]["static_configs"] for t in sc["targets"]]
    assert targets == [f"monitor:{monitor_port}"]
    assert all(sc["labels"]["cluster"] for j in jobs.values() for sc in j["static_configs"])
    am = cfg["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"][0]
    assert am.split(":")[0] in compose["services"]
    # promtool checks the whole configuration, including the real rule files
    cfg["rule_files"] = [str(p) for p in host_rules]
    checked = tmp_path / "prometheus.yml"
    checked.write_text(yaml.safe_dump(cfg))
    r = subprocess.run([_tool("promtool"), "check", "config", str(checked)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "alerts.yml" in r.stdout + r.stderr


def test_compose_alertmanager_config(compose):
    am = compose["services"]["alertmanager"]
    cfg_arg = next(a for a in am["command"] if a.startswith("--config.file="))
    host_cfg = _host_path(am, cfg_arg.split("=", 1)[1])
    r = subprocess.run([_tool("amtool"), "check-config", str(host_cfg)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    alerts = {r["alert"] for g in _load(ROOT / "conf" / "rules" / "alerts.yml")["groups"] for r in g["rules"]}
    cfg = _load(host_cfg)
    for rule in cfg["inhibit_rules"]:
        named = set()
        for m in rule["source_matchers"] + rule["target_matchers"]:
            name = re.fullmatch(r'alertname="(\w+)"', m)
            if name:
                assert name.group(1) in alerts, f"inhibit rule names unknown alert {name.group(1)}"
                named.add(name.group(1))
                continue
            pattern = re.fullmatch(r'alertname=~"(.+)"', m).group(1)
            matched = {a for a in alerts if re.fullmatch(pattern, a)}
            assert matched, f"inhibit rule matcher {m} matches no alert"
            named |= matched
        # an alert of one Kafka cluster never silences another cluster's (a monitor that cannot be scraped, which
        # is down for all its clusters, aside)
        if "RebalanceMonitorDown" not in named:
            assert "kafka_cluster" in rule["equal"], rule
    # several Kafka clusters in one monitor: notifications are grouped by the Kafka cluster first
    assert cfg["route"]["group_by"][0] == "kafka_cluster"


def test_compose_grafana_provisioning(compose):
    graf = compose["services"]["grafana"]
    prov = _host_path(graf, "/etc/grafana/provisioning")
    ds = _load(prov / "datasources" / "prometheus.yml")["datasources"]
    assert [d["type"] for d in ds] == ["prometheus"] and ds[0]["isDefault"]
    prom_port = compose["services"]["prometheus"]["ports"][0].split(":")[-1]
    assert ds[0]["url"] == f"http://prometheus:{prom_port}"
    providers = _load(prov / "dashboards" / "kafka-rebalance.yml")["providers"]
    path = providers[0]["options"]["path"]
    assert _host_path(graf, path) == ROOT / "dashboards" / "generated"
    home = graf["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert _host_path(graf, home).is_file()


# ---- image ---------------------------------------------------------------------------------------------------
def ignore_lines() -> list[str]:
    return (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()


def test_dockerfile():
    from rebalance_monitor.config import load_config

    text = (DEPLOY / "Dockerfile").read_text()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert lines[0].startswith("FROM python:3.11-slim")
    assert "openjdk-17-jre-headless" in text
    pip = next(ln for ln in lines if ln.startswith("RUN pip install"))
    extras = re.search(r"\.\[([\w,-]+)\]", pip).group(1).split(",")
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(extras) <= set(project["optional-dependencies"])
    for ln in lines:
        if ln.startswith("COPY "):
            for src in ln.split()[1:-1]:
                if "[" not in src:
                    assert (ROOT / src).exists(), f"COPY source {src} missing"
    port = load_config(COMPOSE_DIR / "monitor.yaml", env={}).exporter.port
    assert f"EXPOSE {port}" in lines
    assert 'ENTRYPOINT ["tini", "--", "/opt/rebalance-monitor/entrypoint.sh"]' in lines
    assert "COPY deploy/entrypoint.sh ./entrypoint.sh" in lines and "!deploy/entrypoint.sh" in ignore_lines()
    ignore = ignore_lines()
    assert "**" in ignore and {"!pyproject.toml", "!requirements.lock", "!streaming/"} <= set(ignore)
    assert "-c requirements.lock" in pip  # the image gets the versions the tests ran with


def test_pyspark_its_connector_and_the_lock_name_one_version():
    """pyproject pins PySpark exactly; the lock, and the Maven pom of Spark's Kafka connector, agree with it."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = [d.split("==", 1)[1] for d in deps if d.replace(" ", "").startswith("pyspark==")]
    assert len(pinned) == 1, f"pyspark must be pinned exactly in pyproject.toml: {deps}"
    lock = dict(ln.split("==", 1) for ln in (ROOT / "requirements.lock").read_text().splitlines()
                if "==" in ln and not ln.startswith("#"))
    assert lock["pyspark"] == pinned[0]
    pom = (ROOT / "scripts" / "maven" / "spark-kafka" / "pom.xml").read_text()
    assert re.search(r"<spark.version>(.*?)</spark.version>", pom).group(1) == pinned[0]
    for dep in deps:  # every direct dependency is in the lock
        name = re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0].lower().replace("_", "-")
        assert name in {k.lower().replace("_", "-") for k in lock}, f"{name} missing from requirements.lock (scripts/lock_python.sh)"


def test_probe_paths_exist_on_the_exporter():
    from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter

    with MetricsExporter(ExporterSettings(port=0)) as ex:
        with urllib.request.urlopen(ex.url + "/healthz", timeout=5) as r:
            assert r.status == 200
        try:
            with urllib.request.urlopen(ex.url + "/ready", timeout=5) as r:
                status = r.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status in (200, 503)


# ---- kubernetes ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def k8s() -> dict[tuple[str, str], dict]:
    kust = _load(K8S / "kustomization.yaml")
    objs = {}
    for res in kust["resources"]:
        path = K8S / res
        assert path.is_file(), f"kustomization resource {res} missing"
        for doc in yaml.safe_load_all(path.read_text()):
            objs[(doc["kind"], doc["metadata"]["name"])] = doc
    return objs


def _container(k8s) -> dict:
    dep = k8s[("Deployment", "rebalance-monitor")]
    return dep["spec"]["template"]["spec"]["containers"][0]


def _k8s_config():
    from rebalance_monitor.config import load_config

    return load_config(K8S / "monitor.yaml", env={"RM__KAFKA__SECURITY__SASL_USERNAME": "monitor"},
                       overrides={"kafka.security.sasl_password_file": str(K8S / "kustomization.yaml")})


def test_k8s_core_objects_match_their_schemas(k8s):
    try:
        import kubernetes_validate
    except ImportError:
        pytest.skip("kubernetes-validate (which ships the Kubernetes OpenAPI schemas) is not installed; the "
                    "structural Kubernetes checks below still run")
    examples = list(yaml.safe_load_all((K8S / "examples" / "kafka-credentials.secret.yaml").read_text()))
    core = [d for d in list(k8s.values()) + examples if d["apiVersion"] in ("v1", "apps/v1")]
    assert {d["kind"] for d in core} >= {"Deployment", "Service", "ConfigMap", "PersistentVolumeClaim", "Secret"}
    for doc in core:
        kubernetes_validate.validate(doc, "1.30", strict=True)


def test_k8s_deployment_runs_the_monitor_with_its_config(k8s):
    kust = _load(K8S / "kustomization.yaml")
    gen = kust["configMapGenerator"][0]
    assert all((K8S / f).is_file() for f in gen["files"])
    c = _container(k8s)
    argv = c["command"] + c["args"]
    i = argv.index("rebalance-monitor")
    assert argv[i + 1:i + 3] == ["run", "--config"]
    config_path = argv[i + 3]
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in k8s[("Deployment", "rebalance-monitor")]["spec"]["template"]["spec"]["volumes"]}
    cfg_volume = volumes[mounts[str(Path(config_path).parent)]]
    assert cfg_volume["configMap"]["name"] == gen["name"]
    assert Path(config_path).name in gen["files"]

    cfg = _k8s_config()
    assert cfg.spark.master.startswith("local[")
    assert cfg.exporter.host == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports["metrics"] == cfg.exporter.port
    # every file or directory the config names is on a mounted volume
    raw = _load(K8S / "monitor.yaml")
    paths = [raw["kafka"]["security"]["sasl_password_file"], cfg.kafka.security.ssl_cafile,
             cfg.state.checkpoint_location, cfg.sinks.history.parquet_path,
             cfg.sinks.dead_letter.path, cfg.spark.local_dir]
    for p in paths:
        assert any(p == m or p.startswith(m.rstrip("/") + "/") for m in mounts), f"{p} is on no volume"
    assert raw["kafka"]["security"]["sasl_password_file"].startswith(
        next(m for m, n in mounts.items() if n == "kafka-credentials"))
    assert k8s[("Deployment", "rebalance-monitor")]["spec"]["strategy"]["type"] == "Recreate"


def test_k8s_secret_references_are_documented(k8s):
    pod = k8s[("Deployment", "rebalance-monitor")]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    refs = {(e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
            for e in c.get("env") or [] if "secretKeyRef" in e.get("valueFrom", {})}
    secret_volumes = {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    examples = {d["metadata"]["name"]: d for d in
                yaml.safe_load_all((K8S / "examples" / "kafka-credentials.secret.yaml").read_text())}
    for name, key in refs:
        assert key in examples[name]["stringData"], (name, key)
    assert secret_volumes <= set(examples)
    raw = _load(K8S / "monitor.yaml")
    assert Path(raw["kafka"]["security"]["sasl_password_file"]).name in examples["kafka-credentials"]["stringData"]
    assert Path(raw["kafka"]["security"]["ssl_cafile"]).name in examples["kafka-ca"]["stringData"]
    assert "sasl_password" not in raw["kafka"]["security"], "no secret in the ConfigMap"


def test_k8s_service_and_servicemonitor_select_the_monitor(k8s):
    pod_labels = k8s[("Deployment", "rebalance-monitor")]["spec"]["template"]["metadata"]["labels"]
    svc = k8s[("Service", "rebalance-monitor")]
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    c = _container(k8s)
    port_names = {p["name"] for p in c["ports"]}
    assert {p["targetPort"] for p in svc["spec"]["ports"]} <= port_names
    sm = k8s[("ServiceMonitor", "rebalance-monitor")]
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    ep = sm["spec"]["endpoints"][0]
    assert ep["port"] in {p["name"] for p in svc["spec"]["ports"]}
    assert any(r.get("targetLabel") == "cluster" and r.get("replacement") for r in ep["relabelings"])
    # The alerts expect the scrape job to be called rebalance-monitor: the ServiceMonitor's default job label
    # is the Service name.
    assert svc["metadata"]["name"] == "rebalance-monitor" and "jobLabel" not in sm["spec"]
    probes = [c[k]["httpGet"] for k in ("livenessProbe", "readinessProbe", "startupProbe")]
    assert {p["path"] for p in probes} == {"/healthz", "/ready"} and {p["port"] for p in probes} == {"metrics"}


def test_k8s_prometheusrule_is_the_rule_files(k8s, tmp_path):
    rule = k8s[("PrometheusRule", "rebalance-monitor")]
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    expected = []
    for path in sorted((ROOT / "conf" / "rules").glob("*.yml")):
        expected += _load(path)["groups"]
    assert rule["spec"]["groups"] == expected
    f = tmp_path / "rules.yml"
    f.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    r = subprocess.run([_tool("promtool"), "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_k8s_dashboards_configmap_is_labelled_for_the_sidecar(k8s):
    import json

    cm = k8s[("ConfigMap", "rebalance-monitor-dashboards")]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    for key, text in cm["data"].items():
        assert key.endswith(".json") and json.loads(text)["uid"]
    total = sum(len(t.encode()) for t in cm["data"].values())
    assert total < 900 * 1024, "a ConfigMap holds at most 1 MiB"
