"""deploy/k8s/spark-operator: the SparkApplication, its RBAC, shared checkpoint volume, PodMonitor and config agree
with each other, with the image (deploy/Dockerfile, deploy/entrypoint.sh) and with the pinned PySpark."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
OP = ROOT / "deploy" / "k8s" / "spark-operator"


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict]:
    kust = yaml.safe_load((OP / "kustomization.yaml").read_text())
    out = {}
    for res in kust["resources"]:
        for doc in yaml.safe_load_all((OP / res).read_text()):
            out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def _config():
    from rebalance_monitor.config import load_config

    return load_config(OP / "monitor.yaml", env={"RM__KAFKA__SECURITY__SASL_USERNAME": "monitor"},
                       overrides={"kafka.security.sasl_password_file": str(OP / "kustomization.yaml")})


def test_core_objects_match_their_schemas(objects):
    import kubernetes_validate

    core = [d for d in objects.values() if d["apiVersion"] in ("v1", "rbac.authorization.k8s.io/v1")]
    assert {d["kind"] for d in core} == {"ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim"}
    for doc in core:
        kubernetes_validate.validate(doc, "1.30", strict=True)
    assert objects[("PersistentVolumeClaim", "rebalance-monitor-checkpoint")]["spec"]["accessModes"] == \
        ["ReadWriteMany"]  # the driver and every executor mount the checkpoint


def test_the_application_runs_the_image_entry_file_with_its_config(objects):
    app = objects[("SparkApplication", "rebalance-monitor")]["spec"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pyspark = next(d.split("==")[1] for d in project["dependencies"] if d.startswith("pyspark=="))
    assert app["sparkVersion"] == pyspark
    assert app["type"] == "Python" and app["mode"] == "cluster"
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    workdir = re.search(r"^WORKDIR (/opt/\S+)$", dockerfile, re.M).group(1)
    assert "COPY deploy/spark_main.py ./spark_main.py" in dockerfile
    assert app["mainApplicationFile"] == f"local://{workdir}/spark_main.py"
    assert re.search(r'^ENTRYPOINT \["tini", "--", "/opt/rebalance-monitor/entrypoint.sh"\]', dockerfile, re.M)
    kust = yaml.safe_load((OP / "kustomization.yaml").read_text())
    assert app["image"] == kust["images"][0]["name"] == "kafka-rebalance-monitor"
    assert kust["images"][0]["newTag"].endswith("-spark-kafka")  # built WITH_SPARK_KAFKA=1 (see kustomization)
    # the config file the driver is told to read is the generated ConfigMap's, mounted where the args say
    args = app["arguments"]
    config_path = Path(args[args.index("--config") + 1])
    volumes = {v["name"]: v for v in app["volumes"]}
    mounts = {m["name"]: m for m in app["driver"]["volumeMounts"]}
    assert mounts["config"]["mountPath"] == str(config_path.parent)
    assert volumes["config"]["configMap"]["name"] == kust["configMapGenerator"][0]["name"]
    assert config_path.name in kust["configMapGenerator"][0]["files"]
    for name in mounts:
        assert name in volumes
    assert app["driver"]["serviceAccount"] in {n for k, n in objects if k == "ServiceAccount"}


def test_config_suits_a_cluster(objects):
    app = objects[("SparkApplication", "rebalance-monitor")]["spec"]
    cfg = _config()
    assert cfg.spark.master is None  # the operator's master is kept
    assert cfg.kafka.connector == "spark"
    # the checkpoint and the files beside it are on the shared volume, at one path in every pod
    for role in ("driver", "executor"):
        mounts = [m["mountPath"] for m in app[role]["volumeMounts"] if m["name"] == "checkpoint"]
        assert mounts and cfg.state.checkpoint_location.startswith(mounts[0] + "/"), role
    # the CA file exists on the executors too: Spark's connector reads there
    for role in ("driver", "executor"):
        ca = [m["mountPath"] for m in app[role]["volumeMounts"] if m["name"] == "kafka-ca"]
        assert ca and cfg.kafka.security.ssl_cafile.startswith(ca[0] + "/"), role
    # the PodMonitor scrapes the driver's exporter port
    ports = {p["name"]: p["containerPort"] for p in app["driver"]["ports"]}
    assert ports["metrics"] == cfg.exporter.port and cfg.exporter.host == "0.0.0.0"
    pm = objects[("PodMonitor", "rebalance-monitor")]["spec"]
    assert pm["podMetricsEndpoints"][0]["port"] == "metrics"
    assert pm["selector"]["matchLabels"].items() <= app["driver"]["labels"].items()
    assert not pm["selector"]["matchLabels"].items() <= app["executor"]["labels"].items()
    role = objects[("Role", "rebalance-monitor-spark-driver")]
    assert {"pods", "services"} <= set(role["rules"][0]["resources"]) and "create" in role["rules"][0]["verbs"]


def test_entrypoint_dispatches_to_the_monitor_or_to_spark_pods(tmp_path):
    script = ROOT / "deploy" / "entrypoint.sh"
    venv_bin = os.path.dirname(os.path.realpath(sys.executable))
    env = {"PATH": f"{Path(sys.executable).parent}:{venv_bin}:/usr/bin:/bin", "HOME": str(tmp_path)}
    # anything but driver/executor is the monitor's own command line
    out = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0 and "usage: rebalance-monitor" in out.stdout
    # an executor pod without the scheduler's variables says which one is missing, instead of starting a JVM
    out = subprocess.run(["bash", str(script), "executor"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 2 and "SPARK_DRIVER_URL is not set" in out.stderr
    # the driver runs PySpark's spark-submit in client mode (it prints its usage for --help)
    out = subprocess.run(["bash", str(script), "driver", "--help"], capture_output=True, text=True,
                         env={**env, "JAVA_HOME": os.environ.get("JAVA_HOME", "")} if os.environ.get("JAVA_HOME")
                         else env, timeout=120)
    assert "Usage: spark-submit" in out.stdout + out.stderr
