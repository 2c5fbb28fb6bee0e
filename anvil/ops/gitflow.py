"""The caller's side of a git-bound claim: plan, claim, git step, and undo on failure.

Runs in the process on the caller's machine: the CLI (whichever route carries the call) and a
stdio MCP server (which runs where its caller runs) for a host that sent no plan. An HTTP server
never runs this: it records the plan a caller sent, and refuses a git-mode claim without one.

1. Read the checkout's facts without changing it (:func:`anvil.engine.git.plan.read_facts`) and
   send them as ``git_plan`` with the claim.
2. The server decides the mode, checks the facts under its lock, records the binding in the claim
   event and returns it (``git_metadata``).
3. Perform the git step (:func:`anvil.engine.git.checkout.perform`). If it fails or is
   interrupted, the step removes what it created, and the claim is released here, fenced by the
   generation it got: no git change survives a refused or undone claim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anvil.engine.errors import AnvilError, Refused
from anvil.ops.contract import OpSpec

CLAIM_OPERATIONS = frozenset({"claim_task", "claim_next_task"})
Run = Callable[[str, dict[str, Any]], dict[str, Any]]
"""Runs an operation by name on the caller's route: ``(name, args) -> result``."""


def claim_with_git(spec: OpSpec, args: dict[str, Any], run: Run, cwd: str) -> dict[str, Any]:
    """Run a claim operation with its git plan and step (any other operation just runs).

    Raises:
        AnvilError: the claim was refused, or ``git_step_failed`` after the claim was released.
    """
    if spec.name not in CLAIM_OPERATIONS or args.get("git_plan") is not None or args.get("git_mode") == "off":
        return run(spec.name, args)
    from anvil.engine.git.plan import encode, read_facts

    facts = read_facts(cwd, args.get("worktree_path"))
    sent = {**args, "git_plan": encode(facts)}
    if facts.get("worktree_path") is not None:
        sent["worktree_path"] = None  # resolved into the plan
    result = run(spec.name, sent)
    claim = result if spec.name == "claim_task" else result.get("claim")
    if not claim or not claim.get("git_metadata") or args.get("dry_run"):
        return result
    _step(claim, facts, run, args)
    return result


def _step(claim: dict[str, Any], facts: dict[str, Any], run: Run, args: dict[str, Any]) -> None:
    from anvil.engine.git.checkout import baselines, perform
    from anvil.engine.git.command import GitError

    meta = {**claim["git_metadata"], "checkout": facts["toplevel"],
            "repository_id": claim["attestation_context"]["repository_id"]}
    try:
        perform(meta)
    except GitError as exc:
        _release(claim, run, args, f"git step failed: {exc.first_line}")
        raise Refused(f"the git step of claim {claim['id']} failed, so the claim was released and what it created "
                      f"was removed: {exc.first_line}", code="git_step_failed",
                      details={"claim_id": claim["id"], "git_exit": exc.status}) from None
    except BaseException:
        _release(claim, run, args, "interrupted during the git step")
        raise
    paths = claim["expected_files"]
    claim["attestation_context"]["expected_paths"] = baselines(meta, paths)


def _release(claim: dict[str, Any], run: Run, args: dict[str, Any], reason: str) -> None:
    from anvil.ops.contract import spec_named

    call = {param.name: param.fresh_default() for param in spec_named("release_task").params}
    call.update(task_id=claim["task_id"], generation=claim["generation"], reason=reason, actor=args.get("actor"))
    try:
        run("release_task", call)
    except AnvilError:
        pass  # the lease still runs out; the caller is told the git step failed
