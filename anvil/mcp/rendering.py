"""The short text copy of a tool result: what it did or found, in a line or two of words.

The structured content carries the whole document (see :mod:`anvil.mcp.results`); this text is
what a host shows people, and what a host that hands its model the text gives it. Operations of
the agent's and the reviewer's loops have a sentence of their own; every other result is named by
its plain fields. No renderer may fail a call: a document it cannot read falls back to that form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

MAX_TEXT = 400
"""The longest text copy, in characters (a longer one is cut with an ellipsis)."""
SHOWN_ITEMS = 8

Document = Mapping[str, Any]


def _claim(claim: Document) -> str:
    where = f" Work in {claim['worktree_path']}." if claim.get("worktree_path") else ""
    return f"Claimed {claim.get('task_id', 'the task')}, generation {claim['generation']}.{where}"


def _claim_next(doc: Document) -> str:
    claim = doc.get("claim")
    return _claim(claim) if isinstance(claim, Mapping) else f"Nothing claimed: {doc.get('reason') or 'no task'}."


def _packet(doc: Document) -> str:
    content = doc.get("content")
    if isinstance(content, str):
        return f"Work packet of {content.split(':', 1)[0].lstrip('# ')} (markdown in content)."
    return "Work packet (JSON in content)."


def _proof(doc: Document) -> str:
    if doc.get("exit_code") is None:
        return "Dry run: the command would run in the claim's tree; nothing ran."
    verdict = "Passed" if doc.get("passed") else "Failed"
    return f"{verdict}: exit {doc['exit_code']}; the proof is at path."


def _next(brief: Any) -> str:
    return f" Next ready: {brief['id']}." if isinstance(brief, Mapping) else ""


def _evidence(doc: Document) -> str:
    gaps = doc.get("missing_claim_bound_proofs") or []
    unproven = f" Unproven: {', '.join(gaps)}." if gaps else ""
    return f"Evidence {doc['evidence_id']}: {doc['task_status']}.{unproven}" + _next(doc.get("next_ready"))


def _task(doc: Document) -> str:
    out = f"{doc['id']}: {doc['status']}, review tier {doc['review_tier']}."
    claim = doc.get("claim")
    if isinstance(claim, Mapping):
        out += f" Claimed by {claim['claimed_by']} (generation {claim['generation']})."
    evidence = ((doc.get("history") or {}).get("evidence") or [None])[0]
    if isinstance(evidence, Mapping):
        trust = (evidence.get("trust") or {}).get("trust_level", "unproven")
        out += f" Evidence {evidence['id']} by {evidence['actor']}: {trust}."
    return out


def _next_task(doc: Document) -> str:
    task = doc.get("task")
    if isinstance(task, Mapping):
        return f"Next: {task['id']} {task['title']} ({task['priority']})."
    return f"No task to take: {doc.get('reason') or 'none is ready'}."


def _tasks(doc: Document) -> str:
    rows = doc.get("tasks") or []
    shown = ", ".join(f"{row['id']} {row['status']}" for row in rows[:SHOWN_ITEMS])
    more = f", and {len(rows) - SHOWN_ITEMS} more" if len(rows) > SHOWN_ITEMS else ""
    count = doc.get("count", len(rows))
    return f"{count} task{'' if count == 1 else 's'}" + (f": {shown}{more}." if rows else ".")


def _review(doc: Document) -> str:
    return f"{doc['decision'].capitalize()}: {doc['to_status']} (proofs {doc['trust_level']})." + _next(
        doc.get("next_ready"))


def _renew(doc: Document) -> str:
    return f"Renewed until {doc['lease_expires_at']}."


def _release(doc: Document) -> str:
    return f"Released claim {doc.get('claim_id', '')}.".replace(" .", ".")


def _progress(doc: Document) -> str:
    return f"Recorded {doc['event_action']} (event {doc['seq']})."


RENDERERS: dict[str, Callable[[Document], str]] = {
    "claim_task": _claim, "claim_next_task": _claim_next, "generate_work_packet": _packet, "prove_command": _proof,
    "submit_completion_evidence": _evidence, "get_task": _task, "get_next_task": _next_task, "list_tasks": _tasks,
    "apply_review_decision": _review, "renew_claim": _renew, "release_task": _release,
    "submit_progress": _progress,
}


def _value(value: Any) -> str | None:
    """A plain field in a few words (None: not worth naming)."""
    if isinstance(value, bool | int | float):
        return str(value).lower() if isinstance(value, bool) else str(value)
    if isinstance(value, str):
        return value if len(value) <= 60 and "\n" not in value else f"{len(value)} characters"
    if isinstance(value, list):
        return ", ".join(value) if all(isinstance(v, str) and len(v) <= 20 for v in value) and len(value) <= 4 \
            else f"{len(value)} items"
    if isinstance(value, Mapping) and isinstance(value.get("id"), str):
        return value["id"]
    return None


def fields(doc: Document) -> str:
    """Any result named by its plain fields: ``key: value; ...``."""
    parts = []
    for key, value in doc.items():
        if key in ("actor_identity", "dry_run"):
            continue
        shown = _value(value)
        if shown is not None:
            parts.append(f"{key}: {shown}")
    return "; ".join(parts) + "." if parts else "Done."


def render(op_name: str, doc: Document) -> str:
    """The text copy of ``doc``, the compact result of ``op_name``."""
    renderer = RENDERERS.get(op_name, fields)
    try:
        text = renderer(doc)
    except (KeyError, TypeError, AttributeError, IndexError):
        text = fields(doc)
    if doc.get("dry_run") is True and not text.startswith("Dry run"):
        text = "Dry run, nothing written. " + text
    identity = doc.get("actor_identity")
    if isinstance(identity, Mapping):
        text += f" Acting as {identity.get('actor')} ({identity.get('how')}: named by the server, not the call)."
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"
