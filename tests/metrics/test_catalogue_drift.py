"""The exporter and the catalogue cannot drift apart.

* Every family the exporter writes is a catalogue family, announced once with the catalogue's HELP and TYPE,
  and every sample carries exactly the spec's labels, in the spec's order (at each lag.granularity: the labels the
  spec keeps there), over the exposition of a run with records of every kind (golden_exposition.py).
* No module of the package outside the catalogue (and the docs generator) spells a metric name in a string, and
  no module of the exporter writes a label name into a line: both come from the specs.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

import rebalance_monitor
from rebalance_monitor.metrics.catalogue import CATALOGUE, LAG_GRANULARITIES, by_name

from helpers.golden_exposition import scenario

PACKAGE = Path(rebalance_monitor.__file__).parent
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")


def _family(sample_name: str):
    """(spec, suffix) of a sample name; KeyError when no catalogue family has it."""
    try:
        return by_name(sample_name), ""
    except KeyError:
        for suffix in HISTOGRAM_SUFFIXES:
            base = sample_name.removesuffix(suffix)
            if base != sample_name and by_name(base).type == "histogram":
                return by_name(base), suffix
        raise


def _label_names(text: str) -> tuple[str, ...]:
    names, pos = [], 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        assert m, f"unparsable labels {text!r}"
        names.append(m.group(1))
        pos = m.end()
    return tuple(names)


def check_exposition(text: str, granularity: str) -> set[str]:
    """Assert the exposition is the catalogue's; returns the families it has samples of."""
    list(text_string_to_metric_families(text))          # Prometheus' own parser accepts it
    announced: list[str] = []
    with_samples: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, help_ = line[7:].split(" ", 1)
            spec = by_name(name)
            assert help_ == spec.help.replace("\\", "\\\\").replace("\n", "\\n"), name
            announced.append(name)
        elif line.startswith("# TYPE "):
            name, type_ = line[7:].split(" ")
            assert name == announced[-1] and type_ == by_name(name).prom_type, line
        else:
            m = SAMPLE.match(line)
            assert m, f"not a sample line: {line!r}"
            spec, suffix = _family(m.group(1))
            assert spec.name == announced[-1], f"{line!r} is not under its family's header"
            want = spec.labels_at(granularity) + (("le",) if suffix == "_bucket" else ())
            assert _label_names(m.group(2) or "") == want, f"{line!r}: labels are not {want}"
            with_samples.add(spec.name)
    assert announced == [s.name for s in CATALOGUE], "every family once, in catalogue order"
    return with_samples


@pytest.mark.parametrize("granularity", LAG_GRANULARITIES)
def test_every_family_and_label_the_exporter_writes_is_the_catalogues(granularity):
    seen: set[str] = set()
    for what, text in scenario(granularity):
        if what != "state":
            seen |= check_exposition(text, granularity)
    expected = {s.name for s in CATALOGUE if s.exported_at(granularity)}
    assert seen == expected, "the run has samples of every family exported at this granularity"


def test_the_check_sees_a_family_or_label_the_catalogue_does_not_have():
    text = scenario("partition")[3][1]
    check_exposition(text, "partition")
    with pytest.raises(KeyError):
        check_exposition(text.replace("kafka_consumergroup_members{", "kafka_consumergroup_member_count{"),
                         "partition")
    with pytest.raises(AssertionError):
        check_exposition(text.replace(',cause="', ',reason="'), "partition")
    with pytest.raises(AssertionError):
        check_exposition(text, "topic")       # per-partition labels where the topic level sums them away


# ---- no name or label spelled outside the catalogue ---------------------------------------------------------
NAME_IN_TEXT = re.compile(r"\b(?:kafka_consumergroup|kafka_topic_partition|rebalance_monitor)_[a-z0-9_]+")
NAMES_ALLOWED_IN = {"metrics/catalogue.py", "metrics/docs.py"}      # the definitions, and the page made of them
LABEL_IN_TEXT = re.compile(r'\b[a-z_]+="')
LABELS_ALLOWED = {("metrics/exposition.py", 'le="'),                # the histogram's bucket bound: the format's
                  ("metrics/exporter.py", 'realm="')}               # an HTTP header, not a sample


def _strings(tree: ast.AST):
    """(line, text) of every string constant that is not a docstring (f-strings' literal parts included)."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def offences(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for line, text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if rel not in NAMES_ALLOWED_IN:
                found += [f"{rel}:{line}: metric name {m!r}" for m in NAME_IN_TEXT.findall(text)]
            if rel.startswith("metrics/") and rel not in NAMES_ALLOWED_IN:
                found += [f"{rel}:{line}: label {m!r}" for m in LABEL_IN_TEXT.findall(text)
                          if (rel, m) not in LABELS_ALLOWED]
    return found


def test_no_metric_name_or_label_is_typed_outside_the_catalogue():
    assert offences(PACKAGE) == []


def test_the_scan_finds_a_typed_name_and_label(tmp_path):
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "render.py").write_text(
        '"""Docstrings may name kafka_consumergroup_lag."""\n'
        'def f(g):\n'
        '    return f"kafka_consumergroup_lag{{{g},topic=\\"t\\"}} 1"\n')
    (tmp_path / "other.py").write_text('X = "rebalance_monitor_up"\n')
    assert offences(tmp_path) == ["metrics/render.py:3: metric name 'kafka_consumergroup_lag'",
                                  "metrics/render.py:3: label 'topic=\"'",
                                  "other.py:1: metric name 'rebalance_monitor_up'"]
