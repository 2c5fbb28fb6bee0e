"""The LLM backstop of ``plan_tasks``: draft a ``## Tasks`` section through MCP sampling.

Sampling can take minutes, so it runs in the operation's prepare phase, before the writer lock is
taken; the handler then records the draft only if the PRD is still the revision it was drafted for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine.errors import Refused
from anvil.engine.prd import lifecycle as prd_state
from anvil.engine.prd.drafting import append_tasks, build_prompt, extract_tasks_section
from anvil.engine.storage.canonical import sha256_hex
from anvil.engine.storage.store import Transaction
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import PlanTasksInput

MAX_TOKENS = 8000


def needs_tasks(document: dict[str, Any]) -> bool:
    """The PRD has features but no tasks."""
    return bool(document["features"]) and not document["tasks"]


def prepare_plan(ctx: Context, args: PlanTasksInput) -> dict[str, Any] | None:
    """Ask the client's model for a ``## Tasks`` section when the PRD needs one (no lock held).

    Returns None when nothing is needed or the client cannot sample (the handler then refuses).

    Raises:
        Refused: ``llm_tasks_unusable`` (the client's model gave no reply, or one without usable tasks).
        SamplingDeferred: the client must be asked in a result of its own (a 2026-07-28 client).
    """
    if not args["use_llm"] or ctx.sampler is None:
        return None
    from anvil.engine.prd.lifecycle import require_prd, resolve_prd_id

    prd_id = resolve_prd_id(args["prd_id"], ctx.env, ctx.store.conn)
    prd = require_prd(ctx.store.conn, prd_id)
    if not needs_tasks(prd["document"]):
        return None
    source = prd_state.recorded_source(ctx.store.conn, prd_id)
    if source is None:  # recorded before sources were kept in the log: the managed copy, if it matches
        from anvil.engine.localread import read_named_file
        from anvil.engine.prd.source import DEFAULT_MAX_BYTES, decode_source

        source = decode_source(read_named_file(prd_state.source_path(ctx.location, prd_id), DEFAULT_MAX_BYTES,
                                               "the managed PRD source", "prd"))
        if sha256_hex(source) != prd["source_digest"]:
            raise Refused("the managed PRD source changed since it was parsed: run `anvil prd parse` first",
                          code="prd_source_changed")
    reply = ctx.sampler(build_prompt(source), MAX_TOKENS)
    if not reply:
        raise Refused("the client's model gave no reply to the request to draft the missing tasks (it declined, "
                      "failed or timed out): plan again, or write a ## Tasks section", code="llm_tasks_unusable")
    combined = append_tasks(source, extract_tasks_section(reply))
    return {"prd_id": prd_id, "revision": prd["revision"], "combined": combined}


def record_draft(ctx: Context, tx: Transaction, prd_id: str, draft: dict[str, Any] | None) -> bool:
    """Record the prepared draft as the PRD's next revision; False when there is none.

    Raises:
        Refused: the PRD moved on while the model was drafting.
    """
    if draft is None or draft["prd_id"] != prd_id:
        return False
    current = prd_state.require_prd(tx.conn, prd_id)
    if current["revision"] != draft["revision"]:
        raise Refused("the PRD changed while tasks were being drafted: plan again", code="stale_revision")
    prd_state.record_source(tx, ctx.location, prd_id, draft["combined"].encode("utf-8"), copy=True)
    return True
