"""The docs speak of the project only: a measured figure in README.md, docs/ or the benchmarks carries the date and
the commit it was measured at, or names what changed, never a label of the work's own history that a reader
cannot look up ("session 19", "sessions 20 and 21", "fresh run 16", "this session", "earlier sessions").
"session" is also Kafka's and Spark's word (a member's session, session timeout, session.timeout.ms, SparkSession,
the Spark session): those stay."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# a work-history label; a number after "session" that goes on as a decimal or a unit is a measure, not a label
# ("30 s sessions 4.6-5.7 s", "session 45 s")
HISTORY = re.compile(r"""
    \bsessions?[-\ ]\d+\b(?![.,]\d)(?!\s*(?:s|ms|min|minutes?|seconds?)\b)
  | \bfresh(?:-clone)?[-\ ]runs?\b
  | \b(?:this|that|earlier|later|previous|same|other|another)\ sessions?\b
      (?!\s*(?:timeouts?|timers?|deadlines?|expir\w*|settings?|\.timeout))
""", re.IGNORECASE | re.VERBOSE)


def checked_files(root: Path = ROOT) -> list[Path]:
    return ([root / "README.md"] + sorted((root / "docs").rglob("*.md"))
            + sorted((root / "bench").rglob("*.py")))


def history_labels(text: str) -> list[str]:
    return [m.group(0) for m in HISTORY.finditer(" ".join(text.split()))]  # a label may break across lines


def labels_in(paths, root: Path = ROOT) -> dict[str, list[str]]:
    found = {}
    for path in paths:
        labels = history_labels(path.read_text(encoding="utf-8"))
        if labels:
            found[str(path.relative_to(root))] = labels
    return found


def test_readme_docs_and_bench_name_no_history_label():
    paths = checked_files()
    assert (ROOT / "README.md").is_file()
    assert sum(1 for p in paths if p.suffix == ".md") > 10 and sum(1 for p in paths if p.suffix == ".py") > 10
    assert labels_in(paths) == {}


def test_the_rule_finds_history_labels():
    for text in ("session 19's figures", "Session 12, side by side", "(sessions 20 and 21, a quiet machine)",
                 "the default since session 17", "the session-12 ratio", "fresh run 16 saw a SIGTERM",
                 "the fresh-clone run's retry", "Earlier sessions: 6.6-10.2 s", "this session's change",
                 "The same session took", "the tree at session\n15's end"):
        assert history_labels(text), text


def test_the_rule_leaves_kafka_and_spark_sessions_alone():
    for text in ("a silent member's session timeout after its deadline", "10 s sessions, 9 samples",
                 "session.timeout.ms", "group.consumer.session.timeout.ms", "the SparkSession of the job",
                 "the session settings that make Spark write its event log", "the Spark session",
                 "a third of the session if shorter", "restarted within its session", "the session timer",
                 "the session deadline", "sessions of a consumer", "a 6 s session", "session 45 s",
                 "30 s sessions 4.6-5.7 s",
                 "timeout=\"session\"", "build_session(master=\"local[2]\")", "start_new_session=True",
                 "Kafka's session timeout", "one Spark session that ran both readers",
                 "that session timeout", "work on a fresh clone"):
        assert not history_labels(text), text
