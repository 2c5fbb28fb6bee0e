"""Handlers of the PRD lifecycle and planning operations (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine.errors import Refused, UsageError
from anvil.engine.planning import state as plan_state
from anvil.engine.prd import lifecycle as prd_state
from anvil.engine.prd.assess import assess_prd as assess_document
from anvil.engine.prd.decisions import find_decisions as find_document_decisions
from anvil.engine.tasks import tasks_of
from anvil.ops.handlers.drafting import needs_tasks, record_draft
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import (
        AssessPrdInput,
        CheckPrdInput,
        EditDependenciesInput,
        FindDecisionsInput,
        GetDocsInput,
        ParsePrdInput,
        PlanTasksInput,
        PrdTemplateInput,
        ReviewPrdInput,
        ReviewTasksInput,
        ScoreTasksInput,
    )

    PrdInput = ParsePrdInput | AssessPrdInput | ReviewPrdInput | FindDecisionsInput | PlanTasksInput | \
        EditDependenciesInput | ScoreTasksInput | ReviewTasksInput

LLM_PROVIDER = "mcp_sampling"
"""Who drafts missing tasks: the calling MCP client's own model, asked through sampling."""


def _conn(ctx: Context) -> Any:
    return ctx.tx.conn if ctx.tx is not None else ctx.store.conn


def _prd_id(ctx: Context, args: PrdInput) -> str:
    return prd_state.resolve_prd_id(args["prd_id"], ctx.env, _conn(ctx))


def _scope(ctx: Context, args: ScoreTasksInput | ReviewTasksInput) -> str | None:
    """The PRD a scoring or review pass covers (None: every PRD).

    Raises:
        UsageError: ``invalid_input`` (both prd_id and all_prds).
        NotFound: ``prd_not_found`` (the selected PRD was never parsed).
    """
    if args["all_prds"]:
        if args["prd_id"]:
            raise UsageError("pass either prd_id or all_prds, not both", code="invalid_input")
        return None
    prd_id = _prd_id(ctx, args)
    prd_state.require_prd(_conn(ctx), prd_id)
    return prd_id


def parse_prd(ctx: Context, args: ParsePrdInput) -> dict[str, Any]:
    tx = ctx.write()
    prd_id = _prd_id(ctx, args)
    choice = prd_state.SourceChoice(args["file"], args["source"], args["source_path"])
    result = prd_state.parse(tx, ctx.location, prd_id, choice, ctx.cwd, local=not ctx.remote)
    return {**result, "prd_path": _source_identity(prd_id, args)}


def _parsed(ctx: Context, args: AssessPrdInput | FindDecisionsInput) -> tuple[str, str, Any]:
    """The selected PRD source read and parsed: its id, its text and the parse result.

    Raises:
        UsageError: ``prd_unparseable`` (no recognizable structure at all), and those of reading it.
    """
    prd_id = _prd_id(ctx, args)
    data, _ = prd_state.read_source(ctx.location, prd_id, prd_state.SourceChoice(args["file"], args["source"]),
                                    ctx.cwd, _conn(ctx))
    text, result = prd_state.parse_source(data)
    if result.document is None:
        raise UsageError("the PRD has no recognizable structure", code="prd_unparseable")
    return prd_id, text, result


def _document(ctx: Context, args: AssessPrdInput | FindDecisionsInput) -> tuple[str, Any]:
    prd_id, text, result = _parsed(ctx, args)
    return prd_id, (text, result.document)


def _source_identity(prd_id: str, args: ParsePrdInput | AssessPrdInput | FindDecisionsInput) -> str:
    """Which source a call read, as a stable name (never a path): the PRD id for its managed
    source, ``custom`` for a file or text the call named."""
    return "custom" if args["file"] or args["source"] is not None else prd_id


def assess_prd(ctx: Context, args: AssessPrdInput) -> dict[str, Any]:
    """Advisory findings on a PRD that parses; a PRD with parse errors gets its errors instead (the
    document those findings would judge is not the one the author meant)."""
    from anvil.engine.prd.source import bounded_diagnostics

    prd_id, text, result = _parsed(ctx, args)
    errors = bounded_diagnostics(result.errors)
    findings = [] if result.errors else assess_document(result.document, text)
    return {"prd_id": prd_id, "prd_source": _source_identity(prd_id, args), "advisory": True,
            "count": len(findings), "findings": findings, "errors": errors["items"], "error_count": errors["count"]}


def check_prd(ctx: Context, args: CheckPrdInput) -> dict[str, Any]:
    """Parse the named file or text and report it, recording nothing (no project needed)."""
    if not args["file"] and args["source"] is None:
        raise UsageError("name the PRD file to check: anvil prd check FILE", code="prd_file_required")
    data, _ = prd_state.read_source(ctx.location, "prd", prd_state.SourceChoice(args["file"], args["source"]),
                                    ctx.cwd)
    _, result = prd_state.parse_source(data)
    report = prd_state.parse_report(result)
    foreign = next((d.message for d in result.errors if d.code == "foreign_format"), None)
    return {"ok": result.ok, "prd_source": "custom",
            "project_name": result.document.project_name if result.document else "", **report,
            "foreign_format": foreign}


def prd_template(ctx: Context, args: PrdTemplateInput) -> dict[str, Any]:
    """The starting PRD; with ``write``, also written to that file (inside the project on a remote call)."""
    from pathlib import Path

    from anvil.engine.prd.texts import template_text, write_new_file

    text = template_text()
    written = args["write"]
    if written:
        target = Path(ctx.cwd, written).expanduser()
        if ctx.remote and not target.resolve().is_relative_to(ctx.location.root.resolve()):
            raise UsageError("the file must be inside the project this server serves", code="file_outside_project")
        write_new_file(target, text, overwrite=args["overwrite"])
    return {"template": text, "written": written or None, "format_doc": "anvil docs prd-format"}


def get_docs(ctx: Context, args: GetDocsInput) -> dict[str, Any]:
    from anvil.engine.prd.texts import TOPICS, topic_text

    title, text = topic_text(args["topic"])
    return {"topic": args["topic"], "title": title, "text": text, "topics": list(TOPICS)}


def review_prd(ctx: Context, args: ReviewPrdInput) -> dict[str, Any]:
    # The reviewer is the caller: ``actor`` and its old alias ``reviewer`` were resolved into it.
    return prd_state.review(ctx.write(), _prd_id(ctx, args), approve=args["approve"], reviewer=ctx.caller.actor,
                            notes=args["notes"], expected_revision=args["expected_revision"])


def find_decisions(ctx: Context, args: FindDecisionsInput) -> dict[str, Any]:
    prd_id, (_, doc) = _document(ctx, args)
    # An explicit file is judged on its own tasks; the managed source on the planned ones.
    tasks = [] if args["file"] or args["source"] is not None else tasks_of(ctx.store.conn, prd_id)
    return {"prd_id": prd_id, "prd_source": _source_identity(prd_id, args), **find_document_decisions(doc, tasks)}


def plan_tasks(ctx: Context, args: PlanTasksInput) -> dict[str, Any]:
    tx = ctx.write()
    prd_id = _prd_id(ctx, args)
    if args["prune_force"]:
        ctx.require_confirm(args["confirm"], "forced pruning removes tasks with recorded work")
    prd = prd_state.require_prd(tx.conn, prd_id)
    llm_generated = record_draft(ctx, tx, prd_id, ctx.prepared)
    if not llm_generated and needs_tasks(prd["document"]):
        raise Refused(_no_tasks_message(ctx, args), code="no_tasks")
    result = plan_state.plan(tx, prd_id, prune_force=args["prune_force"])
    return {**result, "llm_generated": llm_generated, "llm_provider": LLM_PROVIDER if llm_generated else None}


def _no_tasks_message(ctx: Context, args: PlanTasksInput) -> str:
    """Why a PRD with features but no tasks was not planned, and what to do."""
    if not args["use_llm"]:
        why = "the LLM backstop is off (use_llm false, --no-llm)"
    elif ctx.sampler is None:
        why = ("no model can draft them for this call: the caller is not an MCP client that declared the "
               "sampling capability (or its transport cannot carry a sampling request)")
    else:
        why = "the PRD changed while its tasks were being drafted"
    return f"the PRD has features but no tasks, and {why}: write a ## Tasks section, or plan from an MCP client " \
        "that supports sampling so its model drafts them"


def score_tasks(ctx: Context, args: ScoreTasksInput) -> dict[str, Any]:
    tx = ctx.write()
    return {**plan_state.score(tx, task_id=args["task_id"], prd_id=_scope(ctx, args)), "all_prds": args["all_prds"]}


def review_tasks(ctx: Context, args: ReviewTasksInput) -> dict[str, Any]:
    tx = ctx.write()
    return {**plan_state.review_tasks(tx, _scope(ctx, args)), "all_prds": args["all_prds"]}


def edit_dependencies(ctx: Context, args: EditDependenciesInput) -> dict[str, Any]:
    tx = ctx.write()
    return plan_state.edit_dependencies(tx, _prd_id(ctx, args), args["add"], args["remove"])
