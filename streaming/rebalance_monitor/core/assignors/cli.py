"""``python -m rebalance_monitor.core.assignors.cli < CASE.json``: contract section 3 ``assign``.

Prints ``{member_id: [[topic, partition], ...]}`` (sorted lists, sorted keys); exit code 2 with a
one-line message on stderr when the input is not valid JSON or not a valid case."""
from __future__ import annotations

import json
import sys

from . import AssignmentInputError, run_assign_case


def main(argv=None, stdin=None, stdout=None, stderr=None) -> int:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        case = json.load(stdin)
    except json.JSONDecodeError as exc:
        print(f"assign: input is not valid JSON: {exc}", file=stderr)
        return 2
    try:
        result = run_assign_case(case)
    except AssignmentInputError as exc:
        print(f"assign: {exc}", file=stderr)
        return 2
    json.dump(result, stdout, sort_keys=True)
    stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
