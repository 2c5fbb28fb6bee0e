"""Measure the PRD parser on long documents: the figure behind "4,000 tasks parse well under a second".

Usage: ``python scripts/bench_parse.py [--runs N] [--sizes N ...]``

For each size, ``scripts.prdgen.chained_prd`` writes a regular PRD (20 features, every task with a
paragraph of description and two dependencies; 4,000 tasks are about 2.3 MB) and
``anvil.engine.prd.parser.parse_prd`` parses it ``--runs`` times; the best time is reported with
the growth per doubling beside the n log n ratio for the same step. Target: the 4,000-task document
under 1 s, growth no worse than n log n. ``tests/engine/prd/test_parser.py`` checks the same
document parses completely; the time is measured here, not asserted in the suite.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from anvil.engine.prd.parser import parse_prd  # noqa: E402
from scripts.prdgen import chained_prd  # noqa: E402

TARGET_SIZE, TARGET_SECONDS = 4000, 1.0


def best_parse(text: str, runs: int) -> float:
    """The fastest of ``runs`` parses of ``text``, in seconds; every parse must succeed cleanly."""
    best = math.inf
    for _ in range(runs):
        start = time.perf_counter()
        result = parse_prd(text)
        best = min(best, time.perf_counter() - start)
        if not result.ok or result.diagnostics:
            raise SystemExit(f"the generated PRD did not parse cleanly: {result.diagnostics[:3]}")
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    args = parser.parse_args(argv)
    previous: tuple[int, float] | None = None
    failed = False
    for size in sorted(args.sizes):
        text = chained_prd(size)
        seconds = best_parse(text, args.runs)
        line = f"{size:6d} tasks  {len(text.encode()) / 1e6:5.2f} MB  {seconds:7.3f} s"
        if previous is not None:
            (n0, t0), nlogn = previous, (size * math.log(size)) / (previous[0] * math.log(previous[0]))
            line += f"  growth x{seconds / t0:.2f} (n log n x{nlogn:.2f} from {n0})"
        print(line)
        if size == TARGET_SIZE and seconds >= TARGET_SECONDS:
            print(f"  over the target: {TARGET_SIZE} tasks must parse in under {TARGET_SECONDS:.0f} s")
            failed = True
        previous = (size, seconds)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
