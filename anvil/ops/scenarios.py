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

_BUNDLED: list[Step] = [*_READY, ("create_bundle", {"bundle_id": "B1", "task_ids": ["T001", "T002", "T003"],
                                                    "coordinator": "agent-1", "actor": "lead"})]
_BUNDLE_CLAIMED: list[Step] = [*_BUNDLED, ("claim_bundle", {"bundle_id": "B1", "actor": "agent-1"})]
_BUNDLE_BUILT: list[Step] = [*_BUNDLE_CLAIMED, *[
    step for task_id, files in (("T001", ["shortlink/store.py"]), ("T002", ["shortlink/validate.py"]),
                                ("T003", ["shortlink/api.py"]))
    for step in (("claim_task", {"task_id": task_id, "actor": "agent-1"}),
                 ("submit_completion_evidence", {"task_id": task_id, "actor": "agent-1", "commands_run": ["pytest -q"],
                                                 "files_changed": files}))]]
_BUNDLE_IN_REVIEW: list[Step] = [*_BUNDLE_BUILT, ("submit_bundle_progress", {
    "bundle_id": "B1", "actor": "agent-1", "phase": "done", "complete": True})]
_BUNDLE_REVIEWED: list[Step] = [*_BUNDLE_IN_REVIEW, *[
    ("record_bundle_review", {"bundle_id": "B1", "actor": reviewer, "review_round": 1, "angle": angle,
                              "decision": "approve"})
    for reviewer, angle in (("reviewer-1", "correctness"), ("reviewer-2", "integration"))]]
_BUNDLE_APPROVED: list[Step] = [*_BUNDLE_REVIEWED, ("finalize_bundle_review", {"bundle_id": "B1", "actor": "lead"})]
_BUNDLE_REPLACED: list[Step] = [*_BUNDLE_IN_REVIEW, ("record_bundle_review", {
    "bundle_id": "B1", "actor": "reviewer-1", "review_round": 1, "angle": "correctness", "decision": "reject"}),
    ("create_bundle", {"bundle_id": "B2", "task_ids": ["T001", "T002", "T003"], "coordinator": "agent-2",
                       "actor": "lead"})]

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
    "bundled": _BUNDLED,
    "bundle_claimed": _BUNDLE_CLAIMED,
    "bundle_built": _BUNDLE_BUILT,
    "bundle_in_review": _BUNDLE_IN_REVIEW,
    "bundle_reviewed": _BUNDLE_REVIEWED,
    "bundle_approved": _BUNDLE_APPROVED,
    "bundle_replaced": _BUNDLE_REPLACED,
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
