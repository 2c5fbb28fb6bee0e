"""Measure the planning pipeline as real operations: parse, plan, score and review tasks.

Usage: ``python scripts/bench_plan.py [--quick] [--runs N] [--sizes N ...] [--profile]``

Each run starts from a fresh state (``init_project``, the PRD written to ``docs/prd.md``) and
times, through ``anvil.ops.runtime.invoke`` (validation, transaction, event, projection, mirror):
``parse_prd``, then (untimed) ``review_prd`` twice to approve, then ``plan_tasks``, ``score_tasks``
and ``review_tasks``. Figures are medians over the runs.

1. The headline: 2,000 tasks across 100 features in the full PRD form from ``scripts.prdgen``
   (descriptions, two criteria, explicit dependencies, every 4th task of a feature a test task
   sharing a file with an implementation task, 10% of tasks on a feature-shared file). Target:
   the four operations together under 3 s.
2. Scaling at 500, 1,000, 2,000 and 4,000 tasks in the same full form, with the growth ratio
   per doubling beside the n log n ratio for the same step (target: no worse). A size whose full
   form would exceed the PRD size ceiling falls back to the compact form (same graph, fewer words).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from anvil.engine.prd.source import DEFAULT_MAX_BYTES  # noqa: E402
from scripts.prdgen import generate_prd  # noqa: E402

STEPS = ("parse_prd", "plan_tasks", "score_tasks", "review_tasks")
PRD_LIMIT = DEFAULT_MAX_BYTES


def prd_text(n: int, *, compact: bool) -> str:
    return generate_prd(n, 100, seed=3, test_every=4, shared_file_ratio=0.1, cross_feature_ratio=0.05,
                        compact=compact, project="Planning benchmark")


def one_run(base: Path, name: str, text: str) -> dict[str, float]:
    """Fresh state, then each step timed through invoke; seconds per step."""
    from anvil.ops.invoke import invoke

    root = base / name / "project"
    root.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANVIL_")}
    env.update(ANVIL_HOME=str(base / name / "home"), ANVIL_ROOT=str(root))
    cwd = str(root)
    invoke("init_project", {"name": "Bench"}, env=env, cwd=cwd)
    (root / "docs").mkdir()
    (root / "docs" / "prd.md").write_text(text, encoding="utf-8")
    times: dict[str, float] = {}

    def timed(step: str, args: dict[str, Any]) -> dict[str, Any]:
        t0 = time.perf_counter()
        result = invoke(step, args, env=env, cwd=cwd)
        times[step] = time.perf_counter() - t0
        return result

    parsed = timed("parse_prd", {"file": "docs/prd.md"})
    if parsed["error_count"]:
        raise SystemExit(f"the generated PRD has errors: {parsed['errors'][:2]}")
    invoke("review_prd", {"reviewer": "lead"}, env=env, cwd=cwd)
    invoke("review_prd", {"reviewer": "lead", "approve": True}, env=env, cwd=cwd)
    planned = timed("plan_tasks", {"use_llm": False})
    timed("score_tasks", {})
    reviewed = timed("review_tasks", {})
    n = parsed["task_count"]
    if planned["task_count"] != n or len(reviewed["promoted_to_ready"]) != n:
        raise SystemExit("not every task was planned and promoted")
    shutil.rmtree(base / name, ignore_errors=True)
    return times


def measure(base: Path, n: int, runs: int, *, compact: bool) -> dict[str, float]:
    text = prd_text(n, compact=compact)
    samples = [one_run(base, f"{n}-{compact}-{r}", text) for r in range(runs)]
    medians = {step: statistics.median(s[step] for s in samples) for step in STEPS}
    medians["total"] = statistics.median(sum(s[step] for step in STEPS) for s in samples)
    medians["bytes"] = len(text.encode())
    return medians


def row(label: str, m: dict[str, float]) -> str:
    cells = "  ".join(f"{m[step] * 1e3:9.1f}" for step in STEPS)
    return f"  {label:<22} {cells}  {m['total'] * 1e3:9.1f}   {int(m['bytes']):>9,}"


def header() -> str:
    return f"  {'':<22} " + "  ".join(f"{s.split('_')[0] + ' ms':>9}" for s in STEPS) + f"  {'total ms':>9}   " \
           f"{'PRD bytes':>9}"


def profile(base: Path, n: int) -> str:
    text = prd_text(n, compact=False)
    profiler = cProfile.Profile()
    profiler.enable()
    one_run(base, "profile", text)
    profiler.disable()
    buffer = io.StringIO()
    pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(14)
    lines = [ln for ln in buffer.getvalue().splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    return "\n".join("    " + ln for ln in lines[start:start + 15])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark parse, plan, score and review of tasks.")
    parser.add_argument("--quick", action="store_true", help="one run, sizes 500 and 1000")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--profile", action="store_true", help="cProfile one full 2,000-task run")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 5)
    sizes = args.sizes or ([500, 1000] if args.quick else [500, 1000, 2000, 4000])
    headline = 1000 if args.quick else 2000
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; median of {runs} run(s), each on a fresh state")
    with tempfile.TemporaryDirectory(prefix="anvil-bench-plan-") as tmp:
        base = Path(tmp)
        print(f"1. {headline} tasks, 100 features, full PRD form")
        print(header())
        full = measure(base, headline, runs, compact=False)
        print(row(f"{headline} full", full))
        verdict = "meets" if full["total"] < 3.0 else "MISSES"
        print(f"  four operations together: {full['total']:.3f} s (target < 3 s) -> {verdict}")

        print("2. scaling, full PRD form")
        compact = any(len(prd_text(n, compact=False).encode()) > PRD_LIMIT for n in sizes)
        if compact:
            print(f"  note: a full form is over the {PRD_LIMIT:,}-byte ceiling; the compact form is used throughout")
        print(header())
        series = {}
        form = "compact" if compact else "full"
        for n in sizes:
            series[n] = measure(base, n, runs, compact=compact)
            print(row(f"{n} {form}", series[n]))
        print("  growth per doubling (measured / n log n bound):")
        for small, big in zip(sizes, sizes[1:], strict=False):
            bound = (big * math.log(big)) / (small * math.log(small))
            cells = []
            for key in (*STEPS, "total"):
                ratio = series[big][key] / series[small][key]
                cells.append(f"{key.split('_')[0]} {ratio:4.2f}{'' if ratio <= bound * 1.15 else '!'}")
            print(f"    {small:>5} -> {big:<5} bound {bound:4.2f}:  " + "  ".join(cells))
        print("  ('!' marks a step growing more than 15% faster than n log n)")
        if args.profile:
            print(f"3. cProfile of one full {headline}-task run (init, parse, approve, plan, score, review), "
                  "top functions by own time:")
            print(profile(base, headline))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
