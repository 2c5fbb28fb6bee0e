"""Real git repositories for tests: a repository with one commit, and an anvil project planned in it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from anvil.ops.scenarios import SAMPLE_AT, SAMPLE_PRD


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60).stdout


def make_repo(root: Path) -> Path:
    """A git repository at ``root`` with the sample PRD committed (branch main)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "test@example.com")
    git(root, "config", "user.name", "Test")
    (root / SAMPLE_AT).parent.mkdir(parents=True, exist_ok=True)
    (root / SAMPLE_AT).write_bytes(Path(SAMPLE_PRD).read_bytes())
    (root / "shortlink").mkdir(exist_ok=True)
    (root / "shortlink" / "store.py").write_text("STORE = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return root


def branches(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()


def worktrees(root: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in git(root, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def current_branch(root: Path) -> str:
    return git(root, "branch", "--show-current").strip()


def plan_in_repo(env: dict[str, str], prd_text: str | None = None) -> None:
    """Initialize anvil at ``ANVIL_ROOT`` (a repository) and plan the sample (or ``prd_text``) to ready."""
    from anvil.ops.invoke import invoke

    root = Path(env["ANVIL_ROOT"])
    if prd_text is not None:
        (root / SAMPLE_AT).write_text(prd_text, encoding="utf-8")
        git(root, "commit", "-q", "-am", "prd")
    cwd = str(root)
    for name, args in (("init_project", {"name": "Demo"}), ("parse_prd", {"file": SAMPLE_AT}),
                       ("review_prd", {"actor": "lead"}), ("review_prd", {"actor": "lead", "approve": True}),
                       ("plan_tasks", {"use_llm": False}), ("score_tasks", {}), ("review_tasks", {})):
        invoke(name, args, env=env, cwd=cwd)
