"""Scratch worktrees: an exact commit checked out beside a clone, used once and always removed.

A verifier (and a lander) works on a commit in a detached worktree of its own clone, in a fresh
temporary directory, so nothing it does switches or dirties a checkout a person or agent is using.
The worktree is removed whatever happens (a failure, an interruption), and git's record of it is
pruned. Hooks of the clone do not run for it: a checkout for proving must do nothing but check out.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from anvil.engine.errors import Refused
from anvil.engine.git.command import GitError, git

NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]


def toplevel(cwd: str | Path) -> Path:
    """The top of the git checkout holding ``cwd``.

    Raises:
        Refused: ``git_checkout_required`` when ``cwd`` is not inside a git checkout.
    """
    from anvil.engine.git.command import find_checkout

    if find_checkout(cwd) is not None:
        try:
            return Path(git(["rev-parse", "--show-toplevel"], cwd, read_only=True).strip())
        except GitError:
            pass
    raise Refused("this needs a clone of the project's repository: run it inside one (the commit is checked out in "
                  "a scratch worktree beside it; your checkout is left as it is)", code="git_checkout_required")


def has_commit(checkout: Path, commit: str) -> bool:
    try:
        git(["cat-file", "-e", f"{commit}^{{commit}}"], checkout, read_only=True)
        return True
    except GitError:
        return False


def fetch_commit(checkout: Path, commit: str, branch: str | None, remote: str | None) -> str | None:
    """Make sure ``commit`` is in the clone, fetching the claim ``branch`` (or the commit itself) from
    ``remote`` (default: every remote of the clone) when it is not. Returns the remote it came from
    (None: it was there already). Only fetches: no branch or checkout of the clone changes.

    Raises:
        Refused: ``commit_unavailable`` when no remote has it.
    """
    if has_commit(checkout, commit):
        return None
    remotes = [remote] if remote else git(["remote"], checkout, read_only=True).split()
    for name in remotes:
        for wanted in ([f"refs/heads/{branch}"] if branch else []) + [commit]:
            try:
                git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", name, wanted], checkout, timeout=600)
            except GitError:
                continue
            if has_commit(checkout, commit):
                return name
    where = f"remote {remote}" if remote else ("the clone's remotes (" + ", ".join(remotes) + ")" if remotes
                                               else "this clone (it has no remote)")
    raise Refused(f"commit {commit[:12]} is not in this clone and {where} did not provide it: the implementer pushes "
                  f"the claim branch{' ' + branch if branch else ''} (`git push REMOTE BRANCH`), or pass --remote NAME",
                  code="commit_unavailable")


def tree_of(checkout: Path, commit: str) -> str:
    return git(["rev-parse", f"{commit}^{{tree}}"], checkout, read_only=True).strip()


@contextmanager
def scratch_worktree(checkout: Path, commit: str, prefix: str = "anvil-scratch-") -> Iterator[Path]:
    """A detached worktree of ``commit`` in a new temporary directory; removed on the way out.

    Raises:
        Refused: ``git_scratch_failed`` when git could not add it.
    """
    base = Path(tempfile.mkdtemp(prefix=prefix))
    path = base / "tree"
    try:
        try:
            git([*NO_HOOKS, "worktree", "add", "--detach", "--quiet", str(path), commit], checkout)
        except GitError as exc:
            raise Refused(f"git could not check out {commit[:12]} in a scratch worktree: {exc.first_line}",
                          code="git_scratch_failed") from None
        yield path
    finally:
        remove_scratch(checkout, base, path)


def remove_scratch(checkout: Path, base: Path, path: Path) -> None:
    """Remove a scratch worktree and its directory (best effort; git's record of it is pruned)."""
    for args in (["worktree", "remove", "--force", str(path)], ["worktree", "prune"]):
        try:
            git(args, checkout)
        except (GitError, OSError):
            pass
        except Exception:  # noqa: BLE001 - clean-up must go on (a timeout, git gone)
            pass
    shutil.rmtree(base, ignore_errors=True)
