"""Proving a contract command for an MCP agent, on a local (stdio) server (stdlib + engine only).

A stdio server runs on its caller's machine, in its caller's directory, so it can run a command in
the claim's tree exactly as ``anvil proof run`` does (:mod:`anvil.engine.proof.making`). An HTTP
server runs elsewhere and never runs a caller's command: it refuses, naming the CLI commands that
prove the work where the agent works and send the proof.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from anvil.engine.errors import Refused
from anvil.engine.work.claims import Fence, claim_view, held_claim
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import ProveCommandInput

TIMEOUT_SECONDS = 3600.0  # what `anvil proof run` stops a command after by default
EXCERPT_CHARS = 1000  # the output's tail an agent reads in the result (the artifact keeps 4 KiB)


def prepare_proof(ctx: Context, args: ProveCommandInput) -> dict[str, Any]:
    """Run the command before the writer lock is taken (a proof may run for an hour); the handler
    returns what it made. A dry run checks the claim and the command and runs nothing. Over HTTP
    the same checks run first, then the call is refused.

    Raises:
        Refused: ``proof_needs_local_run`` over HTTP; ``proof_command_not_in_contract``; as
            :func:`anvil.engine.work.claims.held_claim`.
    """
    task_id = args["task_id"]
    from anvil.engine import tasks as task_rows
    from anvil.engine.proof.contract import contract_commands, prd_contract
    from anvil.engine.work.continuation import command_argv, normal_command

    conn = ctx.store.conn
    live = held_claim(conn, task_id, ctx.caller.actor, Fence(args["generation"], None))
    task = task_rows.get_task(conn, live["task_id"])
    commands = contract_commands(task, prd_contract(conn, task)[0])
    wanted = normal_command(args["command"])
    command = next((c for c in commands if normal_command(c) == wanted), None)
    if command is None:
        shown = ", ".join(f"`{c[:200]}`" for c in commands[:10]) or "none"
        raise Refused(f"`{args['command'][:200]}` is not a command of task {task['id']}'s evidence contract (its "
                      f"commands: {shown}); only those are proved here", code="proof_command_not_in_contract")
    view = claim_view(conn, live)
    if ctx.remote:
        raise Refused(f"this server runs on another machine and never runs a command: prove it where you work with "
                      f"`anvil proof run {task_id[:64]} --mcp URL --mcp-token-env NAME -- CMD`, then hand the file in "
                      f"with `anvil submit {task_id[:64]} --proof FILE --mcp URL --mcp-token-env NAME` (the CLI sends "
                      "it)", code="proof_needs_local_run")
    if args["dry_run"]:
        return {"task_id": task["id"], "generation": view["generation"], "command": command, "exit_code": None,
                "passed": True, "duration_ms": 0, "output_excerpt": "", "path": None}
    meta = view.get("git_metadata")
    if meta:
        from anvil.engine.git.commits import claim_tree

        root = claim_tree(meta, task["id"])
    else:
        root = ctx.location.root
    from anvil.engine.proof.making import make_proof, signing_key

    made = make_proof(view, command_argv(command), root, root, timeout=TIMEOUT_SECONDS, env=ctx.env,
                      key=signing_key(None, ctx.env))
    # A passing run's output is its last line (``5 passed``): the rest tells the agent nothing; a failing
    # run's tail is what it fixes the work from. The path is relative to the call's directory, the one
    # submit_completion_evidence reads proof_files from.
    excerpt = made["output_excerpt"][-EXCERPT_CHARS:]
    if made["passed"]:
        excerpt = next((line for line in reversed(excerpt.splitlines()) if line.strip()), "")
    return {"task_id": made["task_id"], "generation": made["generation"], "command": made["command"],
            "exit_code": made["exit_code"], "passed": made["passed"], "duration_ms": made["duration_ms"],
            "output_excerpt": excerpt, "path": os.path.relpath(made["path"], ctx.cwd)}


def prove_command(ctx: Context, args: ProveCommandInput) -> dict[str, Any]:
    """What :func:`prepare_proof` made (nothing is recorded until the proof is submitted)."""
    result: dict[str, Any] = ctx.prepared
    return result
