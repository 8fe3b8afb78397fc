import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_monitor.metrics import docs
from rebalance_monitor.metrics.catalogue import CATALOGUE
from rebalance_monitor.testing.prometheus import BOOTSTRAP_HINT, PrometheusServer, PrometheusUnavailable

from helpers.exposition import parse

ROOT = Path(__file__).resolve().parents[2]


def test_docs_page_is_generated_and_current():
    md = docs.render_markdown()
    for m in CATALOGUE:
        assert f"### {m.name}\n" in md
    out = subprocess.run([sys.executable, "-m", "rebalance_monitor.metrics.docs"], capture_output=True, text=True,
                         check=True).stdout
    assert out == md
    assert (ROOT / "docs" / "metrics.md").read_text() == md, \
        "docs/metrics.md is stale: python -m rebalance_monitor.metrics.docs > docs/metrics.md"


def test_docs_sample_exposition_parses_and_covers_the_catalogue():
    s = parse(docs.sample_exposition())
    names = {k[0] for k in s}
    for m in CATALOGUE:
        if m.type == "histogram":
            assert m.name + "_count" in names, m.name
        else:
            assert m.name in names, m.name


def test_recording_rules_pass_promtool_unit_tests():
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    if not os.path.exists(promtool):
        pytest.skip("promtool not installed: run scripts/bootstrap.sh (installs Debian's prometheus)")
    d = ROOT / "tests" / "metrics" / "promtool"
    r = subprocess.run([promtool, "check", "rules", str(ROOT / "conf" / "rules" / "lag-recording.yml")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([promtool, "test", "rules", "lag-recording-test.yml"], cwd=d, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_prometheus_helper_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PROMETHEUS_BIN", str(tmp_path / "missing-prometheus"))
    with pytest.raises(PrometheusUnavailable, match="run scripts/bootstrap.sh"):
        PrometheusServer(targets=["127.0.0.1:1"]).start()
    assert "installs Debian's prometheus" in BOOTSTRAP_HINT
