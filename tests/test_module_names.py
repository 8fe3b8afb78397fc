"""The naming rule of the house (docs/architecture.md): no two modules of the package share a file name. Two
`clients.py` or two `_common.py` doing different jobs send a reader to the wrong one; a name says what the module
is, so it is unique. (`__init__.py` and `__main__.py` are Python's own names.)"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "streaming" / "rebalance_monitor"
PYTHONS_OWN = {"__init__.py", "__main__.py"}


def shared_names(root: Path) -> dict[str, list[str]]:
    where = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if path.name not in PYTHONS_OWN and "__pycache__" not in path.parts:
            where[path.name].append(str(path.relative_to(root)))
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_no_two_modules_share_a_file_name():
    assert sum(1 for _ in PACKAGE.rglob("*.py")) > 150  # the walk sees the package
    assert shared_names(PACKAGE) == {}


def test_the_rule_finds_a_shared_name(tmp_path):
    for room in ("a", "b"):
        (tmp_path / room).mkdir()
        (tmp_path / room / "__init__.py").write_text("")
        (tmp_path / room / "clients.py").write_text("x = 1\n")
    (tmp_path / "a" / "unique.py").write_text("")
    assert shared_names(tmp_path) == {"clients.py": ["a/clients.py", "b/clients.py"]}
