"""The size rule of the house (docs/architecture.md): no module of the package, the dashboards generator, the
benchmarks or the scripts, and no Java source, is over 400 lines. A module that grows past it holds more than one concept: split it
by concept (see how inputs/offsets_topic/ or core/group/ are split), do not raise the limit."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 400
CHECKED = ("streaming/rebalance_monitor", "dashboards", "bench", "scripts")


def line_count(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def oversized(roots, limit: int = LIMIT, pattern: str = "*.py") -> dict[str, int]:
    found = {}
    for root in roots:
        for path in sorted(Path(root).rglob(pattern)):
            if "target" in path.parts:  # (Maven's build output)
                continue
            n = line_count(path)
            if n > limit:
                found[str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)] = n
    return found


def test_no_module_is_over_the_limit():
    roots = [ROOT / r for r in CHECKED]
    assert all(r.is_dir() for r in roots)
    assert sum(1 for r in roots for _ in r.rglob("*.py")) > 150  # the walk sees the package
    assert oversized(roots) == {}


def test_no_java_source_is_over_the_limit():
    """The same rule for the Java sources: the plugins, the job's JVM input stage, the test programs, the
    oracles under scripts/."""
    roots = [ROOT / "streaming" / "java", ROOT / "scripts"]
    assert sum(1 for r in roots for p in r.rglob("*.java") if "target" not in p.parts) > 20
    assert oversized(roots, pattern="*.java") == {}


def test_the_rule_finds_a_long_module(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "small.py").write_text("x = 1\n" * LIMIT)
    (tmp_path / "pkg" / "big.py").write_text("x = 1\n" * (LIMIT + 1))
    found = oversized([tmp_path])
    assert list(found.values()) == [LIMIT + 1] and list(found)[0].endswith("big.py")
    (tmp_path / "pkg" / "Big.java").write_text("int x;\n" * (LIMIT + 1))
    assert list(oversized([tmp_path], pattern="*.java")) == [str(tmp_path / "pkg" / "Big.java")]
