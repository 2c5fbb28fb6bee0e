"""MCP prompts for the agent loop: work the next task, review a submission.

Each prompt is built from live state at the moment a host asks for it, and embeds the task's work
packet as a resource (``anvil://tasks/{task_id}/packet``), so the model starts with the whole
brief instead of spending turns fetching it. The instructions name the tools to call next.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from anvil.engine.errors import AnvilError
from anvil.mcp import calls
from anvil.mcp.resources import INVALID_PARAMS, JSON_TYPE, MARKDOWN_TYPE, Call, compact_json, rpc_error

REQUIRED_OPERATIONS = calls.PROMPT_OPERATIONS  # prove_command is named only where it is served (a local server)

WORK_NEXT = "work_next_task"
REVIEW = "review_submission"
_TASK_ARGUMENT = "task_id"

PROMPTS = [
    types.Prompt(
        name=WORK_NEXT, title="Work the next task",
        description="Pick the best ready task (or the one named), with its work packet embedded and the claim, "
                    "heartbeat and submit steps spelled out.",
        arguments=[
            types.PromptArgument(name="actor", description="Your agent name: claims and evidence carry it.",
                                 required=False),
            types.PromptArgument(name=_TASK_ARGUMENT, description="Work on this task instead of the next one "
                                                                  "offered.", required=False),
        ]),
    types.Prompt(
        name=REVIEW, title="Review a submission",
        description="Review the evidence submitted for a task against its acceptance criteria, with the packet "
                    "and the evidence embedded, and record the decision.",
        arguments=[types.PromptArgument(name=_TASK_ARGUMENT, description="The task waiting for review.",
                                        required=True)]),
]
PROMPT_ARGUMENTS: dict[str, frozenset[str]] = {p.name: frozenset(a.name for a in p.arguments or ()) for p in PROMPTS}


def _text(text: str) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=types.TextContent(text=text))


def _embedded(uri: str, mime_type: str, text: str) -> types.PromptMessage:
    resource = types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    return types.PromptMessage(role="user", content=types.EmbeddedResource(resource=resource))


def _argument(arguments: dict[str, str] | None, name: str) -> str | None:
    value = (arguments or {}).get(name)
    return value.strip() or None if isinstance(value, str) else None


def work_instructions(task: dict[str, Any], actor: str | None, *, local: bool = True) -> str:
    """What an agent does with the task, step by step, naming the tools: the loop the evidence gate
    enforces (commit, prove each contract command, submit the proofs). ``local``: the server runs on
    the agent's machine (stdio) and offers prove_command; over HTTP the CLI proves."""
    who = f'actor "{actor}"' if actor else "your agent name as actor"
    task_id = task["id"]
    if local:
        prove = (f"call prove_command with task_id {task_id}, the generation and each command of the evidence "
                 "contract (the packet's Verification and named claims); keep each returned path")
    else:
        prove = (f"this server never runs commands: in your working directory run `anvil proof run {task_id} "
                 "--generation N --mcp URL --mcp-token-env NAME -- CMD` for each command of the evidence contract "
                 "(the packet's Next commands name them), then hand the files in with `anvil submit "
                 f"{task_id} --proof FILE ... --mcp URL --mcp-token-env NAME` (the CLI sends them) instead of step 5")
    return "\n".join([
        f"Work on task {task_id}: {task['title']} (status {task['status']}, priority {task['priority']}).",
        "",
        f"1. Claim it: call claim_task with task_id {task_id} and {who}. Keep the claim id and generation it "
        "returns; if the claim is refused because someone else holds the task, call get_next_task again.",
        "2. Do the work the packet below describes. Call renew_claim (with the generation) before the lease "
        "runs out, and submit_progress with short notes at milestones.",
        "3. When every acceptance criterion holds, commit the work on the claim branch if the claim has one (the "
        "submission hands in the branch's head commit).",
        f"4. Prove it: {prove}.",
        "5. Call submit_completion_evidence with the generation, proof_files (those paths) and the files you "
        "changed. Under the enforcing evidence gate a submission without a passing proof of every contract "
        "command is refused (submission_unproven: nothing is written, the claim stays live, and the error names "
        "what to run).",
        "",
        f"The packet is also readable at anvil://tasks/{task_id}/packet.",
    ])


def review_instructions(task: dict[str, Any]) -> str:
    """What a reviewer checks and how the decision is recorded."""
    task_id = task["id"]
    lines = [f"Review the work submitted for task {task_id}: {task['title']} (status {task['status']})."]
    if task["status"] != "needs_review":
        lines.append(f"Note: only a task in needs_review can be approved or rejected; {task_id} is {task['status']}, "
                     "so there is no submission to decide on yet.")
    lines += [
        "",
        "Check the newest completion evidence (commands run, files changed, output) in the task record below "
        "against every acceptance criterion and verification command in the packet. Then record the decision "
        f"with apply_review_decision for task_id {task_id}: approve true, or approve false with a reason and a "
        "reason_code (quality, evidence or process; only quality counts against the agent's accept rate).",
        "Nobody reviews their own work unless the project allows self-review. A rejected task goes back to "
        "drafted until a lead returns it to the queue.",
        "Read the evidence's trust level (history.evidence[0].trust): client_reported means only the implementer's "
        "own runs, signed or not; verified means someone other than the implementer re-ran every contract command "
        f"on the submitted commit. When approval requires verified proofs, run `anvil verify-task {task_id}` in a "
        "clone of the repository first (the CLI runs the commands on your machine and records their outcomes).",
    ]
    return "\n".join(lines)


class Prompts:
    """The prompt handlers of one server."""

    def __init__(self, call: Call) -> None:
        """Build prompts from the operations ``call`` runs."""
        self._call = call

    async def list(self, ctx: ServerRequestContext[Any, Any],
                   params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        """``prompts/list``: both prompts (one page)."""
        return types.ListPromptsResult(prompts=PROMPTS)

    async def get(self, ctx: ServerRequestContext[Any, Any],
                  params: types.GetPromptRequestParams) -> types.GetPromptResult:
        """``prompts/get``: the prompt built from the current state."""
        try:
            if params.name == WORK_NEXT:
                return await self._work_next(ctx, params.arguments)
            if params.name == REVIEW:
                return await self._review(ctx, params.arguments)
        except AnvilError as error:
            raise rpc_error(error, remote=ctx.request is not None) from None
        raise MCPError(INVALID_PARAMS, f"unknown prompt: anvil has {WORK_NEXT} and {REVIEW}")

    async def _work_next(self, ctx: ServerRequestContext[Any, Any],
                         arguments: dict[str, str] | None) -> types.GetPromptResult:
        actor = _argument(arguments, "actor")
        task_id = _argument(arguments, _TASK_ARGUMENT)
        if task_id is None:
            offer = await self._call(ctx, "get_next_task", {"actor": actor} if actor else {})
            if offer["task"] is None:
                reason = offer.get("reason") or "no task is ready"
                return types.GetPromptResult(description="No task to work on now", messages=[_text(
                    f"There is no task to work on right now ({reason}). Call get_next_task again later, or ask "
                    "the lead what to unblock.")])
            task_id = str(offer["task"]["id"])
        task = await self._call(ctx, "get_task", {"task_id": task_id})
        markdown = await self._call(ctx, "generate_work_packet", {"task_id": task["id"], "format": "markdown"})
        return types.GetPromptResult(
            description=f"Work on {task['id']}: {task['title']}"[:200],
            messages=[_text(work_instructions(task, actor, local=ctx.request is None)),
                      _embedded(f"anvil://tasks/{task['id']}/packet", MARKDOWN_TYPE, str(markdown["content"]))])

    async def _review(self, ctx: ServerRequestContext[Any, Any],
                      arguments: dict[str, str] | None) -> types.GetPromptResult:
        task_id = _argument(arguments, _TASK_ARGUMENT)
        if task_id is None:
            raise MCPError(INVALID_PARAMS, f"{REVIEW} needs the task_id argument (the task waiting for review)")
        task = await self._call(ctx, "get_task", {"task_id": task_id})
        markdown = await self._call(ctx, "generate_work_packet", {"task_id": task["id"], "format": "markdown"})
        return types.GetPromptResult(
            description=f"Review {task['id']}: {task['title']}"[:200],
            messages=[_text(review_instructions(task)),
                      _embedded(f"anvil://tasks/{task['id']}/packet", MARKDOWN_TYPE, str(markdown["content"])),
                      _embedded(f"anvil://tasks/{task['id']}", JSON_TYPE, compact_json(task))])
