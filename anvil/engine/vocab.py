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
BoardColumn = Literal[TaskStatus, "waiting", "review"]
"""A column of the team board: a status, ``waiting`` (ready, dependencies not done) or the review queue."""
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
DocTopic = Literal["prd-format"]  # documentation shipped in the package (``anvil docs TOPIC``)

DEFAULT_PRD = "default"

Role = Literal["agent", "reviewer", "lead", "runner"]
"""What a per-agent token may do: agent (the work loop on its own claims), reviewer (adds review
decisions and verification), lead (everything: planning, configuration, takeovers, tokens). Those
three are ordered by reach. runner stands apart: it may only read, verify and land (a CI job or a
dedicated machine), never claim, submit, review or plan."""
ROLES: tuple[str, ...] = get_args(Role)
RANKED_ROLES: tuple[str, ...] = ("agent", "reviewer", "lead")
"""The roles ordered by reach (each may do what the ones before it may); runner is not among them."""

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

TrustMode = Literal["client_reported", "verified"]
"""How far a proof is trusted. client_reported: the implementer's own run (signed or not: a signature
binds who asserted it, never that it is true). verified: an identity other than the implementer
re-ran the command itself on the exact submitted commit, in its own checkout (``anvil verify-task``)."""
TRUST_MODES: tuple[str, ...] = get_args(TrustMode)

EvidenceTrust = Literal["verified", "client_reported", "unproven"]
"""What a submission's proofs amount to: every contract command verified on the submitted commit,
proofs the implementer reported (some or all not verified), or no passing proof at all."""
EVIDENCE_TRUST: tuple[str, ...] = get_args(EvidenceTrust)

RequireVerified = Literal["on", "off", "auto"]
"""Whether approval under the enforcing gate needs verified proofs: on, off, or auto (on exactly
when the project's git mode is branch or worktree)."""

LandingMethod = Literal["merge", "rebase", "squash"]
"""How a lander puts an approved commit onto the landing target: a merge commit (a fast-forward when the
target has not moved), the branch's commits replayed onto the target, or one squashed commit."""
LAND_METHODS: tuple[str, ...] = get_args(LandingMethod)

OnOff = Literal["on", "off"]

LandingOutcome = Literal["started", "landed", "bounced"]
"""A step of landing an approval: a lander took it (verifying on the merged tree), it landed, or it bounced."""
LANDING_OUTCOMES: tuple[str, ...] = get_args(LandingOutcome)

BounceReason = Literal["conflict", "proof_failed", "stale"]
"""Why a landing bounced: the approved commit conflicts with the target, a verification command failed on the
merged tree, or the claim branch moved past the approved commit (the approval is stale)."""
BOUNCE_REASONS: tuple[str, ...] = get_args(BounceReason)

LandingState = Literal["approved", "verifying", "landed", "bounced", "unlandable"]
"""Where a task stands in the landing queue: approved (waiting), verifying (a lander holds it), landed,
bounced (back with its implementer), unlandable (its approval names no commit)."""
LANDING_STATES: tuple[str, ...] = get_args(LandingState)
