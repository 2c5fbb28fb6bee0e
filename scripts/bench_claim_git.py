"""Measure ``anvil claim T --json`` (direct) outside git, inside git with the git mode off, with
--branch and with --worktree; round-robin in one run, fresh processes, medians.

Usage: ``python scripts/bench_claim_git.py [--runs N]``

Each run claims a fresh task in four projects planned from the same PRD of N independent tasks
(a plain directory, and three git repositories), so every call does a real claim. ``python -c
pass`` with the same interpreter is measured alongside as the floor.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _anvil() -> list[str]:
    script = Path(sys.executable).with_name("anvil")
    return [str(script)] if script.exists() else [sys.executable, "-m", "anvil"]


def _project(base: Path, name: str, tasks: int, git: bool) -> dict[str, str]:
    from tests.gitrepo import make_repo, plan_in_repo
    from tests.ops.support import mini_prd, mini_task

    root = base / name
    env = {**os.environ, "ANVIL_HOME": str(base / f"home-{name}"), "ANVIL_ROOT": str(root), "ANVIL_ACTOR": "bench"}
    prd = mini_prd(*(mini_task(f"T{n:03d}") for n in range(1, tasks + 1)))
    if git:
        make_repo(root)
    else:
        root.mkdir()
        (root / "docs").mkdir()
        (root / "docs" / "prd.md").write_text("")
    plan_in_repo(env, prd) if git else _plan_plain(env, prd)
    return env


def _plan_plain(env: dict[str, str], prd: str) -> None:
    from anvil.ops.invoke import invoke
    from anvil.ops.scenarios import SAMPLE_AT

    root = Path(env["ANVIL_ROOT"])
    (root / SAMPLE_AT).write_text(prd)
    for name, args in (("init_project", {"name": "Bench"}), ("parse_prd", {"file": SAMPLE_AT}),
                       ("review_prd", {"actor": "lead"}), ("review_prd", {"actor": "lead", "approve": True}),
                       ("plan_tasks", {"use_llm": False}), ("score_tasks", {}), ("review_tasks", {})):
        invoke(name, args, env=env, cwd=str(root))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    base = Path(tempfile.mkdtemp(prefix="anvil-bench-claim-"))
    try:
        setups = {"outside git": (_project(base, "plain", runs, False), []),
                  "git, mode off": (_project(base, "gitoff", runs, True), []),
                  "git --branch": (_project(base, "gitbranch", runs, True), ["--branch"]),
                  "git --worktree": (_project(base, "gitwt", runs, True), ["--worktree"])}
        times: dict[str, list[float]] = {name: [] for name in ["python -c pass", *setups]}
        for n in range(1, runs + 1):
            began = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            times["python -c pass"].append(time.perf_counter() - began)
            for name, (env, extra) in setups.items():
                args = [*_anvil(), "claim", f"T{n:03d}", "--json", *extra]
                if name == "git --branch" and n > 1:
                    subprocess.run(["git", "switch", "-q", "main"], cwd=env["ANVIL_ROOT"], check=True)
                    args = [*_anvil(), "release", f"T{n - 1:03d}", "--json"]
                    subprocess.run(args, env=env, cwd=env["ANVIL_ROOT"], capture_output=True, check=True)
                    args = [*_anvil(), "claim", f"T{n:03d}", "--json", *extra]
                began = time.perf_counter()
                proc = subprocess.run(args, env=env, cwd=env["ANVIL_ROOT"], capture_output=True, text=True)
                times[name].append(time.perf_counter() - began)
                if proc.returncode != 0:
                    raise SystemExit(f"{name}: {proc.stdout}{proc.stderr}")
        floor = statistics.median(times["python -c pass"])
        print(f"command: {' '.join(_anvil())} claim T --json; {runs} runs each, medians")
        for name, values in times.items():
            median = statistics.median(values)
            print(f"{name:16s} {median * 1000:7.1f} ms  ({median / floor:4.1f}x python -c pass)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
