"""Status vocabularies shared by the engine."""

from __future__ import annotations

TASK_STATUSES: tuple[str, ...] = (
    "proposed", "drafted", "reviewed", "ready", "claimed", "in_progress", "blocked",
    "needs_review", "accepted", "done", "rejected",
)
PRD_STATUSES: tuple[str, ...] = ("draft", "reviewed", "approved")
PRIORITY_RANK: dict[str, int] = {"low": 1, "medium": 2, "high": 3, "critical": 4}
DEFAULT_PRD = "default"

APPROVED_PRD = """EXISTS (SELECT 1 FROM prds p WHERE p.prd_id = t.prd_id AND p.status = 'approved'
                      AND p.approved_revision = p.revision AND p.approved_source_digest = p.source_digest)"""
"""SQL: task ``t``'s PRD is approved for its current revision (the claim gate; see approval_problem)."""
