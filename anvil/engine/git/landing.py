"""The git side of landing, on the lander's machine: build, check and move the landing target.

Everything happens in the lander's own clone and in scratch worktrees beside it
(:mod:`anvil.engine.git.scratch`), never in a checkout someone uses:

- :func:`target_tip` reads the target's current commit (fetched from the remote when one is
  configured: only the remote-tracking ref changes);
- :func:`build` puts approved commits onto that tip in a scratch worktree (a merge, a replay of the
  branch's commits, or a squash), stopping at the first conflict with its paths;
- :func:`move_target` moves the target only by fast-forward from the exact tip the merged commit was
  built and verified on: ``git push REMOTE NEW:refs/heads/TARGET`` without force (a rejection means
  another lander moved the target first: the caller rebuilds), or, without a remote, ``git
  update-ref`` from the old tip (a compare-and-swap), refused while the target is checked out in a
  worktree of the clone (moving it would change that checkout under whoever uses it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from anvil.engine.errors import Refused
from anvil.engine.git.command import GitError, git
from anvil.engine.git.scratch import NO_HOOKS

LANDER_NAME = "anvil lander"
LANDER_EMAIL = "lander@anvil.invalid"


def _identity(clone: Path) -> list[str]:
    """``-c user.name/user.email`` for the commits a lander makes, when the clone names nobody."""
    try:
        git(["config", "user.email"], clone, read_only=True)
        return []
    except GitError:
        return ["-c", f"user.name={LANDER_NAME}", "-c", f"user.email={LANDER_EMAIL}"]


def tracking_ref(target: str, remote: str | None) -> str:
    return f"refs/remotes/{remote}/{target}" if remote else f"refs/heads/{target}"


def target_tip(clone: Path, target: str, remote: str | None) -> str:
    """The landing target's current commit (fetched first from ``remote`` when given).

    Raises:
        Refused: ``land_push_failed`` when the target cannot be read or fetched.
    """
    ref = tracking_ref(target, remote)
    try:
        if remote:
            git(["fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{target}:{ref}"], clone, timeout=600)
        return git(["rev-parse", "--verify", "-q", f"{ref}^{{commit}}"], clone, read_only=True).strip()
    except GitError as exc:
        where = f"remote {remote}" if remote else "this clone"
        raise Refused(f"the landing target {target} could not be read from {where}: {exc.first_line}",
                      code="land_push_failed") from None


def is_ancestor(clone: Path, older: str, newer: str) -> bool:
    try:
        git(["merge-base", "--is-ancestor", older, newer], clone, read_only=True)
        return True
    except GitError:
        return False


def branch_heads(clone: Path, branch: str | None, remote: str | None) -> list[str]:
    """Where the claim ``branch`` is now: in this clone and on ``remote`` (each that has it)."""
    if not branch:
        return []
    heads: list[str] = []
    try:
        heads.append(git(["rev-parse", "--verify", "-q", f"refs/heads/{branch}"], clone, read_only=True).strip())
    except GitError:
        pass
    if remote:
        try:
            listing = git(["ls-remote", "--heads", remote, f"refs/heads/{branch}"], clone, read_only=True, timeout=120)
            heads += [line.split()[0] for line in listing.splitlines() if line.strip()]
        except GitError:
            pass
    return heads


@dataclass
class Build:
    """What building a unit onto a tip gave: the new commit, or the first conflict."""

    commit: str | None
    tree: str | None = None
    conflict_task: str | None = None
    conflicts: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


def _unmerged(tree: Path) -> list[str]:
    try:
        out = git(["diff", "--name-only", "--diff-filter=U", "-z"], tree, read_only=True)
    except GitError:
        return []
    return sorted({p for p in out.split("\0") if p})


def build(clone: Path, tree: Path, tip: str, items: list[tuple[str, str, str]], method: str) -> Build:
    """Put each ``(task_id, commit, message)`` onto ``tip`` in the scratch worktree ``tree`` (detached
    at ``tip``), in order, with ``method``; stops at the first conflict.

    Raises:
        Refused: ``git_scratch_failed`` when git fails for another reason than a conflict.
    """
    who = [*NO_HOOKS, *_identity(clone)]
    for task_id, commit, message in items:
        if is_ancestor(tree, commit, "HEAD"):
            continue  # the target holds it already
        try:
            if method == "rebase":
                base = git(["merge-base", "HEAD", commit], tree, read_only=True).strip()
                git([*who, "cherry-pick", "--allow-empty", "--keep-redundant-commits", f"{base}..{commit}"], tree,
                    timeout=600)
            elif method == "squash":
                git([*who, "merge", "--squash", commit], tree, timeout=600)
                git([*who, "commit", "--allow-empty", "-q", "-m", message], tree)
            else:
                git([*who, "merge", "--no-edit", "-q", "-m", message, commit], tree, timeout=600)
        except GitError as exc:
            conflicts = _unmerged(tree)
            for undo in (["cherry-pick", "--abort"], ["merge", "--abort"], ["reset", "--hard", "-q"]):
                try:
                    git([*NO_HOOKS, *undo], tree)
                except GitError:
                    pass
            if conflicts:
                return Build(None, conflict_task=task_id, conflicts=conflicts)
            raise Refused(f"git could not put {commit[:12]} onto the target: {exc.first_line}",
                          code="git_scratch_failed") from None
    head = git(["rev-parse", "HEAD"], tree, read_only=True).strip()
    changed = [p for p in git(["diff", "--name-only", "-z", tip, head], tree, read_only=True).split("\0") if p]
    return Build(head, git(["rev-parse", f"{head}^{{tree}}"], tree, read_only=True).strip(), changed=changed)


def checked_out(clone: Path, target: str) -> list[str]:
    """The worktrees of the clone that have ``target`` checked out."""
    listing = git(["worktree", "list", "--porcelain"], clone, read_only=True)
    out: list[str] = []
    path = ""
    for line in listing.splitlines():
        if line.startswith("worktree "):
            path = line[len("worktree "):]
        elif line == f"branch refs/heads/{target}":
            out.append(path)
    return out


def check_movable(clone: Path, target: str, remote: str | None) -> None:
    """Refuse to land where moving the target would change a checkout someone uses.

    Raises:
        Refused: ``land_target_checked_out``.
    """
    if remote:
        return
    used = checked_out(clone, target)
    if used:
        raise Refused(f"the landing target {target} has no remote and is checked out in {used[0][:200]}: moving it "
                      "would change that checkout under whoever uses it. Configure a remote (`anvil config "
                      "--land-remote NAME`) or land from a clone where it is not checked out",
                      code="land_target_checked_out", details={"worktrees": used[:20]})


def move_target(clone: Path, target: str, remote: str | None, new: str, old: str) -> bool:
    """Move the target from ``old`` to ``new`` by fast-forward only; False when another lander moved it
    first (the caller rebuilds on the new tip).

    Raises:
        Refused: ``land_target_checked_out``, ``land_push_failed``.
    """
    if new == old:
        return True
    check_movable(clone, target, remote)
    try:
        if remote:
            git([*NO_HOOKS, "push", "--quiet", "--no-verify", remote, f"{new}:refs/heads/{target}"], clone,
                timeout=600)
            git(["update-ref", tracking_ref(target, remote), new], clone)
        else:
            git(["update-ref", "-m", "anvil land", f"refs/heads/{target}", new, old], clone)
        return True
    except GitError as exc:
        now = target_tip(clone, target, remote)
        if now != old:
            return False  # another lander won the race
        raise Refused(f"git could not move {target} to {new[:12]}: {exc.first_line}", code="land_push_failed") from None


def clean_up(clone: Path, branch: str | None, remote: str | None, delete_branch: bool) -> list[str]:
    """Remove the claim's worktree from this clone (when it has no uncommitted tracked change) and, when
    ``delete_branch``, the claim branch here and on ``remote``; returns what was removed."""
    if not branch:
        return []
    removed: list[str] = []
    for path in checked_out(clone, branch):
        if Path(path).resolve() == clone.resolve():
            continue  # the clone's own checkout is someone's: never removed
        try:
            if git(["status", "--porcelain", "--untracked-files=no"], path, read_only=True).strip():
                continue
            git(["worktree", "remove", "--force", path], clone)
            removed.append(f"worktree {path}")
        except GitError:
            continue
    if delete_branch:
        if not checked_out(clone, branch):
            try:
                git(["branch", "-q", "-D", branch], clone)
                removed.append(f"branch {branch}")
            except GitError:
                pass
        if remote:
            try:
                git([*NO_HOOKS, "push", "--quiet", "--no-verify", remote, "--delete", branch], clone, timeout=120)
                removed.append(f"branch {branch} on {remote}")
            except GitError:
                pass
    return removed
