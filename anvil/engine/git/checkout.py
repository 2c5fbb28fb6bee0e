"""The git step of a claim, performed on the caller's machine after the claim was recorded.

``branch`` mode switches the checkout to the claim branch (created at the claim-start commit when
it does not exist); ``worktree`` mode adds a worktree for the claim branch at the target path. The
step records what it created; if any part fails or is interrupted, it undoes exactly that (a
branch or worktree that existed before is never touched) and re-raises, and the caller releases
the claim. Steps that change a repository take a per-repository lock file, so agents claiming
into one repository at once queue instead of colliding on git's own lock files.

A branch the step creates is marked with its claim (``branch.<name>.anvilclaim`` in the
repository's config). A branch that exists already is only taken by the claim that made it (a
retry of the same claim); any other one is left over from somewhere else, possibly with another
claimer's commits, and the step refuses it rather than hand its commits to this claim.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from anvil.engine.errors import Refused
from anvil.engine.git.command import GitError, git

LOCK_NAME = "anvil-claims.lock"
LOCK_TIMEOUT_SECONDS = 120.0


@contextmanager
def repository_lock(common_dir: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """Hold the repository's claim lock (an exclusive ``flock`` on a file in its common git dir),
    waiting at most ``timeout`` seconds for another claim's git step to finish.

    Raises:
        Refused: ``git_timeout`` when the lock was not granted in time.
    """
    import fcntl
    import time

    fd = os.open(Path(common_dir, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline, delay = time.monotonic() + timeout, 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Refused(f"another claim's git step held the repository for over {timeout:.0f} s; claim "
                                  "again", code="git_timeout") from None
                time.sleep(delay)  # the holder is running a few git commands; poll with a short backoff
                delay = min(delay * 2, 0.1)
        yield
    finally:
        os.close(fd)


def _branch_exists(checkout: str, branch: str) -> bool:
    try:
        git(["rev-parse", "--verify", "-q", f"refs/heads/{branch}"], checkout, read_only=True)
        return True
    except GitError:
        return False


def _current_branch(path: str) -> str | None:
    try:
        return git(["symbolic-ref", "-q", "--short", "HEAD"], path, read_only=True).strip() or None
    except GitError:
        return None


def _is_worktree_on(path: str, branch: str) -> bool:
    target = Path(path)
    if not (target / ".git").exists():
        return False
    try:
        top = git(["rev-parse", "--show-toplevel"], path, read_only=True).strip()
    except GitError:
        return False
    return Path(top).resolve() == target.resolve() and _current_branch(path) == branch


def _registered_worktrees(checkout: str) -> set[str]:
    try:
        listing = git(["worktree", "list", "--porcelain"], checkout, read_only=True)
    except GitError:
        return set()
    return {str(Path(line[len("worktree "):]).resolve()) for line in listing.splitlines()
            if line.startswith("worktree ")}


MARKER_KEY = "anvilclaim"


def claim_marker(meta: dict[str, Any]) -> str:
    """What marks a branch as this claim's: its id and when it was taken (ids restart with a new state)."""
    return f"{meta.get('claim_id')}@{meta.get('claimed_at')}"


def _marker(checkout: str, branch: str) -> str | None:
    try:
        return git(["config", "--get", f"branch.{branch}.{MARKER_KEY}"], checkout, read_only=True).strip() or None
    except GitError:
        return None


def _refuse_leftover(meta: dict[str, Any]) -> None:
    """Raises:
        Refused: ``git_branch_taken``: the claim branch exists, made by another claim (or outside anvil).
    """
    branch = meta["branch"]
    raise Refused(f"branch {branch[:120]} exists already and was not made by this claim (left over from an earlier "
                  "claim or made by hand, possibly with another claimer's commits), so this claim was released "
                  f"rather than take it over: look at it (`git log {branch[:120]}`), save what it holds, delete it "
                  f"(`git branch -D {branch[:120]}`, after `git worktree remove` if a worktree has it), then claim "
                  "again", code="git_branch_taken", details={"branch": branch[:255]})


def perform(meta: dict[str, Any]) -> dict[str, bool]:
    """Carry out the git step ``meta`` (a claim's ``git_metadata``); returns what it created.

    What the step creates is judged by comparing the repository with how it was before, not by
    which command returned: a git command can fail after doing its work (a failing
    ``post-checkout`` hook fails ``git switch`` and ``git worktree add`` after they switched or
    added), and an interruption can land while it runs.

    Raises:
        GitError: a git command failed; everything this call created was removed first.
        BaseException: an interruption, after the same clean-up.
    """
    created = {"branch": False, "worktree": False, "switched": False}
    checkout, branch, start = meta["checkout"], meta["branch"], meta["claim_start_sha"]
    mine = claim_marker(meta)
    with repository_lock(meta["canonical_root"]):
        had_branch = _branch_exists(checkout, branch)
        if had_branch and _marker(checkout, branch) != mine:
            _refuse_leftover(meta)
        if meta["mode"] == "branch":
            if _current_branch(checkout) == branch:
                return created  # a retry of the same claim: already on its branch
            try:
                if had_branch:
                    git(["switch", "--quiet", branch], checkout)
                else:
                    git(["switch", "--quiet", "--create", branch, start], checkout)
                    git(["config", f"branch.{branch}.{MARKER_KEY}", mine], checkout)
            except BaseException:
                created.update(switched=_current_branch(checkout) == branch,
                               branch=not had_branch and _branch_exists(checkout, branch))
                undo(meta, created)
                raise
            created.update(switched=True, branch=not had_branch)
            return created
        target = meta["target_path"]
        if _is_worktree_on(target, branch):
            return created  # a retry of the same claim: the worktree is already there
        had_worktree = str(Path(target).resolve()) in _registered_worktrees(checkout)
        made_dirs = [d for d in (Path(target).parent, *Path(target).parent.parents) if not d.exists()]
        try:
            if not had_branch:
                git(["branch", "--quiet", branch, start], checkout)
                git(["config", f"branch.{branch}.{MARKER_KEY}", mine], checkout)
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            git(["worktree", "add", "--quiet", target, branch], checkout)
        except BaseException:
            created.update(branch=not had_branch and _branch_exists(checkout, branch),
                           worktree=not had_worktree and str(Path(target).resolve()) in _registered_worktrees(
                               checkout))
            undo(meta, created)
            for folder in made_dirs:  # the parent folders this call made, if they are empty again
                try:
                    folder.rmdir()
                except OSError:
                    break
            raise
        created.update(branch=not had_branch, worktree=True)
        return created


def undo(meta: dict[str, Any], created: dict[str, bool]) -> None:
    """Remove what :func:`perform` created (best effort, in reverse order); nothing else."""
    checkout = meta["checkout"]
    steps: list[list[str]] = []
    if created.get("worktree"):
        steps.append(["worktree", "remove", "--force", meta["target_path"]])
    if created.get("switched"):
        base = meta.get("base_ref")
        steps.append(["switch", "--quiet", base] if base else ["switch", "--quiet", "--detach",
                                                                meta["claim_start_sha"]])
    if created.get("branch"):
        steps.append(["branch", "--quiet", "-D", meta["branch"]])
    for args in steps:
        try:
            git(args, checkout)
        except (GitError, OSError):
            pass
        except Exception:  # noqa: BLE001 - clean-up must go on (a timeout, git gone)
            pass


def baselines(meta: dict[str, Any], paths: list[str]) -> list[dict[str, Any]]:
    """Each path with the SHA-256 of its content at the claim-start commit (null: absent there).

    One ``git cat-file --batch`` reads them all. Raises nothing: a path git cannot read has a null
    baseline.
    """
    return [{"path": p, "baseline_sha256": d} for p, d in zip(paths, blob_digests(
        meta["checkout"], [f"{meta['claim_start_sha']}:{p}" for p in paths]), strict=True)]


def blob_digests(cwd: str, specs: list[str]) -> list[str | None]:
    """SHA-256 of each ``<rev>:<path>`` blob (None when it does not exist or git cannot read it)."""
    import hashlib
    import subprocess

    if not specs or any("\n" in s for s in specs):
        return [None] * len(specs)
    try:
        proc = subprocess.run(["git", "cat-file", "--batch"], cwd=cwd, input="".join(s + "\n" for s in specs).encode(),
                              capture_output=True, timeout=60, check=False,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.SubprocessError):
        return [None] * len(specs)
    out: list[str | None] = []
    data, pos = proc.stdout, 0
    for _ in specs:
        end = data.find(b"\n", pos)
        if end < 0:
            out.append(None)
            continue
        header = data[pos:end].split(b" ")
        pos = end + 1
        if len(header) == 3 and header[1] == b"blob" and header[2].isdigit():
            size = int(header[2])
            out.append(hashlib.sha256(data[pos:pos + size]).hexdigest())
            pos += size + 1
        elif len(header) == 3 and header[2].isdigit():
            pos += int(header[2]) + 1  # a tree or another object: not a file
            out.append(None)
        else:
            out.append(None)
    return out


def clean_after_release(meta: dict[str, Any]) -> list[str]:
    """After a worktree claim was released: remove its worktree and its branch when the claim did
    nothing there (no commit beyond the claim-start commit, no uncommitted tracked change); returns
    what was removed. Work a released claim did stays where it is, for its claimer to save (a new
    claim of the task gets a branch of its own). Best effort: raises nothing."""
    if meta.get("mode") != "worktree":
        return []
    removed: list[str] = []
    try:
        # The claim's view names the repository by its common git directory, where git runs as well.
        checkout, path, branch = meta.get("checkout") or meta["canonical_root"], meta["target_path"], meta["branch"]
        head = git(["rev-parse", "--verify", "-q", f"refs/heads/{branch}"], checkout, read_only=True).strip()
        if head != meta["claim_start_sha"]:
            return removed  # the claim committed work: keep it
        if Path(path).is_dir() and not git(["status", "--porcelain", "--untracked-files=no"], path,
                                           read_only=True).strip():
            git(["worktree", "remove", "--force", path], checkout)
            removed.append(f"worktree {path}")
        if not Path(path).is_dir():
            git(["branch", "-q", "-D", branch], checkout)
            removed.append(f"branch {branch}")
    except (GitError, OSError, Refused, KeyError, TypeError):
        pass
    return removed
