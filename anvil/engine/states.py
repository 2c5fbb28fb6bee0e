"""Status vocabularies shared by the engine."""

from __future__ import annotations

TASK_STATUSES: tuple[str, ...] = (
    "proposed", "drafted", "reviewed", "ready", "claimed", "in_progress", "blocked",
    "needs_review", "accepted", "done", "rejected",
)
PRD_STATUSES: tuple[str, ...] = ("draft", "reviewed", "approved")
PRIORITY_RANK: dict[str, int] = {"low": 1, "medium": 2, "high": 3, "critical": 4}
DEFAULT_PRD = "default"
