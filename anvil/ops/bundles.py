"""Execution bundles: a milestone of tasks under one coordinator claim and one bounded review gate."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from anvil.engine.vocab import BundleStatus, BundleVerdict, PacketFormat
from anvil.ops.registry import (
    Caller,
    Example,
    MutatingInput,
    MutatingOutput,
    Operation,
    OpInput,
    OpOutput,
    Person,
    Text,
    register,
)

H = "anvil.ops.handlers.bundles"
BUNDLE_ID = Field(min_length=1, max_length=64, description="Bundle id, e.g. B1.")
GENERATION = Field(default=None, ge=1, description="Fencing token: the coordinator claim generation you hold.")
CLAIM_ID = Field(default=None, max_length=64, description="Fencing token: the coordinator claim id you hold.")
COMMIT = Field(default=None, max_length=64, description="The commit delivered.")
PR_URL = Field(default=None, max_length=2000, description="The pull request delivered.")
Label = Annotated[str, StringConstraints(min_length=1, max_length=40)]
"""A review angle such as correctness or security."""


class BundlePolicy(OpOutput):
    max_tasks: int
    max_serial_stages: int
    max_reviews: int
    max_rereviews: int
    required_angles: list[str]


class BundleMember(OpOutput):
    task_id: str
    title: str | None
    status: str
    stage: int
    authorized: bool


class BundleClaim(OpOutput):
    id: str
    bundle_id: str
    claimed_by: str
    generation: int
    claimed_at: str
    lease_expires_at: str


class BundleVerdictRecord(OpOutput):
    round: int
    reviewer: str
    angle: str
    decision: str
    notes: str | None
    reviewed_at: str
    reviewer_role: str | None
    reviewer_authenticated: bool


class BlockingVerdict(OpOutput):
    reviewer: str
    angle: str
    decision: str


class BundleGate(OpOutput):
    round: int
    required_angles: list[str]
    covered_angles: list[str]
    missing_angles: list[str]
    independent_approvers: list[str]
    required_approvals: int
    blocking: list[BlockingVerdict]
    reviews_left: int
    rounds_left: int
    passed: bool


class Checkpoint(OpOutput):
    number: int
    commit_sha: str | None
    pr_url: str | None
    source: str
    actor: str
    recorded_at: str


class Delivery(OpOutput):
    commit_sha: str | None
    pr_url: str | None
    merged: bool
    checkpoints: list[Checkpoint]


class BundleDetail(OpOutput):
    id: str
    prd_id: str
    status: str
    coordinator: str
    policy: BundlePolicy
    members: list[BundleMember]
    claim: BundleClaim | None
    review_round: int
    reviews: list[BundleVerdictRecord]
    gate: BundleGate
    delivery: Delivery
    supersedes: str | None
    superseded_by: str | None
    created_at: str
    created_by: str


class MemberBlockers(OpOutput):
    task_id: str
    status: str
    blockers: list[str]


class BundleOutput(MutatingOutput):
    bundle: BundleDetail


class CreateInput(MutatingInput):
    bundle_id: str = BUNDLE_ID
    task_ids: list[Text] = Field(min_length=1, max_length=12, description="Member tasks, each after those it "
                                                                          "depends on.")
    coordinator: Person = Field(description="Who coordinates the bundle (claims it).")
    prd_id: str | None = Field(default=None, max_length=64, description="The members' PRD (default: the only or "
                                                                         "default PRD).")
    max_tasks: int = Field(default=12, ge=1, le=12, description="Most member tasks.")
    max_serial_stages: int = Field(default=6, ge=1, le=6, description="Most dependency stages among members.")
    max_reviews: int = Field(default=3, ge=2, le=3, description="Most verdicts per review round.")
    max_rereviews: int = Field(default=1, ge=0, le=1, description="Re-review rounds after changes are requested.")
    required_angles: list[Label] | None = Field(default=None, max_length=3, description="Angles that must approve "
                                                                                      "(default: correctness, "
                                                                                      "integration).")


register(Operation(
    name="create_bundle", description="Plan a bundle: ordered member tasks of one PRD under one coordinator, "
                                      "with a bounded policy (tasks, serial stages, reviews, re-reviews, angles).",
    input_model=CreateInput, output_model=BundleOutput, handler=f"{H}:create_bundle", surface="planning",
    effect="mutating", cli_path=("bundle", "create"), positional=("bundle_id", "task_ids"), needs_caller=True,
    cli_names={"prd_id": "--prd", "required_angles": "--angle"},
    cli_help="Plans a bundle of tasks: listed in dependency order, at most 12 in at most 6 serial stages. While "
             "the bundle is live its members are offered to nobody; its coordinator claims the bundle to work "
             "them, and independent reviewers accept them together.",
    examples=(
        Example("plans a bundle of three tasks", {"bundle_id": "B1", "task_ids": ["T001", "T002", "T003"],
                                                   "coordinator": "agent-1", "actor": "lead"}, scenario="ready"),
        Example("refuses members out of dependency order", {"bundle_id": "B2", "task_ids": ["T003", "T001"],
                                                            "coordinator": "agent-1", "actor": "lead"},
                scenario="ready", error="bundle_member_invalid"),
        Example("refuses a task another bundle holds", {"bundle_id": "B2", "task_ids": ["T002"],
                                                        "coordinator": "agent-2", "actor": "lead"},
                scenario="bundled", error="bundle_member_taken"),
    ),
))


class ListInput(OpInput):
    prd_id: str | None = Field(default=None, max_length=64, description="Only bundles of this PRD.")
    status: BundleStatus | None = Field(default=None, description="Only bundles in this status.")


class BundleRow(OpOutput):
    id: str
    prd_id: str
    status: str
    coordinator: str
    task_count: int
    review_round: int
    claimed_by: str | None
    generation: int | None
    lease_expires_at: str | None
    superseded_by: str | None


class ListOutput(OpOutput):
    bundles: list[BundleRow]
    count: int


register(Operation(
    name="list_bundles", description="Bundles in id order with status, coordinator, holder and size.",
    input_model=ListInput, output_model=ListOutput, handler=f"{H}:list_bundles", surface="execution",
    effect="read", cli_path=("bundle", "list"), cli_names={"prd_id": "--prd"},
    examples=(
        Example("lists the bundles", {}, scenario="bundle_claimed"),
        Example("lists the bundles in review", {"status": "in_review"}, scenario="bundle_in_review"),
    ),
))


class GetInput(OpInput):
    bundle_id: str = BUNDLE_ID


class GetOutput(OpOutput):
    bundle: BundleDetail


register(Operation(
    name="get_bundle", description="One bundle in full: policy, members, coordinator claim, verdicts, review "
                                   "gate and delivery.",
    input_model=GetInput, output_model=GetOutput, handler=f"{H}:get_bundle", surface="execution", effect="read",
    cli_path=("bundle", "show"), positional=("bundle_id",),
    examples=(
        Example("shows a claimed bundle", {"bundle_id": "B1"}, scenario="bundle_claimed"),
        Example("fails for an unknown bundle", {"bundle_id": "B9"}, scenario="bundled", error="bundle_not_found"),
    ),
))


class ClaimInput(MutatingInput):
    bundle_id: str = BUNDLE_ID
    lease_minutes: int = Field(default=240, ge=1, le=7 * 1440, description="Lease length.")
    shared_tree: bool = Field(default=False, description="Acknowledge that members share the caller's tree (git "
                                                         "mode off or branch).")


class ClaimOutput(MutatingOutput):
    bundle: BundleDetail
    claim: BundleClaim
    coordinator: str
    warnings: list[str]
    continuations: dict[str, Any]  # renew, release, progress, complete: {tool, arguments, argv}


register(Operation(
    name="claim_bundle", description="Take a bundle's coordinator claim (leased, fenced by generation); "
                                     "authorizes its members. Returns the next calls to make.",
    input_model=ClaimInput, output_model=ClaimOutput, handler=f"{H}:claim_bundle", surface="execution",
    effect="mutating", cli_path=("bundle", "claim"), positional=("bundle_id",), needs_caller=True,
    examples=(
        Example("claims a planned bundle", {"bundle_id": "B1", "actor": "agent-1"}, scenario="bundled"),
        Example("refuses another actor's bundle", {"bundle_id": "B1", "actor": "agent-2"}, scenario="bundled",
                error="not_coordinator"),
        Example("refuses a held bundle", {"bundle_id": "B1", "actor": "agent-1"}, scenario="bundle_claimed",
                error="already_claimed"),
    ),
))


class PacketInput(OpInput):
    bundle_id: str = BUNDLE_ID
    actor: Caller | None = Field(default=None, description="Who reads it (default: ANVIL_ACTOR).")
    format: PacketFormat = Field(default="markdown", description="Output form.")


class PacketOutput(OpOutput):
    bundle_id: str
    format: str
    content: str | dict[str, Any]


register(Operation(
    name="generate_bundle_packet", description="The coordinator's brief: members by stage with criteria, what "
                                               "blocks completion, the review gate and the next steps.",
    input_model=PacketInput, output_model=PacketOutput, handler=f"{H}:generate_bundle_packet",
    surface="execution", effect="read", cli_path=("bundle", "packet"), positional=("bundle_id",),
    examples=(
        Example("renders markdown", {"bundle_id": "B1"}, scenario="bundle_claimed"),
        Example("renders JSON", {"bundle_id": "B1", "format": "json"}, scenario="bundle_claimed"),
    ),
))


class ProgressInput(MutatingInput):
    bundle_id: str = BUNDLE_ID
    phase: str = Field(min_length=1, max_length=100, description="Label such as build, tests, done.")
    detail: str | None = Field(default=None, max_length=8000, description="More about the phase.")
    member_task_ids: list[Text] | None = Field(default=None, max_length=12, description="Members this is about.")
    complete: bool = Field(default=False, description="Every member has completion evidence: open the review.")
    generation: int | None = GENERATION
    claim_id: str | None = CLAIM_ID


class ProgressOutput(MutatingOutput):
    bundle: BundleDetail
    recorded: bool
    ready: bool
    blockers: list[MemberBlockers]


register(Operation(
    name="submit_bundle_progress", description="Coordinator progress on a bundle; complete opens the review "
                                               "round once every member has completion evidence.",
    input_model=ProgressInput, output_model=ProgressOutput, handler=f"{H}:submit_bundle_progress",
    surface="execution", effect="mutating", cli_path=("bundle", "progress"), positional=("bundle_id",),
    needs_caller=True, cli_names={"member_task_ids": "--member"},
    examples=(
        Example("records progress", {"bundle_id": "B1", "actor": "agent-1", "phase": "build", "generation": 1},
                scenario="bundle_claimed"),
        Example("completes a bundle whose members are done", {"bundle_id": "B1", "actor": "agent-1",
                                                               "phase": "done", "complete": True},
                scenario="bundle_built"),
        Example("refuses to complete with unfinished members", {"bundle_id": "B1", "actor": "agent-1",
                                                                "phase": "done", "complete": True},
                scenario="bundle_claimed", error="bundle_not_ready"),
        Example("fences out an old generation", {"bundle_id": "B1", "actor": "agent-1", "phase": "build",
                                                 "generation": 5}, scenario="bundle_claimed",
                error="stale_generation"),
    ),
))


class ReviewInput(MutatingInput):
    bundle_id: str = BUNDLE_ID
    review_round: int = Field(ge=1, le=10, description="The open review round.")
    angle: Label = Field(description="What the verdict covers, e.g. correctness.")
    decision: BundleVerdict = Field(description="The verdict; needs_changes and reject block the round.")
    notes: str | None = Field(default=None, max_length=4000, description="Why.")


class ReviewOutput(MutatingOutput):
    bundle: BundleDetail
    gate: BundleGate
    reopened: list[str]


register(Operation(
    name="record_bundle_review", description="One independent verdict on an angle of a bundle's open review "
                                             "round. Implementers and repeat reviewers are refused.",
    input_model=ReviewInput, output_model=ReviewOutput, handler=f"{H}:record_bundle_review", surface="execution",
    effect="mutating", cli_path=("bundle", "review"), positional=("bundle_id",), role="reviewer",
    needs_caller=True, cli_names={"review_round": "--round"},
    examples=(
        Example("records an approval", {"bundle_id": "B1", "actor": "reviewer-1", "review_round": 1,
                                        "angle": "correctness", "decision": "approve"}, scenario="bundle_in_review"),
        Example("refuses an implementer", {"bundle_id": "B1", "actor": "agent-1", "review_round": 1,
                                           "angle": "correctness", "decision": "approve"},
                scenario="bundle_in_review", error="bundle_reviewer_not_independent"),
        Example("refuses a second verdict from one reviewer", {"bundle_id": "B1", "actor": "Reviewer-1",
                                                               "review_round": 1, "angle": "tests",
                                                               "decision": "approve"},
                scenario="bundle_reviewed", error="bundle_duplicate_reviewer"),
        Example("refuses a round that is not open", {"bundle_id": "B1", "actor": "reviewer-3", "review_round": 2,
                                                     "angle": "correctness", "decision": "approve"},
                scenario="bundle_in_review", error="bundle_review_round_invalid"),
    ),
))


class FinalizeInput(MutatingInput):
    bundle_id: str = BUNDLE_ID


class FinalizeOutput(MutatingOutput):
    bundle: BundleDetail
    gate: BundleGate
    accepted: list[str]
    evidence_gaps: dict[str, list[str]]  # per member: what its evidence contract lacks (accepted by an advisory gate)


register(Operation(
    name="finalize_bundle_review", description="Close a passed review gate: every member is accepted (done) and "
                                               "the bundle approved.",
    input_model=FinalizeInput, output_model=FinalizeOutput, handler=f"{H}:finalize_bundle_review",
    surface="execution", effect="mutating", cli_path=("bundle", "finalize"), positional=("bundle_id",),
    role="reviewer", needs_caller=True,
    examples=(
        Example("finalizes a passed gate", {"bundle_id": "B1", "actor": "lead"}, scenario="bundle_reviewed"),
        Example("refuses a gate missing approvals", {"bundle_id": "B1", "actor": "lead"},
                scenario="bundle_in_review", error="bundle_gate_not_passed"),
        Example("refuses members whose verification commands have no passing proof",
                {"bundle_id": "B1", "actor": "lead"}, scenario="bundle_unproven", error="claim_unproven"),
    ),
))


class CheckpointInput(MutatingInput):
    bundle_id: str = BUNDLE_ID
    commit_sha: str | None = COMMIT
    pr_url: str | None = PR_URL


class CheckpointOutput(MutatingOutput):
    bundle_id: str
    status: str
    checkpoint: Checkpoint


register(Operation(
    name="checkpoint_bundle", description="Record where a bundle was delivered: a commit, a pull request, or both.",
    input_model=CheckpointInput, output_model=CheckpointOutput, handler=f"{H}:checkpoint_bundle",
    surface="execution", effect="mutating", cli_path=("bundle", "checkpoint"), positional=("bundle_id",),
    needs_caller=True, cli_names={"commit_sha": "--commit", "pr_url": "--pr"},
    examples=(
        Example("records a commit", {"bundle_id": "B1", "actor": "agent-1", "commit_sha": "a1b2c3d4e5f6"},
                scenario="bundle_approved"),
        Example("needs a commit or a pull request", {"bundle_id": "B1", "actor": "agent-1"},
                scenario="bundle_approved", error="delivery_reference_required"),
    ),
))


class ReconcileInput(MutatingInput):
    bundle_id: str = BUNDLE_ID
    commit_sha: str | None = COMMIT
    pr_url: str | None = PR_URL
    merged: bool = Field(default=False, description="The delivery was merged.")


class ReconcileOutput(MutatingOutput):
    bundle: BundleDetail
    changes: list[str]


register(Operation(
    name="reconcile_bundle", description="State a bundle's delivery (reference, merged); records only what is "
                                         "new, so repeating it changes nothing.",
    input_model=ReconcileInput, output_model=ReconcileOutput, handler=f"{H}:reconcile_bundle", surface="execution",
    effect="mutating", cli_path=("bundle", "reconcile"), positional=("bundle_id",), needs_caller=True,
    cli_names={"commit_sha": "--commit", "pr_url": "--pr"},
    examples=(
        Example("marks an approved bundle merged", {"bundle_id": "B1", "actor": "agent-1",
                                                    "pr_url": "https://example.com/pr/7", "merged": True},
                scenario="bundle_approved"),
        Example("refuses to merge a bundle still in review", {"bundle_id": "B1", "actor": "agent-1",
                                                              "commit_sha": "a1b2c3d", "merged": True},
                scenario="bundle_in_review", error="bundle_wrong_status"),
    ),
))


class SupersedeInput(MutatingInput):
    bundle_id: str = BUNDLE_ID
    replacement_bundle_id: str = Field(min_length=1, max_length=64, description="The bundle replacing it.")


class SupersedeOutput(MutatingOutput):
    bundle: BundleDetail
    reopened: list[str]


register(Operation(
    name="supersede_bundle", description="Mark a bundle superseded by its replacement, keeping its history; "
                                         "shared members awaiting review reopen.",
    input_model=SupersedeInput, output_model=SupersedeOutput, handler=f"{H}:supersede_bundle", surface="execution",
    effect="mutating", cli_path=("bundle", "supersede"), positional=("bundle_id", "replacement_bundle_id"),
    needs_caller=True,
    examples=(
        Example("supersedes a bundle", {"bundle_id": "B1", "replacement_bundle_id": "B2", "actor": "lead"},
                scenario="bundle_replaced"),
        Example("refuses to replace a bundle by itself", {"bundle_id": "B1", "replacement_bundle_id": "B1",
                                                          "actor": "lead"}, scenario="bundled",
                error="bundle_supersede_invalid"),
    ),
))
