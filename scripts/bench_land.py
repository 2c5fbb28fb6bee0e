"""Measure landing: the time to land one task beyond its commands' own run time, and landings per minute.

Usage: ``python scripts/bench_land.py [--tasks N]``

A project in a fresh git repository with a bare remote (``origin``) has N independent tasks (20 by
default), each approved at a commit of its own claim branch (one new file, a verification command
that checks it). The project lands on ``main`` through ``origin``. Then, in a clone of the remote:

1. ``anvil land T001``, one task alone: merge onto ``origin/main`` in a scratch worktree, re-prove,
   push, record. Reported: its wall time, the commands' own run time (the re-proofs' durations) and
   what landing adds beyond them (fetch, merge, scratch worktree, push, the records).
2. ``anvil land --all`` on the remaining N - 1 tasks: landings per minute, each unit built on the
   target the previous landing pushed.

Every anvil call is a real process (``python -m anvil``), as a CI job runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120).stdout


def prd(count: int) -> str:
    tasks = "\n".join(
        f"### T{n:03d}: Piece {n}\n\n**Feature:** F001\n**Priority:** medium\n**Type:** feature\n"
        f"**Likely files:** piece_{n}.txt\n**Dependencies:** none\n**Acceptance criteria:**\n- piece {n} exists.\n"
        f"**Verification:**\n- `python -c \"import pathlib; assert pathlib.Path('piece_{n}.txt').exists()\"`\n"
        for n in range(1, count + 1))
    return ("# Project: Bench\n\n## Summary\n\nSupport agents use Bench.\n\n## Requirements\n\n- R001: It works.\n\n"
            "## Features\n\n### F001: Core\n\nThe core.\n\n**Requirements:** R001\n\n## Tasks\n\n" + tasks)


def setup(base: Path, count: int) -> tuple[dict[str, str], Path]:
    """The served project with ``count`` approved tasks, and a lander's clone."""
    from anvil.ops.invoke import invoke

    served, remote = base / "project", base / "remote.git"
    served.mkdir()
    git(base, "init", "-q", "--bare", "-b", "main", str(remote))
    git(served, "init", "-q", "-b", "main")
    for key, value in (("user.email", "bench@example.com"), ("user.name", "bench")):
        git(served, "config", key, value)
    (served / "docs").mkdir()
    (served / "docs" / "prd.md").write_text(prd(count))
    git(served, "add", ".")
    git(served, "commit", "-q", "-m", "initial")
    git(served, "remote", "add", "origin", str(remote))
    git(served, "push", "-q", "origin", "main")
    env = {**os.environ, "ANVIL_ROOT": str(served), "ANVIL_HOME": str(base / "home"), "TMPDIR": str(base / "tmp")}
    (base / "tmp").mkdir()
    cwd = str(served)

    def call(operation: str, /, **args: Any) -> dict[str, Any]:
        return invoke(operation, args, env=env, cwd=cwd)

    for name, args in (("init_project", {"name": "Bench"}), ("parse_prd", {"file": "docs/prd.md"}),
                       ("review_prd", {"actor": "lead"}), ("review_prd", {"actor": "lead", "approve": True}),
                       ("plan_tasks", {"use_llm": False}), ("score_tasks", {}), ("review_tasks", {})):
        call(name, **args)
    call("configure_project", evidence_gate="advisory", require_verified="off", actor="lead")
    for n in range(1, count + 1):
        task_id, branch = f"T{n:03d}", f"agent/t{n:03d}"
        claim = call("claim_task", task_id=task_id, actor="agent-1", git_mode="off")
        git(served, "branch", branch, "main")
        with tempfile.TemporaryDirectory(dir=base / "tmp") as scratch:
            tree = Path(scratch) / "tree"
            git(served, "worktree", "add", "-q", str(tree), branch)
            (tree / f"piece_{n}.txt").write_text(f"piece {n}\n")
            git(tree, "add", ".")
            git(tree, "commit", "-q", "-m", f"{task_id}: piece")
            git(served, "worktree", "remove", "--force", str(tree))
        commit = git(served, "rev-parse", branch).strip()
        git(served, "push", "-q", "origin", branch)
        call("submit_completion_evidence", task_id=task_id, actor="agent-1", generation=claim["generation"],
             commit_sha=commit, tree_sha=git(served, "rev-parse", f"{commit}^{{tree}}").strip(),
             files_changed=[f"piece_{n}.txt"], commands_run=call("get_task", task_id=task_id)["verification"])
        call("apply_review_decision", task_id=task_id, actor="lead", approve=True)
    call("configure_project", land_target="main", land_remote="origin", actor="lead")
    clone = base / "lander"
    git(base, "clone", "-q", str(remote), str(clone))
    return {**env, "ANVIL_ACTOR": "runner-1"}, clone


def land(env: dict[str, str], clone: Path, *args: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "anvil", "land", *args, "--json"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=1800, check=False)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"anvil land failed ({proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}")
    return took, json.loads(proc.stdout)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--tasks", type=int, default=20)
    count = options.parse_args().tasks
    with tempfile.TemporaryDirectory(prefix="anvil-bench-land-") as folder:
        env, clone = setup(Path(folder), count)
        one, report = land(env, clone, "T001")
        commands = sum(p["duration_ms"] for item in report["landed"] for p in item["proofs"]) / 1000
        print(f"land one task (merge + re-proof + push + records, one process): {one:.2f} s wall; its commands "
              f"{commands:.2f} s; landing beyond them {one - commands:.2f} s")
        rest, report = land(env, clone, "--all")
        landed = sum(len(item["task_ids"]) for item in report["landed"])
        commands = sum(p["duration_ms"] for item in report["landed"] for p in item["proofs"]) / 1000
        print(f"queue of {landed} independent tasks: {rest:.2f} s wall ({commands:.2f} s of it their commands), "
              f"{landed / rest * 60:.1f} landings per minute, {(rest - commands) / max(landed, 1):.2f} s per landing "
              "beyond the commands")
        head = git(Path(folder) / "remote.git", "rev-list", "--count", "main").strip()
        print(f"origin/main now holds {head} commits (the initial one and the landings)")


if __name__ == "__main__":
    main()
