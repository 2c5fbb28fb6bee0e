"""Vocabularies: every status, category and code the engine speaks, defined once.

Each vocabulary is a ``Literal`` type (what the operation models use, so schemas and validation
follow) with its values as a tuple derived from it (what the engine and the SQL use).
"""

from __future__ import annotations

from typing import Literal, get_args

TaskStatus = Literal["proposed", "drafted", "reviewed", "ready", "claimed", "in_progress", "blocked",
                     "needs_review", "accepted", "done", "rejected"]
TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)

TaskFilter = Literal[TaskStatus, "waiting"]
"""What ``list_tasks`` filters on: a status, or ``waiting`` (ready, but dependencies not all done)."""

ManualStatus = Literal["drafted", "ready", "blocked", "in_progress"]
"""The targets of a manual status change (update_task_status); everything else has its own operation."""
MANUAL_STATUSES: tuple[str, ...] = get_args(ManualStatus)

PrdStatus = Literal["draft", "reviewed", "approved"]
PRD_STATUSES: tuple[str, ...] = get_args(PrdStatus)

Priority = Literal["low", "medium", "high", "critical"]
PRIORITIES: tuple[str, ...] = get_args(Priority)
PRIORITY_RANK: dict[str, int] = {name: rank for rank, name in enumerate(PRIORITIES, 1)}

EvidenceCategory = Literal["completion", "diagnostic", "blocked", "advisory", "promotion_quality"]
EVIDENCE_CATEGORIES: tuple[str, ...] = get_args(EvidenceCategory)
COMPLETING_CATEGORIES = frozenset({"completion", "promotion_quality"})
"""Evidence categories that can complete a task (the others keep a record only)."""

RejectionReason = Literal["quality", "evidence", "process"]
REJECTION_REASONS: tuple[str, ...] = get_args(RejectionReason)
"""Only ``quality`` rejections count against an agent's accept rate."""

QUALITY_FINDINGS: tuple[str, ...] = ("correctness", "tests", "regression", "security", "performance",
                                     "maintainability", "documentation", "scope")
"""What a reviewer found wrong with the work itself; a rejection naming any counts as quality."""

ReviewDecision = Literal["accepted", "rejected"]

GraphScope = Literal["all", "feature", "task"]
GraphFormat = Literal["json", "mermaid", "dot"]
PacketFormat = Literal["markdown", "json"]
Severity = Literal["error", "warning"]
DecisionKind = Literal["needs_decision", "open_question", "missing_field"]

DEFAULT_PRD = "default"

Role = Literal["agent", "reviewer", "lead"]
"""What a per-agent token may do: agent (the work loop on its own claims), reviewer (adds review
decisions), lead (everything: planning, configuration, takeovers, tokens). Ordered by reach."""
ROLES: tuple[str, ...] = get_args(Role)

IdentitySource = Literal["token", "declared", "default"]
"""How a caller's name was established: a verified token, a name the caller gave (an actor input
or ANVIL_ACTOR), or nobody named (recorded as ``anvil``)."""

TokenStatus = Literal["active", "expired", "revoked"]

TargetKind = Literal["task", "bundle"]
"""What a claim operation (renew_claim, release_task) names: a task, or a bundle's coordinator claim."""

BundleStatus = Literal["planned", "active", "in_review", "changes_requested", "approved", "merged",
                       "replan_required", "superseded"]
BUNDLE_STATUSES: tuple[str, ...] = get_args(BundleStatus)
FINISHED_BUNDLE_STATUSES = frozenset({"merged", "superseded"})
"""A bundle in one of these no longer holds its members: they can join another bundle."""

BundleVerdict = Literal["approve", "reject", "needs_changes"]
"""A bundle reviewer's verdict: approve; needs_changes (rework, then a re-review round); reject (the
bundle as planned cannot pass: it must be replanned and superseded)."""

GitMode = Literal["off", "branch", "worktree"]
"""What a claim does in git: nothing, switch the checkout to the claim branch, or add a worktree."""
GIT_MODES: tuple[str, ...] = get_args(GitMode)

EvidenceGate = Literal["enforcing", "advisory"]
"""Whether approval refuses work whose evidence contract is unproven, or records the gap."""
EVIDENCE_GATES: tuple[str, ...] = get_args(EvidenceGate)

TrustMode = Literal["claim_owner_self_attested", "configured_issuer_verified"]
"""How far a proof is trusted: unsigned (the claim owner's word), or signed by a key on the trust list."""
