"""No module of the package imports, at import time, a module that imports it back (directly or around a loop).

The graph is built with `ast` from the source, without importing anything: an edge for each import a module runs
when it is imported (statements at module level, in a class body, or under a module-level `if`/`try`; not in a
function, and not under `if TYPE_CHECKING:`). Importing `a.b.c` runs the `__init__` of `a.b` too, so the edge goes
to each package on the way that is not one of the importer's own packages.

A second graph counts every import wherever it runs (in a function, under `if TYPE_CHECKING:`): an import moved
into a function hides a loop from the interpreter, not from a reader. The package has no loop in either graph,
and no module is excused.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "streaming"
PACKAGE = "rebalance_monitor"


def module_names(root: Path, package: str) -> dict[str, Path]:
    """{dotted module name: file} of every module of `package` under `root` (a package is its __init__)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _runs_at_import(tree: ast.Module):
    """The import statements executed when the module is imported."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
                    (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
                todo.extend(node.orelse)
                continue
            todo.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            todo.extend(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])
        elif isinstance(node, (ast.ClassDef, ast.With)):
            todo.extend(node.body)


def _imports(tree: ast.Module, anywhere: bool):
    """The module's import statements: those run at import time, or (anywhere) all of them."""
    if not anywhere:
        return _runs_at_import(tree)
    return (node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def import_graph(root: Path, package: str, anywhere: bool = False) -> dict[str, set[str]]:
    """{module: the package's modules it imports at import time (anywhere: wherever the import runs)}."""
    modules = module_names(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]  # the package relative imports start from
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(), str(path)), anywhere):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = here
            for _ in range(node.level - 1 if node.level else 0):
                base = base.rpartition(".")[0]
            base = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
        own = {name.rsplit(".", i)[0] for i in range(name.count(".") + 1)}
        edges = set()
        for target in targets:
            parts = target.split(".")
            for i in range(1, len(parts) + 1):  # the target and the packages on its way
                step = ".".join(parts[:i])
                if step in modules and step not in own:
                    edges.add(step)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One loop of modules for each strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph.get(v, ()):
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_imports_in_no_cycle():
    graph = import_graph(ROOT, PACKAGE)
    assert len(graph) > 100 and graph["rebalance_monitor.spark.session"] >= {"rebalance_monitor.spark.sources"}
    assert cycles(graph) == []


def test_no_cycle_hides_in_a_function_or_under_type_checking():
    """The instrumentation's kafka-python modules and the workload's members once looped only through imports in
    functions or under TYPE_CHECKING; nothing does now."""
    graph = import_graph(ROOT, PACKAGE, anywhere=True)
    assert graph["rebalance_monitor.workload.member_runners"] >= {"rebalance_monitor.workload.other_clients"}
    assert cycles(graph) == []


def test_a_cycle_is_found(tmp_path):
    """The check itself: a loop through a function-free import, a package's __init__ and a relative import is
    found; an import inside a function or under TYPE_CHECKING is not an edge."""
    pkg = tmp_path / "p"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub.b import thing\n")
    (pkg / "sub" / "__init__.py").write_text("from ..c import other\n")
    (pkg / "sub" / "b.py").write_text("thing = 1\n")
    (pkg / "c.py").write_text("import p.a\nother = 2\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import e\n"
                              "def f():\n    from . import e\n")
    (pkg / "e.py").write_text("from . import d\n")
    graph = import_graph(tmp_path, "p")
    assert graph["p.a"] == {"p.sub", "p.sub.b"} and graph["p.d"] == set() and graph["p.e"] == {"p.d"}
    assert cycles(graph) == [["p.a", "p.c", "p.sub"]]
    anywhere = import_graph(tmp_path, "p", anywhere=True)
    assert anywhere["p.d"] == {"p.e"} and cycles(anywhere) == [["p.a", "p.c", "p.sub"], ["p.d", "p.e"]]


def _imports_anywhere(path: Path, package: str) -> set[str]:
    """The package's modules a file imports, wherever the import runs (in a function too)."""
    here = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(package))
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(node.level - 1 if node.level else 0):
                base = base.rpartition(".")[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            if target and target.startswith(package):
                found.add(target)
    return found


def test_the_file_service_sits_below_the_rooms_that_keep_files():
    """files/ (the job's own durable files) is used by spark/ and metrics/ and imports neither; metrics/ reaches
    nothing of spark/ (its snapshot's files came from there once: an arrow running up)."""
    modules = module_names(ROOT, PACKAGE)
    rooms = {"files": ("spark", "metrics"), "metrics": ("spark",)}
    for room, below in rooms.items():
        for name, path in modules.items():
            if name == f"{PACKAGE}.{room}" or name.startswith(f"{PACKAGE}.{room}."):
                wrong = {t for t in _imports_anywhere(path, PACKAGE)
                         if any(t == f"{PACKAGE}.{b}" or t.startswith(f"{PACKAGE}.{b}.") for b in below)}
                assert not wrong, f"{name} imports {sorted(wrong)}"
    users = {name for name, path in modules.items() if f"{PACKAGE}.files" in _imports_anywhere(path, PACKAGE)}
    assert {f"{PACKAGE}.metrics.state_file", f"{PACKAGE}.spark.sinks", f"{PACKAGE}.spark.job"} <= users


def _room_imports(modules: dict[str, Path], room: str) -> dict[str, set[str]]:
    """{module of `room` (a package, dotted): the package's modules it imports, wherever the import runs}."""
    return {name: _imports_anywhere(path, PACKAGE) for name, path in modules.items()
            if name == room or name.startswith(room + ".")}


def _inside(target: str, room: str) -> bool:
    return target == room or target.startswith(room + ".")


def test_the_decode_room_sits_below_spark():
    """decoding/ (the decode stage among it) is called by the job's plan and by its Python source, and imports
    nothing of spark/."""
    modules = module_names(ROOT, PACKAGE)
    spark = f"{PACKAGE}.spark"
    for name, targets in _room_imports(modules, f"{PACKAGE}.decoding").items():
        wrong = {t for t in targets if _inside(t, spark)}
        assert not wrong, f"{name} imports {sorted(wrong)}"
    users = {name for name, path in modules.items() if f"{PACKAGE}.decoding.record_decoder" in
             _imports_anywhere(path, PACKAGE) or f"{PACKAGE}.decoding.row_batches" in _imports_anywhere(path, PACKAGE)}
    assert {f"{PACKAGE}.spark.query_plan", f"{PACKAGE}.spark.kafka_source.datasource"} <= users


def test_a_sub_room_of_spark_imports_no_module_of_spark_above_it():
    """spark/kafka_source/ (the Python source, run in Spark's workers too) reaches what it needs downward (the decode
    room, the Kafka connection), never a module of spark/ outside itself: the decode stage's decoder was once
    imported from there, an arrow running up."""
    modules = module_names(ROOT, PACKAGE)
    spark = f"{PACKAGE}.spark"
    sub_rooms = {name for name, path in modules.items() if path.name == "__init__.py" and name.startswith(spark + ".")}
    assert f"{spark}.kafka_source" in sub_rooms
    for room in sub_rooms:
        for name, targets in _room_imports(modules, room).items():
            wrong = {t for t in targets if _inside(t, spark) and not _inside(t, room)}
            assert not wrong, f"{name} imports {sorted(wrong)}"
