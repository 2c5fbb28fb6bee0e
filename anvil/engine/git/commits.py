"""The commit a claim's work is on, read from the caller's checkout (never by a server for a remote caller).

A submission in a git mode names the claim branch's head commit and its tree: that is what the
review decides on, what a verifier re-proves and what a lander merges. These functions read them,
and refuse clearly when the claim's tree is gone or its work is not committed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anvil.engine.errors import Refused, UsageError
from anvil.engine.git.command import COMMIT_ID, GitError, git
from anvil.engine.git.plan import changed_paths


def check_object_id(value: str | None, flag: str) -> str | None:
    """``value`` when it is a full object id (or None).

    Raises:
        UsageError: ``invalid_commit`` naming ``flag``.
    """
    if value is None or COMMIT_ID.match(value):
        return value
    raise UsageError(f"{flag} must be a full commit id (40 or 64 lower-case hex digits, as `git rev-parse HEAD` "
                     "prints it)", code="invalid_commit", details={"field": flag.lstrip("-").replace("-", "_")})


def claim_tree(meta: dict[str, Any], task_id: str) -> Path:
    """The claim's tree (its worktree, or the checkout of a branch claim), when it is still there.

    Raises:
        Refused: ``claim_tree_missing``, naming how to restore it or give the task back.
    """
    path = Path(meta["target_path"])
    if path.is_dir() and (path / ".git").exists():
        return path
    branch = meta["branch"]
    if meta["mode"] == "worktree":
        fix = (f"restore it from the main checkout (`git worktree prune && git worktree add {path} {branch}`: the "
               "branch keeps what you committed)")
    else:
        fix = f"clone or restore the checkout there and switch it to {branch}"
    raise Refused(f"the claim's tree {str(path)[:200]} is gone (deleted or moved): {fix}, or give the task back "
                  f"(`anvil release {task_id}`)", code="claim_tree_missing", details={"path": str(path)[:4096]})


def _read(args: list[str], cwd: Path) -> str:
    try:
        return git(args, cwd, read_only=True)
    except GitError as exc:
        raise Refused(f"git could not read the claim's tree {str(cwd)[:200]}: {exc.first_line}",
                      code="git_unreadable") from None


def branch_head(meta: dict[str, Any], task_id: str) -> tuple[str, str]:
    """The claim branch's head commit and its tree.

    Raises:
        Refused: ``claim_tree_missing``, ``git_unreadable`` (also when the branch is gone).
    """
    tree = claim_tree(meta, task_id)
    ref = f"refs/heads/{meta['branch']}"
    commit, root = _read(["rev-parse", f"{ref}^{{commit}}", f"{ref}^{{tree}}"], tree).split()
    return commit, root


def uncommitted(meta: dict[str, Any], task_id: str, ignored: str) -> list[str]:
    """Tracked paths of the claim's tree with changes not committed (``ignored``: a folder left out)."""
    tree = claim_tree(meta, task_id)
    status = _read(["status", "--porcelain=v1", "-z", "--untracked-files=no"], tree)
    return [p for p in changed_paths(status) if not p.startswith(ignored.rstrip("/") + "/")]


def is_ancestor(cwd: Path, older: str, newer: str) -> bool:
    """Whether commit ``older`` is ``newer`` or one of its ancestors."""
    try:
        git(["merge-base", "--is-ancestor", older, newer], cwd, read_only=True)
        return True
    except GitError:
        return False
