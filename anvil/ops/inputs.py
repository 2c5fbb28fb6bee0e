"""Validated operation inputs, one ``TypedDict`` per operation: the static type of each handler's
input. Generated from the registry by ``python -m anvil.ops.specgen``; do not edit by hand.

Handlers import these under ``TYPE_CHECKING`` only: at run time an input is the plain dict the
validators produced, so the direct CLI path pays nothing for the types."""

from __future__ import annotations

from typing import TypedDict

from anvil.engine.vocab import (
    BoardColumn,
    BounceReason,
    BundleStatus,
    BundleVerdict,
    DocTopic,
    EvidenceCategory,
    EvidenceGate,
    GitMode,
    GraphFormat,
    GraphScope,
    LandingMethod,
    LandingOutcome,
    ManualStatus,
    OnOff,
    PacketFormat,
    RejectionReason,
    RequireVerified,
    Role,
    TargetKind,
    TaskFilter,
)


class InitProjectInput(TypedDict):
    """Input of ``init_project``."""

    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    confirm: bool
    name: str | None
    description: str
    force: bool


class GetProjectStatusInput(TypedDict):
    """Input of ``get_project_status``."""

    cwd: str | None
    prd_id: str | None


class GetProjectSummaryInput(TypedDict):
    """Input of ``get_project_summary``."""

    cwd: str | None


class GetBoardInput(TypedDict):
    """Input of ``get_board``."""

    cwd: str | None
    after_seq: int | None
    wait_seconds: int
    column: BoardColumn | None
    cursor: str | None
    page_size: int


class DescribeSurfaceInput(TypedDict):
    """Input of ``describe_surface``."""

    cwd: str | None


class VerifyStateInput(TypedDict):
    """Input of ``verify_state``."""

    cwd: str | None


class RebuildStateInput(TypedDict):
    """Input of ``rebuild_state``."""

    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    confirm: bool


class ConfigureProjectInput(TypedDict):
    """Input of ``configure_project``."""

    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    self_review: bool | None
    accept_rate_floor: float | None
    accept_rate_window_days: int | None
    review_queue_cap: int | None
    require_fencing: bool | None
    git_mode: GitMode | None
    evidence_gate: EvidenceGate | None
    require_verified: RequireVerified | None
    land_target: str | None
    land_remote: str | None
    land_method: LandingMethod | None
    land_delete_branch: OnOff | None


class ParsePrdInput(TypedDict):
    """Input of ``parse_prd``."""

    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    file: str | None
    source: str | None
    source_path: str | None
    prd_id: str | None


class AssessPrdInput(TypedDict):
    """Input of ``assess_prd``."""

    cwd: str | None
    file: str | None
    source: str | None
    prd_id: str | None


class CheckPrdInput(TypedDict):
    """Input of ``check_prd``."""

    file: str | None
    cwd: str | None
    source: str | None


class PrdTemplateInput(TypedDict):
    """Input of ``prd_template``."""

    cwd: str | None
    write: str | None
    overwrite: bool


class GetDocsInput(TypedDict):
    """Input of ``get_docs``."""

    topic: DocTopic
    cwd: str | None


class ReviewPrdInput(TypedDict):
    """Input of ``review_prd``."""

    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    approve: bool
    reviewer: str | None
    notes: str | None
    prd_id: str | None
    expected_revision: int | None


class FindDecisionsInput(TypedDict):
    """Input of ``find_decisions``."""

    cwd: str | None
    file: str | None
    source: str | None
    prd_id: str | None


class PlanTasksInput(TypedDict):
    """Input of ``plan_tasks``."""

    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    confirm: bool
    prd_id: str | None
    use_llm: bool
    prune_force: bool


class ScoreTasksInput(TypedDict):
    """Input of ``score_tasks``."""

    task_id: str | None
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    prd_id: str | None
    all_prds: bool


class ReviewTasksInput(TypedDict):
    """Input of ``review_tasks``."""

    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    prd_id: str | None
    all_prds: bool


class EditDependenciesInput(TypedDict):
    """Input of ``edit_dependencies``."""

    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    add: list[list[str]] | None
    remove: list[list[str]] | None
    prd_id: str | None


class ListTasksInput(TypedDict):
    """Input of ``list_tasks``."""

    cwd: str | None
    status: TaskFilter | None
    feature_id: str | None
    claimed_by: str | None
    prd_id: str | None
    limit: int
    cursor: str | None


class GetTaskInput(TypedDict):
    """Input of ``get_task``."""

    task_id: str
    cwd: str | None


class GetNextTaskInput(TypedDict):
    """Input of ``get_next_task``."""

    cwd: str | None
    actor: str | None
    prd_id: str | None
    max_blast: int | None
    max_review_risk: int | None
    wait_seconds: int


class GetDependencyGraphInput(TypedDict):
    """Input of ``get_dependency_graph``."""

    cwd: str | None
    scope: GraphScope
    target_id: str | None
    format: GraphFormat
    cursor: str | None


class CheckConflictsInput(TypedDict):
    """Input of ``check_conflicts``."""

    task_id: str
    proposed_files: list[str]
    cwd: str | None


class GenerateWorkPacketInput(TypedDict):
    """Input of ``generate_work_packet``."""

    task_id: str
    cwd: str | None
    format: PacketFormat


class ClaimTaskInput(TypedDict):
    """Input of ``claim_task``."""

    task_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    claimed_by: str | None
    expected_files: list[str] | None
    lease_duration_seconds: int
    git_mode: GitMode | None
    worktree_path: str | None
    git_plan: str | None
    shared_tree: bool
    expected_revision: str | None


class ClaimNextTaskInput(TypedDict):
    """Input of ``claim_next_task``."""

    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    prd_id: str | None
    max_blast: int | None
    max_review_risk: int | None
    lease_duration_seconds: int
    wait_seconds: int
    git_mode: GitMode | None
    worktree_path: str | None
    git_plan: str | None


class RenewClaimInput(TypedDict):
    """Input of ``renew_claim``."""

    task_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    target_kind: TargetKind
    generation: int | None
    claim_id: str | None
    extend_seconds: int


class ReleaseTaskInput(TypedDict):
    """Input of ``release_task``."""

    task_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    confirm: bool
    target_kind: TargetKind
    generation: int | None
    claim_id: str | None
    reason: str | None


class SubmitProgressInput(TypedDict):
    """Input of ``submit_progress``."""

    task_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    notes: str | None
    phase: str | None
    detail: str | None
    generation: int | None
    claim_id: str | None
    attestation_file: str | None
    attestation_base64: str | None


class SubmitCompletionEvidenceInput(TypedDict):
    """Input of ``submit_completion_evidence``."""

    task_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    commands_run: list[str]
    files_changed: list[str]
    output_excerpt: str | None
    pr_url: str | None
    commit_sha: str | None
    tree_sha: str | None
    category: EvidenceCategory | None
    generation: int | None
    claim_id: str | None
    proof_files: list[str] | None
    command_proof_artifacts_base64: list[str] | None


class ProveCommandInput(TypedDict):
    """Input of ``prove_command``."""

    task_id: str
    command: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    generation: int | None


class UpdateTaskStatusInput(TypedDict):
    """Input of ``update_task_status``."""

    task_id: str
    to_status: ManualStatus
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    reason: str | None
    generation: int | None
    claim_id: str | None


class ApplyReviewDecisionInput(TypedDict):
    """Input of ``apply_review_decision``."""

    task_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    approve: bool
    reviewer: str | None
    reason: str | None
    reason_code: RejectionReason | None
    quality_findings: list[str] | None
    strict: bool | None


class ApplyReviewDecisionsInput(TypedDict):
    """Input of ``apply_review_decisions``."""

    task_ids: list[str]
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    approve: bool
    reason: str | None
    reason_code: RejectionReason | None
    quality_findings: list[str] | None
    strict: bool | None


class VerifyTaskInput(TypedDict):
    """Input of ``verify_task``."""

    task_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    commit_sha: str
    tree_sha: str
    evidence_id: str | None
    result_artifacts_base64: list[str] | None


class LandTaskInput(TypedDict):
    """Input of ``land_task``."""

    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    task_ids: list[str]
    outcome: LandingOutcome
    approved_commits: list[str]
    target: str
    remote: str | None
    method: LandingMethod
    target_commit: str | None
    landed_commit: str | None
    changed_paths: list[str]
    result_artifacts_base64: list[str] | None
    reason: BounceReason | None
    conflict_paths: list[str]
    failed_command: str | None
    excerpt: str | None


class GetLandingQueueInput(TypedDict):
    """Input of ``get_landing_queue``."""

    cwd: str | None


class CreateBundleInput(TypedDict):
    """Input of ``create_bundle``."""

    bundle_id: str
    task_ids: list[str]
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    coordinator: str
    prd_id: str | None
    max_tasks: int
    max_serial_stages: int
    max_reviews: int
    max_rereviews: int
    required_angles: list[str] | None


class ListBundlesInput(TypedDict):
    """Input of ``list_bundles``."""

    cwd: str | None
    prd_id: str | None
    status: BundleStatus | None


class GetBundleInput(TypedDict):
    """Input of ``get_bundle``."""

    bundle_id: str
    cwd: str | None


class ClaimBundleInput(TypedDict):
    """Input of ``claim_bundle``."""

    bundle_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    lease_minutes: int
    shared_tree: bool


class GenerateBundlePacketInput(TypedDict):
    """Input of ``generate_bundle_packet``."""

    bundle_id: str
    cwd: str | None
    actor: str | None
    format: PacketFormat


class SubmitBundleProgressInput(TypedDict):
    """Input of ``submit_bundle_progress``."""

    bundle_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    phase: str
    detail: str | None
    member_task_ids: list[str] | None
    complete: bool
    generation: int | None
    claim_id: str | None


class RecordBundleReviewInput(TypedDict):
    """Input of ``record_bundle_review``."""

    bundle_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    review_round: int
    angle: str
    decision: BundleVerdict
    notes: str | None


class FinalizeBundleReviewInput(TypedDict):
    """Input of ``finalize_bundle_review``."""

    bundle_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool


class CheckpointBundleInput(TypedDict):
    """Input of ``checkpoint_bundle``."""

    bundle_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    commit_sha: str | None
    pr_url: str | None


class ReconcileBundleInput(TypedDict):
    """Input of ``reconcile_bundle``."""

    bundle_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    commit_sha: str | None
    pr_url: str | None
    merged: bool


class SupersedeBundleInput(TypedDict):
    """Input of ``supersede_bundle``."""

    bundle_id: str
    replacement_bundle_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool


class AddTokenInput(TypedDict):
    """Input of ``add_token``."""

    name: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    role: Role
    expires: str | None


class ListTokensInput(TypedDict):
    """Input of ``list_tokens``."""

    cwd: str | None
    name: str | None
    all: bool


class RevokeTokenInput(TypedDict):
    """Input of ``revoke_token``."""

    name: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    token_id: str | None


class AddTrustedKeyInput(TypedDict):
    """Input of ``add_trusted_key``."""

    public_key: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
    label: str | None


class ListTrustedKeysInput(TypedDict):
    """Input of ``list_trusted_keys``."""

    cwd: str | None
    all: bool


class RemoveTrustedKeyInput(TypedDict):
    """Input of ``remove_trusted_key``."""

    key_id: str
    cwd: str | None
    actor: str | None
    idempotency_key: str | None
    dry_run: bool
