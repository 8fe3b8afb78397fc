"""Small PromQL helpers for the checks of dashboards and rules (no PromQL parser exists in Python here).

Syntax is checked by promtool (:func:`check_syntax` loads the expressions as recording rules); the metric
names an expression reads are found by :func:`metric_names`, a lexer-level scan that is exact for the
expressions we write (no ``{__name__=...}`` selectors, which it rejects).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

import yaml

BOOTSTRAP_HINT = "promtool is missing: run scripts/bootstrap.sh (installs Debian's prometheus package)"

# Keywords and operators that look like identifiers.
_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset", "bool",
    "atan2", "inf", "nan", "start", "end",
}
# Aggregation operators: may be followed by a grouping clause instead of "(".
_AGGREGATIONS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
    "quantile", "limitk", "limit_ratio",
}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENT = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)")

# Grafana's built-in variables and our dashboard variables, replaced by representative values so that an
# expression written for a panel is plain PromQL.
GRAFANA_SUBSTITUTIONS = {
    "$__rate_interval": "1m",
    "$__interval": "30s",
    "$__range": "1h",
    "${__range}": "1h",
    "$__range_s": "3600",
    "${datasource}": "prometheus",
    "$cluster": "c1",
    "$kafka_cluster": "default",
    "$group": "g1",
    "$instance": "m:9308",
}


def substitute(expr: str, substitutions: dict[str, str] | None = None) -> str:
    """``expr`` with the Grafana variables replaced (longest names first, so ``$__range_s`` wins)."""
    subs = GRAFANA_SUBSTITUTIONS if substitutions is None else substitutions
    for k in sorted(subs, key=len, reverse=True):
        expr = expr.replace(k, subs[k])
    return expr


def _strip(expr: str) -> str:
    s = _STRING.sub('""', expr)
    if "__name__" in s:
        raise ValueError(f"selectors by __name__ are not supported: {expr}")
    # Label matchers, ranges, subqueries and grouping lists carry label names and durations, not metrics.
    s = re.sub(r"\{[^{}]*\}", "{}", s)
    s = re.sub(r"\[[^\[\]]*\]", "[]", s)
    return _GROUPING.sub(r"\1", s)  # one pass: a grouping list holds no parentheses


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects (its vector selectors' names)."""
    s = _strip(expr)
    out: set[str] = set()
    for m in _IDENT.finditer(s):
        name = m.group(1)
        rest = s[m.end():].lstrip()
        if name in _KEYWORDS:
            continue
        if rest.startswith("("):
            continue  # a function call or an aggregation
        if name in _AGGREGATIONS and re.match(r"(by|without)\b", rest):
            continue
        out.add(name)
    return out


def label_values_selector(query: str) -> str | None:
    """The series selector of a Grafana ``label_values(selector, label)`` variable query, else None."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*", query, re.S)
    return m.group(1) if m else None


def promtool() -> str:
    path = shutil.which("promtool") or "/usr/bin/promtool"
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(BOOTSTRAP_HINT)
    return path


def check_syntax(exprs: dict[str, str]) -> str:
    """Parse every expression with promtool (as recording rules). Returns promtool's output; raises
    ValueError with that output when any expression is invalid. ``exprs`` maps a label (for messages) to
    the expression, variables already substituted."""
    rules = [{"record": f"check:expr_{i}", "expr": e, "labels": {"source": k[:200]}}
             for i, (k, e) in enumerate(sorted(exprs.items()))]
    with tempfile.TemporaryDirectory(prefix="promql-check-") as d:
        path = os.path.join(d, "exprs.yml")
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump({"groups": [{"name": "check", "rules": rules}]}, f, sort_keys=False)
        r = subprocess.run([promtool(), "check", "rules", path], capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    if r.returncode != 0:
        raise ValueError(out)
    return out
