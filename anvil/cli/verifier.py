"""``anvil verify-task TASK_ID``: re-prove a submission on its exact commit, as someone other than its implementer.

Runs on the verifier's machine (like ``anvil proof run``), with the state wherever the route says
(direct, stdio, or a team server over HTTP with the verifier's token):

1. read the task's latest submission through the routed backend: the commit and tree it hands in,
   the claim branch, and the contract's commands; a dry run of ``verify_task`` checks that this
   caller may verify it before anything runs (not the implementer, a commit was submitted);
2. find the commit in the verifier's own clone (fetching the claim branch, or the commit, from the
   clone's remotes when it is not there) and check its tree against the submission;
3. check it out in a scratch worktree (detached, in a temporary directory, hooks off) and run each
   contract command there with the same runner as ``anvil proof run`` (argv, own process group,
   timeout, bounded output), in an environment without anvil's variables or known secrets;
4. record every outcome, passing or failing, as one ``verify_task`` call: ``verified`` proofs bound
   to the task, the commit, its tree and the verifier;
5. remove the scratch worktree, whatever happened (also on failure or Ctrl-C).

Exits 0 when every command passed, 5 when one failed (the failure is recorded too).
"""

from __future__ import annotations

import base64
import os
import secrets
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from anvil.engine.errors import AnvilError, Refused
from anvil.ops import cliflags as flags


def timeout_option() -> Any:
    """``--timeout SECONDS`` (1 to a week) of the commands that run verification commands."""
    return typer.Option(3600.0, "--timeout", metavar="SECONDS", min=1, max=7 * 86400,
                        help="Stop each command after this many seconds.")


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    task_id: str
    json: bool
    actor: str | None
    remote: str | None
    timeout: float
    mcp: str | None
    mcp_token_env: str | None


def register(app: typer.Typer, group: Callable[[str, str | None], typer.Typer], panel: str) -> None:
    """Add ``verify-task`` to ``app``."""
    from anvil.cli.app import completer, option

    @app.command(name="verify-task", rich_help_panel=panel, help="Re-prove a task's submission on its exact commit: "
                 "check the submitted commit out in a scratch worktree of this clone, run each command of the task's "
                 "evidence contract there, and record the outcomes as verified proofs (you must not be the "
                 "implementer). Approval with `anvil config --require-verified on` needs them. Exits 5 when a "
                 "command failed (recorded too).",
                 short_help="Re-prove a submission on its exact commit as a verifier; record verified proofs.")
    def verify_task(
        task_id: str = typer.Argument(..., metavar="TASK_ID", show_default=False, help="The task waiting for review.",
                                      autocompletion=completer("task")),
        remote: str | None = typer.Option(None, "--remote", metavar="NAME", help="Fetch the commit from this remote "
                                          "when the clone lacks it (default: every remote of the clone)."),
        timeout: float = timeout_option(), actor: str | None = option(flags.ACTOR, None),
        json_: bool = option(flags.JSON), mcp_: str | None = option(flags.MCP),
        mcp_token_env_: str | None = option(flags.MCP_TOKEN_ENV),
    ) -> int:
        return run_verify(VerifyOptions(task_id, json_, actor, remote, timeout, mcp_, mcp_token_env_), os.environ)


def run_verify(options: VerifyOptions, env: Mapping[str, str]) -> int:
    """Run ``anvil verify-task``; returns the exit code.

    Raises:
        AnvilError: the verification could not be made or recorded.
    """
    from anvil.cli.backend import operation_caller

    call, cwd, route = operation_caller(options.mcp, options.mcp_token_env, env)

    task = call("get_task", task_id=options.task_id)
    submission = _submission(task)
    actor = options.actor or env.get("ANVIL_ACTOR", "").strip() or None
    request = {"task_id": task["id"], "actor": actor, "commit_sha": submission["commit_sha"],
               "tree_sha": submission["tree_sha"] or submission["commit_sha"], "evidence_id": submission["id"]}
    _preflight(call, request)
    from anvil.engine.git.scratch import fetch_commit, scratch_worktree, toplevel, tree_of

    clone = toplevel(cwd)
    commit = submission["commit_sha"]
    fetched = fetch_commit(clone, commit, submission.get("branch"), options.remote)
    tree = tree_of(clone, commit)
    if submission["tree_sha"] is not None and tree != submission["tree_sha"]:
        raise Refused(f"commit {commit[:12]} has tree {tree[:12]} in this clone, but the submission recorded "
                      f"{submission['tree_sha'][:12]}: the submission does not describe this commit, so nothing was "
                      "run", code="verification_tree_mismatch")
    commands = list((submission.get("trust") or {}).get("contract_commands") or task["verification"])
    if not commands:
        raise Refused(f"task {task['id']} has no verification command to run", code="verification_not_in_contract")
    results: list[str] = []
    with _terminable(), scratch_worktree(clone, commit, prefix=f"anvil-verify-{task['id'].lower()}-") as tree_path:
        for command in commands:
            results.append(_run(command, tree_path, options.json, options.timeout, env, route, task["id"], commit,
                                tree)[0])
    recorded = call("verify_task", **{**request, "tree_sha": tree, "result_artifacts_base64": results})
    from anvil.cli.output import emit

    emit({**recorded, "fetched_from": fetched}, options.json, lambda shown: _lines(shown, route))
    return 0 if recorded.get("passed") else 5


def _submission(task: dict[str, Any]) -> dict[str, Any]:
    """The task's latest submission, when it can be verified.

    Raises:
        Refused: ``not_in_review``, ``evidence_missing``, ``verification_needs_commit``.
    """
    if task["status"] != "needs_review":
        raise Refused(f"task {task['id']} is {task['status']}, not waiting for review: there is no submission to "
                      "verify", code="not_in_review")
    evidence = (task.get("history") or {}).get("evidence") or []
    if not evidence:
        raise Refused(f"task {task['id']} has no evidence to verify", code="evidence_missing")
    latest = dict(evidence[0])
    if not latest.get("commit_sha"):
        raise Refused(f"the submission {latest.get('id')} of task {task['id']} names no commit, so there is nothing to "
                      "check out and verify: the implementer claims with --branch or --worktree and submits from the "
                      "claim's tree", code="verification_needs_commit")
    latest.setdefault("tree_sha", None)
    return latest


def _preflight(call: Any, request: dict[str, Any]) -> None:
    """Ask the server whether this caller may record a verification of this submission (a dry run
    without results), before anything is fetched or run.

    Raises:
        AnvilError: whatever the server refuses, except the missing results this dry run leaves out.
    """
    try:
        call("verify_task", **{**request, "dry_run": True})
    except AnvilError as error:
        if error.code != "verification_results_required":
            raise


def _run(command: str, tree: Path, as_json: bool, timeout: float, env: Mapping[str, str], route: Any, task_id: str,
         commit: str, tree_id: str) -> tuple[str, dict[str, Any]]:
    """Run one contract command in the scratch tree; returns its result artifact (base64) and its outcome."""
    from anvil.engine.proof.artifacts import VERIFICATION, envelope
    from anvil.engine.proof.runner import run_command
    from anvil.engine.work.continuation import command_argv

    token_env = getattr(route, "token_env", None)
    if not as_json:
        sys.stderr.write(f"$ {command}\n")
        sys.stderr.flush()
    outcome = run_command(command_argv(command), tree, timeout=timeout,
                          echo=None if as_json else echo, env=env, token_env=token_env)
    body = {**outcome, "task_id": task_id, "commit": commit, "tree": tree_id,
            "nonce": secrets.token_hex(16), "timeout_seconds": int(timeout), "signer": None}
    return base64.b64encode(envelope(VERIFICATION, body, None)).decode("ascii"), outcome


def echo(chunk: bytes) -> None:
    """A proved command's output, passed through to the terminal as it comes."""
    out = getattr(sys.stderr, "buffer", None)
    if out is not None:
        out.write(chunk)
    else:  # a text stream without bytes underneath (an embedding caller's)
        sys.stderr.write(chunk.decode("utf-8", "replace"))
    sys.stderr.flush()


@contextmanager
def _terminable() -> Iterator[None]:
    """A SIGTERM while commands run ends the run like Ctrl-C: the scratch worktree is still removed."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def route_flags(route: Any) -> str:
    """`` --mcp TARGET [--mcp-token-env NAME]`` of a routed call, for the commands a hint names."""
    import shlex

    from anvil.cli.hints import Paste

    words = Paste(route, "").route_words()
    return " " + shlex.join(words) if words else ""


def _lines(result: dict[str, Any], route: Any) -> list[str]:
    commit = str(result.get("commit_sha"))[:12]
    lines = [f"{'verified' if result.get('passed') else 'VERIFICATION FAILED'}: task {result.get('task_id')} at "
             f"commit {commit} (tree {str(result.get('tree_sha'))[:12]}), by {result.get('verifier')}"]
    for outcome in result.get("results", []):
        mark = "pass" if outcome.get("exit_code") == 0 else f"FAIL (exit {outcome.get('exit_code')})"
        lines.append(f"  {mark}  {outcome.get('command')}  ({outcome.get('duration_ms')} ms)")
    if result.get("fetched_from"):
        lines.append(f"fetched {commit} from {result['fetched_from']}; the scratch worktree was removed")
    unverified = result.get("unverified_commands") or []
    if unverified:
        lines.append("not verified yet: " + ", ".join(unverified))
    task, routing = result.get("task_id"), route_flags(route)
    lines.append(f"trust level of the submission: {result.get('trust_level')}; review it: anvil show {task}"
                 f"{routing}, then anvil apply {task} --approve|--reject{routing}")
    return lines
