"""The git plan of a claim: facts the caller's side reads from its checkout, and what they bind.

The caller (the CLI, or a stdio server on the caller's machine) reads its checkout without changing
it (:func:`read_facts`) and sends the facts as canonical JSON with the claim (``git_plan``). The
server checks them under its writer lock and decides, from the claim's git mode, the branch, the
target path and the claim-start commit (:func:`bind`); it records them in the claim event and
returns them. The caller then performs the git step (:mod:`anvil.engine.git.checkout`).

Facts of a caller outside any repository are ``{"v": 1, "toplevel": null}``: the claim then works
as it does without git.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

from anvil.engine.errors import Refused, UsageError
from anvil.engine.git.command import COMMIT_ID, GitError, find_checkout, git

PLAN_VERSION = 1
MAX_PLAN_BYTES = 16384
DIRTY_SHOWN = 10
_KEYS = {"v", "toplevel", "common_dir", "main_root", "head", "head_ref", "dirty", "dirty_count", "worktree_path",
         "land_base"}


def read_facts(cwd: str, worktree_path: str | None = None) -> dict[str, Any]:
    """What the checkout at ``cwd`` looks like, read without changing anything.

    Raises:
        UsageError: ``git_unavailable`` (git cannot be run).
        Refused: ``git_unreadable`` (git could not read the checkout), ``git_timeout``.
    """
    requested = str(Path(cwd, worktree_path).expanduser().resolve()) if worktree_path else None
    if find_checkout(cwd) is None:
        return {"v": PLAN_VERSION, "toplevel": None, "worktree_path": requested}
    try:
        try:
            lines = git(["rev-parse", "--show-toplevel", "--git-common-dir", "--git-dir", "HEAD",
                         "--symbolic-full-name", "HEAD"], cwd, read_only=True).splitlines()
            head: str | None = lines[3]
            symbolic = lines[4] if len(lines) > 4 else ""
        except GitError:  # no commit yet: HEAD names an unborn branch
            lines = git(["rev-parse", "--show-toplevel", "--git-common-dir", "--git-dir"], cwd,
                        read_only=True).splitlines()
            head, symbolic = None, ""
        toplevel, common, own = lines[0], Path(cwd, lines[1]).resolve(), Path(cwd, lines[2]).resolve()
        head_ref = symbolic[len("refs/heads/"):] if symbolic.startswith("refs/heads/") else None
        status = git(["status", "--porcelain=v1", "-z", "--untracked-files=no"], toplevel, read_only=True)
    except GitError as exc:
        raise Refused(f"git could not read the checkout at {str(cwd)[:200]}: {exc.first_line}",
                      code="git_unreadable") from None
    dirty = changed_paths(status)
    # The main checkout: this one when its git dir is the common one (also with --separate-git-dir,
    # whose git dir lies elsewhere); from a linked worktree, the directory holding the common ``.git``.
    if own == common:
        main_root = str(Path(toplevel).resolve())
    else:
        main_root = str(common.parent) if common.name == ".git" else str(common)
    return {"v": PLAN_VERSION, "toplevel": str(Path(toplevel).resolve()), "common_dir": str(common),
            "main_root": main_root, "head": head, "head_ref": head_ref, "dirty": dirty[:DIRTY_SHOWN],
            "dirty_count": len(dirty), "worktree_path": requested}


def changed_paths(porcelain_z: str) -> list[str]:
    """The paths of ``git status --porcelain=v1 -z`` output (a rename's old path is skipped)."""
    out: list[str] = []
    entries = iter(porcelain_z.split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        out.append(entry[3:])
        if entry[0] in "RC":
            next(entries, None)
    return out


def encode(facts: dict[str, Any]) -> str:
    """The facts as the canonical JSON text sent in ``git_plan``."""
    return json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def decode(text: str) -> dict[str, Any]:
    """Check the ``git_plan`` a caller sent and return its facts.

    Raises:
        UsageError: ``invalid_git_plan`` when it is not facts this anvil reads.
    """
    def bad(why: str) -> UsageError:
        return UsageError(f"git_plan is not valid ({why}); let the CLI send it (`anvil claim`), or leave it out",
                          code="invalid_git_plan")

    if len(text.encode("utf-8")) > MAX_PLAN_BYTES:
        raise bad("too large")
    try:
        facts = json.loads(text)
    except ValueError:
        raise bad("not JSON") from None
    if not isinstance(facts, dict) or facts.get("v") != PLAN_VERSION or set(facts) - _KEYS:
        raise bad(f"expected an object of version {PLAN_VERSION} with known keys")
    if facts.get("toplevel") is None:
        return {"v": PLAN_VERSION, "toplevel": None, "worktree_path": _abs(facts.get("worktree_path"), bad, True)}
    out: dict[str, Any] = {"v": PLAN_VERSION}
    for key in ("toplevel", "common_dir", "main_root"):
        out[key] = _abs(facts.get(key), bad, False)
    out["worktree_path"] = _abs(facts.get("worktree_path"), bad, True)
    head = facts.get("head")
    if head is not None and not (isinstance(head, str) and COMMIT_ID.match(head)):
        raise bad("head is not a commit id")
    out["head"] = head
    ref = facts.get("head_ref")
    if ref is not None and not (isinstance(ref, str) and 0 < len(ref) <= 255):
        raise bad("head_ref")
    out["head_ref"] = ref
    dirty = facts.get("dirty", [])
    count = facts.get("dirty_count", 0)
    if not (isinstance(dirty, list) and all(isinstance(d, str) and len(d) <= 4096 for d in dirty)
            and len(dirty) <= DIRTY_SHOWN and isinstance(count, int) and not isinstance(count, bool)
            and count >= len(dirty)):
        raise bad("dirty")
    out["dirty"], out["dirty_count"] = dirty, count
    base = facts.get("land_base")
    if base is not None:
        if not (isinstance(base, dict) and set(base) == {"target", "remote", "commit"}
                and isinstance(base["target"], str) and 0 < len(base["target"]) <= 200
                and (base["remote"] is None or (isinstance(base["remote"], str) and 0 < len(base["remote"]) <= 200))
                and isinstance(base["commit"], str) and COMMIT_ID.match(base["commit"])):
            raise bad("land_base")
        out["land_base"] = dict(base)
    return out


def land_base(cwd: str, target: str, remote: str | None) -> dict[str, Any]:
    """The landing target's current commit, read in the caller's clone (fetched from ``remote`` first:
    only its remote-tracking ref changes), for a claim to start from.

    Raises:
        Refused: ``land_push_failed`` when the target cannot be read.
    """
    from anvil.engine.git.landing import target_tip

    top = git(["rev-parse", "--show-toplevel"], cwd, read_only=True).strip()
    return {"target": target, "remote": remote, "commit": target_tip(Path(top), target, remote)}


def _abs(value: Any, bad: Any, nullable: bool) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not value.startswith("/") or len(value) > 4096 or "\0" in value:
        raise bad("paths must be absolute")
    return str(PurePosixPath(value))


def slug(title: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:limit].strip("-") or "task"


def branch_name(task_id: str, title: str, generation: int = 1) -> str:
    """``agent/<task id>-<slug of the title>``, lower case; a later claim of the task (generation 2 on)
    gets a branch of its own, ``...-g<generation>``, so it never takes over an earlier claimer's commits."""
    base = f"agent/{slug(task_id, 64)}-{slug(title)}"
    return base if generation <= 1 else f"{base}-g{generation}"


def repository_id(common_dir: str) -> str:
    """The repository's identity: a digest of its common git directory, shared by every worktree."""
    return "sha256:" + hashlib.sha256(common_dir.encode("utf-8")).hexdigest()


def bind(facts: dict[str, Any] | None, mode: str, task: dict[str, Any], generation: int = 1,
         land: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The claim's ``git_metadata`` for ``mode`` (claim ``generation`` of the task), or None (mode off,
    or a caller outside git). When the project lands work (``land``: its ``target`` and ``remote``),
    the claim starts from the landing target's current commit as the caller read it
    (``land_base``), never from whatever its checkout has checked out.

    Raises:
        Refused: ``land_base_required`` (the project lands work and the facts do not name the
            target's commit: the CLI reads it and claims again),
        Refused: ``git_dirty_tree`` (branch mode over tracked uncommitted changes), ``git_no_commit``
            (the repository has no commit to start from).
    """
    if mode == "off" or facts is None or facts.get("toplevel") is None:
        return None
    if facts["head"] is None:
        raise Refused("the repository has no commit yet, so a claim branch has nothing to start from: commit "
                      "first, or claim with --git-mode off", code="git_no_commit")
    start = facts["head"]
    if land and land.get("target"):
        base = facts.get("land_base")
        if base is None or base["target"] != land["target"] or base["remote"] != land.get("remote"):
            raise Refused(f"this project lands work on {land['target']}, so a claim starts from that branch's current "
                          "commit: the caller reads it from its clone and claims again (the anvil CLI does)",
                          code="land_base_required", details={"target": land["target"], "remote": land.get("remote")})
        start = base["commit"]
    branch = branch_name(task["id"], task["title"], generation)
    if mode == "branch":
        if facts["dirty_count"] and facts["head_ref"] != branch:  # already on the branch: nothing to switch
            shown = ", ".join(p[:120] for p in facts["dirty"][:5])
            raise Refused(f"the checkout {facts['toplevel'][:200]} has {facts['dirty_count']} tracked file(s) with "
                          f"uncommitted changes ({shown}); commit or stash them, or claim with --worktree",
                          code="git_dirty_tree")
        target = facts["toplevel"]
    else:
        leaf = branch.split("/", 1)[1]
        target = facts["worktree_path"] or f"{facts['main_root']}.worktrees/{leaf}"
    return {"mode": mode, "canonical_root": facts["common_dir"], "repository_id": repository_id(facts["common_dir"]),
            "claim_start_sha": start, "base_ref": facts["head_ref"], "branch": branch,
            "target_path": target, "checkout": facts["toplevel"]}
