"""Named project states that examples start from (used by the loopback suite and the docs).

Each scenario is a list of operation calls run directly, in order, on a fresh state.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

SAMPLE_PRD = str(Path(__file__).resolve().parents[1] / "engine" / "prd" / "sample.md")

Step = tuple[str, dict[str, Any]]

_INIT: list[Step] = [("init_project", {"name": "Demo"})]
_PARSED: list[Step] = [*_INIT, ("parse_prd", {"file": SAMPLE_PRD})]
_APPROVED: list[Step] = [*_PARSED, ("review_prd", {"reviewer": "lead"}),
                         ("review_prd", {"reviewer": "lead", "approve": True})]
_PLANNED: list[Step] = [*_APPROVED, ("plan_tasks", {"use_llm": False}), ("score_tasks", {})]
_READY: list[Step] = [*_PLANNED, ("review_tasks", {})]
_CLAIMED: list[Step] = [*_READY, ("claim_task", {"task_id": "T001", "actor": "agent-1"})]
_SUBMITTED: list[Step] = [*_CLAIMED, ("submit_completion_evidence", {
    "task_id": "T001", "actor": "agent-1", "commands_run": ["pytest -q"], "files_changed": ["src/app.py"]})]

SCENARIOS: dict[str, list[Step]] = {
    "empty": [],
    "initialized": _INIT,
    "parsed": _PARSED,
    "approved": _APPROVED,
    "planned": _PLANNED,
    "ready": _READY,
    "claimed": _CLAIMED,
    "submitted": _SUBMITTED,
}


def build_scenario(name: str, env: Mapping[str, str], cwd: str) -> None:
    """Run the steps of scenario ``name`` directly against the state ``env`` and ``cwd`` select.

    Raises:
        KeyError: no such scenario.
        AnvilError: a step failed (the scenario no longer fits the operations).
    """
    from anvil.ops.runtime import invoke

    for op_name, arguments in SCENARIOS[name]:
        invoke(op_name, arguments, env=env, cwd=cwd)
