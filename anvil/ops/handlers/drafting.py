"""The LLM backstop of ``plan_tasks``: draft a ``## Tasks`` section through MCP sampling."""

from __future__ import annotations

from anvil.engine import prd_state
from anvil.engine.store import Transaction
from anvil.engine.task_drafting import append_tasks, build_prompt, extract_tasks_section
from anvil.ops.runtime import Context

MAX_TOKENS = 8000


def draft_tasks(ctx: Context, tx: Transaction, prd_id: str) -> bool:
    """Ask the client's model for tasks, append them to the managed source and re-parse.

    Returns False when the client declined to sample; raises when the reply is unusable.

    Raises:
        Refused: the reply held no usable tasks (nothing is written).
    """
    if ctx.sampler is None:
        return False
    path = prd_state.source_path(ctx.location, prd_id)
    source = path.read_text(encoding="utf-8")
    reply = ctx.sampler(build_prompt(source), MAX_TOKENS)
    if not reply:
        return False
    combined = append_tasks(source, extract_tasks_section(reply))
    prd_state.record_source(tx, ctx.location, prd_id, combined.encode("utf-8"), copy=True)
    return True
