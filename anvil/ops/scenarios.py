"""Named project states that examples start from (used by the loopback suite and the docs).

Each scenario is a list of operation calls run directly, in order, on a fresh state.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

SAMPLE_PRD = str(Path(__file__).resolve().parents[1] / "engine" / "prd" / "sample.md")

Step = tuple[str, dict[str, Any]]

SAMPLE_AT = "docs/prd.md"
WRITE_SAMPLE = "@write_sample"  # not an operation: puts the sample PRD at SAMPLE_AT in the project

_INIT: list[Step] = [("init_project", {"name": "Demo"}), (WRITE_SAMPLE, {})]
_PARSED: list[Step] = [*_INIT, ("parse_prd", {"file": SAMPLE_AT})]
_APPROVED: list[Step] = [*_PARSED, ("review_prd", {"actor": "lead"}),
                         ("review_prd", {"actor": "lead", "approve": True})]
_PLANNED: list[Step] = [*_APPROVED, ("plan_tasks", {"use_llm": False})]
_SCORED: list[Step] = [*_PLANNED, ("score_tasks", {})]
_READY: list[Step] = [*_SCORED, ("review_tasks", {})]
_CLAIMED: list[Step] = [*_READY, ("claim_task", {"task_id": "T001", "actor": "agent-1"})]
_SUBMITTED: list[Step] = [*_CLAIMED, ("submit_completion_evidence", {
    "task_id": "T001", "actor": "agent-1", "commands_run": ["pytest -q"], "files_changed": ["shortlink/store.py"]})]

_UNAPPROVED: list[Step] = [*_PARSED, ("plan_tasks", {"use_llm": False}), ("score_tasks", {}), ("review_tasks", {})]

SCENARIOS: dict[str, list[Step]] = {
    "empty": [],
    "initialized": _INIT,
    "parsed": _PARSED,
    "approved": _APPROVED,
    "planned": _PLANNED,
    "scored": _SCORED,
    "ready": _READY,
    "unapproved": _UNAPPROVED,
    "claimed": _CLAIMED,
    "submitted": _SUBMITTED,
}


def build_scenario(name: str, env: Mapping[str, str], cwd: str) -> None:
    """Run the steps of scenario ``name`` directly against the state ``env`` and ``cwd`` select.

    Raises:
        KeyError: no such scenario.
        AnvilError: a step failed (the scenario no longer fits the operations).
    """
    from anvil.engine.storage.paths import project_root
    from anvil.ops.invoke import invoke

    for op_name, arguments in SCENARIOS[name]:
        if op_name == WRITE_SAMPLE:
            target = project_root(env, cwd) / SAMPLE_AT
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(Path(SAMPLE_PRD).read_bytes())
        else:
            invoke(op_name, arguments, env=env, cwd=cwd)
