"""The core imports nothing but the standard library and itself: no Spark, Kafka, Prometheus or orjson. The
adapters give it what it needs (a faster JSON parser: `core.events.use_fast_json`)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import rebalance_monitor.core

CORE = Path(rebalance_monitor.core.__file__).parent
PACKAGE = "rebalance_monitor.core"
ALLOWED_TOP = set(sys.stdlib_module_names) | {"__future__"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(CORE).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def _allowed(name: str) -> bool:
    return name.split(".")[0] in ALLOWED_TOP or name == PACKAGE or name.startswith(PACKAGE + ".")


def foreign_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """The imports of `source` (the text of module `module`) outside the standard library and the core: every
    `import`, `from ... import` (relative ones resolved) and `__import__` / `importlib.import_module` of a
    literal name, wherever it stands (in a function, under `try`, under TYPE_CHECKING)."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                names = [".".join(base + ([node.module] if node.module else []))]
            else:
                names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and (
                (isinstance(node.func, ast.Name) and node.func.id == "__import__")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")):
            names = [str(node.args[0].value)]
        found += [f"{module}:{node.lineno}: {name}" for name in names if not _allowed(name)]
    return found


@pytest.mark.parametrize("source, module, is_package, bad", [
    ("import orjson", "rebalance_monitor.core.events", False, ["orjson"]),
    ("try:\n    from orjson import loads\nexcept ImportError:\n    pass", "rebalance_monitor.core.events", False,
     ["orjson"]),
    ("def f():\n    import pyspark.sql", "rebalance_monitor.core.runner", False, ["pyspark.sql"]),
    ("from ..config import load", "rebalance_monitor.core.runner", False, ["rebalance_monitor.config"]),
    ("from ... import spark", "rebalance_monitor.core.group.monitor", False, ["rebalance_monitor"]),
    ("from ...metrics import catalogue", "rebalance_monitor.core.group", True, ["rebalance_monitor.metrics"]),
    ("x = __import__('prometheus_client')", "rebalance_monitor.core.storm", False, ["prometheus_client"]),
    ("import importlib\nm = importlib.import_module('kafka')", "rebalance_monitor.core.storm", False, ["kafka"]),
    ("import json, zlib\nfrom collections import deque\nfrom . import causes as C\nfrom .. import causes\n"
     "from ..members import Member\nfrom .assignors import assign", "rebalance_monitor.core.group.timers", False, []),
    ("from .sticky import sticky_assign\nfrom . import _java", "rebalance_monitor.core.assignors", True, []),
])
def test_the_check_sees_every_form_of_import(source, module, is_package, bad):
    assert [f.split(": ", 1)[1] for f in foreign_imports(source, module, is_package)] == bad


def test_every_core_module_imports_only_the_standard_library_and_the_core():
    modules = sorted(CORE.rglob("*.py"))
    assert len(modules) > 20 and CORE / "group" / "monitor.py" in modules
    found = []
    for path in modules:
        found += foreign_imports(path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py")
    assert not found, "\n".join(found)


def test_importing_the_whole_core_loads_no_other_package():
    """The same, as Python sees it: a fresh interpreter without site-packages (`-S`: nothing installed can be
    imported) imports every core module, and no module outside the standard library and the core is loaded (an
    import hidden from the text check would show here)."""
    names = [_module_name(p) for p in sorted(CORE.rglob("*.py"))]
    code = (
        "import importlib, sys\n"
        f"sys.path.insert(0, {str(CORE.parent.parent)!r})\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "top = {m.split('.')[0] for m in sys.modules}\n"
        "print(sorted(t for t in top - set(sys.stdlib_module_names) - {'rebalance_monitor'}"
        " if not t.startswith('_')))\n"
        "print(sorted(m for m in sys.modules if m.startswith('rebalance_monitor.')"
        " and not m.startswith('rebalance_monitor.core')))\n"
    )
    run = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["[]", "[]"], run.stdout
