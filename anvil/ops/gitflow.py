"""The caller's side of git-bound work: a claim's plan, git step and undo; a submission's commit.

Runs in the process on the caller's machine: the CLI (whichever route carries the call) and a
stdio MCP server (which runs where its caller runs) for a host that sent no plan. An HTTP server
never runs this: it records what a caller sent, and refuses a git-mode claim without a plan.

A claim:

1. Read the checkout's facts without changing it (:func:`anvil.engine.git.plan.read_facts`) and
   send them as ``git_plan`` with the claim.
2. The server decides the mode, checks the facts under its lock, records the binding in the claim
   event and returns it (``git_metadata``).
3. Perform the git step (:func:`anvil.engine.git.checkout.perform`). If it fails or is
   interrupted, the step removes what it created, and the claim is released here, fenced by the
   generation it got: no git change survives a refused or undone claim.

A submission on a git-bound claim names the claim branch's head commit and its tree, read here
from the claim's tree (:mod:`anvil.engine.git.commits`): completion evidence whose tracked changes
are not committed is refused, since the commit is what the review decides on and a verifier
re-proves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anvil.engine.errors import AnvilError, Refused
from anvil.engine.vocab import COMPLETING_CATEGORIES
from anvil.ops.contract import OpSpec

CLAIM_OPERATIONS = frozenset({"claim_task", "claim_next_task"})
SUBMIT = "submit_completion_evidence"
RELEASE = "release_task"
GIT_OPERATIONS = CLAIM_OPERATIONS | {SUBMIT, RELEASE}
"""The operations whose caller's side reads or changes a checkout."""
Run = Callable[[str, dict[str, Any]], dict[str, Any]]
"""Runs an operation by name on the caller's route: ``(name, args) -> result``."""


def with_git(spec: OpSpec, args: dict[str, Any], run: Run, cwd: str) -> dict[str, Any]:
    """Run a claim with its git plan and step, or a submission with its commit (anything else just runs).

    Raises:
        AnvilError: the call was refused; ``git_step_failed`` after the claim was released;
            ``claim_tree_missing``, ``uncommitted_work`` or ``commit_not_branch_head`` for a submission.
    """
    if spec.name == SUBMIT:
        return run(spec.name, submission_commit(args, run))
    if spec.name == RELEASE:
        return release_and_clean(args, run)
    if spec.name not in CLAIM_OPERATIONS or args.get("git_plan") is not None or args.get("git_mode") == "off":
        return run(spec.name, args)
    from anvil.engine.git.plan import encode, read_facts

    facts = read_facts(cwd, args.get("worktree_path"))
    sent = {**args, "git_plan": encode(facts)}
    if facts.get("worktree_path") is not None:
        sent["worktree_path"] = None  # resolved into the plan
    try:
        result = run(spec.name, sent)
    except AnvilError as error:
        if error.code != "land_base_required" or facts.get("toplevel") is None or "target" not in error.details:
            raise
        from anvil.engine.git.plan import land_base

        # The project lands work: the claim starts from the landing target's current commit.
        facts = {**facts, "land_base": land_base(cwd, error.details["target"], error.details.get("remote"))}
        result = run(spec.name, {**sent, "git_plan": encode(facts)})
    claim = result if spec.name == "claim_task" else result.get("claim")
    if not claim or not claim.get("git_metadata") or args.get("dry_run"):
        return result
    _step(claim, facts, run, args)
    return result


def release_and_clean(args: dict[str, Any], run: Run) -> dict[str, Any]:
    """Release a task's claim, then remove its worktree (and its branch, when it holds no new commit)
    from this machine, when nothing uncommitted would be lost (:func:`anvil.engine.git.checkout.clean_after_release`).

    Raises:
        AnvilError: the release was refused (nothing was removed).
    """
    meta = None
    if (args.get("target_kind") or "task") == "task" and not args.get("dry_run"):
        try:
            task = run("get_task", _call("get_task", task_id=args["task_id"], cwd=args.get("cwd")))
            meta = (task.get("claim") or {}).get("git_metadata")
        except AnvilError:
            meta = None  # the release itself says what is wrong
    result = run(RELEASE, args)
    if meta and result.get("released"):
        from anvil.engine.git.checkout import clean_after_release

        clean_after_release(meta)
    return result


def _call(name: str, **values: Any) -> dict[str, Any]:
    """The full input of operation ``name``: its defaults, with ``values``."""
    from anvil.ops.contract import spec_named

    call = {param.name: param.fresh_default() for param in spec_named(name).params}
    call.update(values)
    return call


def submission_commit(args: dict[str, Any], run: Run) -> dict[str, Any]:
    """``args`` of a submission with the claim branch's head commit and tree, when the caller holds a
    git-bound claim on the task (else ``args`` as they are).

    Raises:
        Refused: ``claim_tree_missing``, ``git_unreadable``, ``commit_not_branch_head`` (a commit was
            given that is not the branch head), ``uncommitted_work`` (completion evidence over tracked
            changes that are not committed).
    """
    task = run("get_task", _call("get_task", task_id=args["task_id"], cwd=args.get("cwd")))
    claim = task.get("claim")
    meta = claim.get("git_metadata") if claim else None
    if not meta:
        return args
    from anvil.engine.git.commits import branch_head, uncommitted
    from anvil.engine.work.continuation import PROOF_DIR

    task_id = task["id"]
    commit, tree = branch_head(meta, task_id)
    given = args.get("commit_sha")
    if given is not None and given != commit:
        raise Refused(f"--commit names {str(given)[:64]}, but the claim branch {meta['branch'][:120]} is at {commit}: "
                      "the submission binds the branch's head (commit your work there, and leave --commit out)",
                      code="commit_not_branch_head", details={"field": "commit_sha"})
    if (args.get("category") or "completion") in COMPLETING_CATEGORIES:
        pending = uncommitted(meta, task_id, PROOF_DIR)
        if pending:
            shown = ", ".join(p[:120] for p in pending[:5]) + (f" and {len(pending) - 5} more" if len(pending) > 5
                                                               else "")
            raise Refused(f"{len(pending)} tracked file(s) in the claim's tree have changes that are not committed "
                          f"({shown}): the submission hands in the commit at the head of {meta['branch'][:120]}, "
                          "which the review decides on and a verifier re-proves. Commit them on the claim branch "
                          "(`git commit -am ...`), then submit", code="uncommitted_work",
                          details={"paths": pending[:50]})
    return {**args, "commit_sha": commit, "tree_sha": tree}


def _step(claim: dict[str, Any], facts: dict[str, Any], run: Run, args: dict[str, Any]) -> None:
    from anvil.engine.git.checkout import baselines, perform
    from anvil.engine.git.command import GitError

    meta = {**claim["git_metadata"], "checkout": facts["toplevel"],
            "repository_id": claim["attestation_context"]["repository_id"], "claim_id": claim["id"],
            "claimed_at": claim["claimed_at"]}
    try:
        perform(meta)
    except GitError as exc:
        released = _release(claim, run, args, f"git step failed: {exc.first_line}")
        raise Refused(f"the git step of claim {claim['id']} failed, so {released} and what it created was removed: "
                      f"{exc.first_line}", code="git_step_failed",
                      details={"claim_id": claim["id"], "git_exit": exc.status}) from None
    except AnvilError as exc:  # a refusal of the step itself (a leftover branch): nothing was created
        _release(claim, run, args, f"git step refused: {exc.code}")
        raise
    except BaseException:
        _release(claim, run, args, "interrupted during the git step")
        raise
    paths = claim["expected_files"]
    claim["attestation_context"]["expected_paths"] = baselines(meta, paths)


def _release(claim: dict[str, Any], run: Run, args: dict[str, Any], reason: str) -> str:
    """Release ``claim`` after its git step failed, as its claimer (a seed-shaped call names it in
    ``claimed_by``, not ``actor``); returns what happened, for the error message."""
    call = _call("release_task", task_id=claim["task_id"], generation=claim["generation"], reason=reason,
                 actor=args.get("actor") or claim["claimed_by"], cwd=args.get("cwd"))
    try:
        run("release_task", call)
    except AnvilError as exc:
        return (f"releasing the claim failed too ({exc.code}: it holds the task until its lease ends; release it "
                f"with `anvil release {claim['task_id']} --generation {claim['generation']}`)")
    return "the claim was released"
