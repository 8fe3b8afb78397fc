"""``python -m dashboards [--check]``: write the generated files, or (--check) list those out of date."""
from __future__ import annotations

import argparse
import sys

from .artifacts import ROOT, drift, write


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gen_dashboards",
                                description="Generate the dashboards, the PrometheusRule, the dashboards "
                                            "ConfigMap and docs/alerts.md from their sources.")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 and list the generated files that differ from their sources")
    args = p.parse_args(argv)
    if args.check:
        stale = drift()
        for path in stale:
            print(f"out of date: {path.relative_to(ROOT)}", file=sys.stderr)
        if stale:
            print("run `make dashboards` (python scripts/gen_dashboards.py) and commit the result", file=sys.stderr)
            return 1
        return 0
    for path in write():
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
