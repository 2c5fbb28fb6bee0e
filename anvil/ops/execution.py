"""The execution loop: find, claim, renew, report, submit, review."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from anvil.engine.vocab import (
    QUALITY_FINDINGS,
    EvidenceCategory,
    EvidenceTrust,
    GitMode,
    GraphFormat,
    GraphScope,
    ManualStatus,
    PacketFormat,
    RejectionReason,
    TargetKind,
    TaskFilter,
)
from anvil.engine.work.continuation import proof_file
from anvil.ops.contract import MAX_WAIT_SECONDS
from anvil.ops.registry import (
    Caller,
    DestructiveInput,
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
from anvil.ops.scenarios import VERIFY_COMMAND

TASKS = "anvil.ops.handlers.tasks"
CLAIMING = "anvil.ops.handlers.claiming"
REPORTING = "anvil.ops.handlers.reporting"
TASK_ID = Field(min_length=1, max_length=64, description="Task id, e.g. T001.")
GENERATION = Field(default=None, ge=1, description="Fencing token: the claim generation you hold.")
CLAIM_ID = Field(default=None, max_length=64, description="Fencing token: the claim id you hold.")
PRD_ID = Field(default=None, max_length=64, description="Only tasks of this PRD.")
WAIT = Field(default=0, ge=0, le=MAX_WAIT_SECONDS,
             description="If nothing is claimable, wait up to this many seconds for a task; woken by the write "
                         "that frees one, not by polling. 0: answer at once.")
TARGET_KIND_HELP = "bundle: task_id names a bundle's coordinator claim."


Scores = dict[str, int]  # complexity, parallelizability, context_load, blast_radius, review_risk, agent_suitability


class Task(OpOutput):
    id: str
    prd_id: str
    feature_id: str | None
    title: str
    description: str
    status: str
    priority: str
    type: str | None
    likely_files: list[str]
    dependencies: list[str]
    acceptance_criteria: list[str]
    verification: list[str]
    scores: Scores | None
    review_tier: str
    blocked_by: list[str]  # dependencies not done yet: a ready task waits for them (shown as "waiting")


class Claim(OpOutput):
    id: str
    task_id: str
    claimed_by: str
    generation: int
    claimed_at: str
    lease_expires_at: str
    expected_files: list[str]
    task_revision: str | None  # what proofs bind to: a digest of the task's content, and the PRD revision
    prd_revision: int | None
    branch: str | None  # the claim branch (null without git)
    worktree_path: str | None  # the claim's worktree (worktree mode)
    git_metadata: dict[str, Any] | None  # mode, canonical_root, claim_start_sha, branch, target_path, base_ref
    attestation_context: dict[str, Any] | None  # repository_id, claim_start_sha, expected_paths with baselines
    continuation: dict[str, Any]  # the exact next commands: cd, prove, attest_progress, commit, submit, renew


class LiveClaim(Claim):
    expired: bool  # the lease ran out; the next write anywhere returns the task to the pool


class TaskRow(OpOutput):
    id: str
    prd_id: str
    feature_id: str | None
    title: str
    status: str
    priority: str
    dependencies: list[str]
    review_tier: str
    claimed_by: str | None
    claim_expired: bool
    blocked_by: list[str]


class ClaimOutput(Claim, MutatingOutput):
    pass


class TaskBrief(OpOutput):
    id: str
    title: str
    priority: str


class ListInput(OpInput):
    status: TaskFilter | None = Field(default=None, description="Only tasks in this status (ready: startable; "
                                                               "waiting: dependencies not done).")
    feature_id: str | None = Field(default=None, max_length=64, description="Only tasks of this feature.")
    claimed_by: Person | None = Field(default=None, description="Only tasks this actor holds.")
    prd_id: str | None = PRD_ID
    limit: int = Field(default=100, ge=1, le=1000, description="Page size.")
    cursor: str | None = Field(default=None, max_length=200, description="next_cursor of the previous page.")


class ListOutput(OpOutput):
    tasks: list[TaskRow]
    count: int
    next_cursor: str | None


register(Operation(
    name="list_tasks", description="Task summary rows by status, feature or holder, in id order, a page at a "
                                   "time (follow next_cursor until null).",
    input_model=ListInput, output_model=ListOutput, handler=f"{TASKS}:list_tasks", surface="execution", effect="read",
    cli_path=("list",), cli_names={"prd_id": "--prd", "feature_id": "--feature"},
    examples=(
        Example("lists ready tasks", {"status": "ready"}, scenario="ready"),
        Example("pages through tasks", {"limit": 2, "cursor": "after:T002"}, scenario="ready"),
        Example("lists what an agent holds", {"claimed_by": "agent-1"}, scenario="claimed"),
        Example("rejects a foreign cursor", {"cursor": "bogus"}, scenario="ready", error="invalid_cursor"),
    ),
))


class GetTaskInput(OpInput):
    task_id: str = TASK_ID


class TaskDetail(Task):
    revision: str  # what the task asks for, as a digest: pass it as claim_task's expected_revision
    claim: LiveClaim | None
    history: dict[str, Any]  # newest first: evidence, reviews (with rejection reasons), progress notes


register(Operation(
    name="get_task", description="One task in full: criteria, verification, files, scores, live claim, recent "
                                 "evidence, reviews and notes. Call before claiming or reviewing.",
    input_model=GetTaskInput, output_model=TaskDetail, handler=f"{TASKS}:get_task", surface="execution",
    effect="read", cli_path=("show",), positional=("task_id",),
    examples=(
        Example("shows a ready task", {"task_id": "T001"}, scenario="ready"),
        Example("shows a claimed task with its claim", {"task_id": "T001"}, scenario="claimed"),
        Example("fails for an unknown task", {"task_id": "T999"}, scenario="ready", error="task_not_found"),
    ),
))


class NextInput(OpInput):
    actor: Caller | None = Field(default=None, description="Who asks; their accept rate governs the offer "
                                                             "(default: ANVIL_ACTOR, or the token's name).")
    prd_id: str | None = PRD_ID
    max_blast: int | None = Field(default=None, ge=1, le=5, description="Highest confirmed blast_radius to offer.")
    max_review_risk: int | None = Field(default=None, ge=1, le=5, description="Highest confirmed review_risk to "
                                                                            "offer.")
    wait_seconds: int = WAIT


class ConflictWarning(OpOutput):
    file: str
    task_id: str
    status: str


class OfferedTask(Task):
    conflict_warnings: list[ConflictWarning]  # advisory: tasks under way or in review that share a likely file


class NextOutput(OpOutput):
    task: OfferedTask | None
    reason: str | None
    governor: dict[str, Any]  # accept-rate governor report; see docs/reference.md


register(Operation(
    name="get_next_task", description="The best task to work on now (ready, unblocked, no conflicts), or null "
                                      "with a reason. First step of the work loop.",
    input_model=NextInput, output_model=NextOutput, handler=f"{CLAIMING}:get_next_task", surface="execution",
    effect="read", cli_path=("next",), reaps=True, cli_names={"prd_id": "--prd", "wait_seconds": "--wait"},
    quiet_field="task", wait_field="task",
    examples=(
        Example("offers the top ready task", {"actor": "agent-1"}, scenario="ready"),
        Example("waits up to a minute for a claimable task (here one is ready)", {"actor": "agent-1",
                                                                                 "wait_seconds": 60},
                scenario="ready"),
        Example("skips tasks whose files are held", {"actor": "agent-2"}, scenario="claimed"),
        Example("answers null on an empty queue", {}, scenario="initialized"),
        Example("respects a blast-radius ceiling", {"max_blast": 1}, scenario="ready"),
    ),
))


class GraphInput(OpInput):
    scope: GraphScope = Field(default="all", description="What to include.")
    target_id: str | None = Field(default=None, max_length=64, description="Its feature or task id.")
    format: GraphFormat = Field(default="json", description="mermaid/dot: also the graph as that text.")
    cursor: str | None = Field(default=None, max_length=200, description="paging.next_cursor")


class Node(OpOutput):
    id: str
    title: str
    status: str
    priority: str
    feature_id: str | None
    landed: bool  # its approved work is on the landing target (the project lands work)
    blocked_by: list[str]


class GraphOutput(OpOutput):
    scope: str
    target_id: str | None
    nodes: list[Node]
    edges: list[dict[str, str]]
    ready_to_claim: list[str]  # the first page of them (paging.ready_count in all)
    critical_path: list[str]  # the heaviest chain of unfinished tasks (complexity-weighted), first to last
    format: str
    diagram: str | None  # this page as Mermaid or DOT text, with states and the critical path marked
    paging: dict[str, Any]  # page_size, shown, node_count, edge_count, ready_count, counts (by state),
    # next_cursor (pass as cursor for the next page of nodes; null: the last) and how


register(Operation(
    name="get_dependency_graph", description="Tasks and dependency edges (from dependency to dependent) with the "
                                             "set claimable now. Call to plan a parallel wave.",
    input_model=GraphInput, output_model=GraphOutput, handler=f"{TASKS}:get_dependency_graph", surface="execution",
    effect="read", cli_path=("graph",), cli_names={"target_id": "--target"},
    examples=(
        Example("shows the whole graph", {}, scenario="ready"),
        Example("shows one task and what it needs", {"scope": "task", "target_id": "T007"}, scenario="ready"),
        Example("draws the graph for GitHub (Mermaid)", {"format": "mermaid"}, scenario="claimed"),
        Example("draws the graph for Graphviz (dot -Tsvg)", {"format": "dot"}, scenario="ready"),
        Example("needs a target for a feature scope", {"scope": "feature"}, scenario="ready", error="target_required"),
    ),
))


class ConflictsInput(OpInput):
    task_id: str = TASK_ID
    proposed_files: list[Text] = Field(min_length=1, max_length=1000, description="Files you expect to change.")


class Conflict(OpOutput):
    file: str
    claim_id: str
    claimed_by: str
    task_id: str


class ConflictsOutput(OpOutput):
    task_id: str
    conflicts: list[Conflict]


register(Operation(
    name="check_conflicts", description="Which of these files other agents' live claims expect to change. Call "
                                        "before claiming with expected files.",
    input_model=ConflictsInput, output_model=ConflictsOutput, handler=f"{TASKS}:check_conflicts", surface="execution",
    effect="read", cli_path=("conflicts",), positional=("task_id", "proposed_files"),
    examples=(
        Example("finds a file held by another claim", {"task_id": "T004", "proposed_files": ["shortlink/store.py"]},
                scenario="claimed"),
        Example("finds nothing for free files", {"task_id": "T002", "proposed_files": ["docs/x.md"]},
                scenario="claimed"),
    ),
))


class PacketInput(OpInput):
    task_id: str = TASK_ID
    format: PacketFormat = Field(default="markdown", description="Output form.")


class PacketOutput(OpOutput):
    task_id: str
    format: str
    content: str | dict[str, Any]


register(Operation(
    name="generate_work_packet", description="The task's work packet: intent, criteria, verification, non-goals, "
                                             "open dependencies, live claim. Call after claiming.",
    input_model=PacketInput, output_model=PacketOutput, handler=f"{TASKS}:generate_work_packet", surface="execution",
    effect="read", cli_path=("packet",), positional=("task_id",),
    examples=(
        Example("renders markdown", {"task_id": "T001"}, scenario="claimed"),
        Example("renders JSON", {"task_id": "T003", "format": "json"}, scenario="ready"),
        Example("fails for an unknown task", {"task_id": "T999"}, scenario="ready", error="task_not_found"),
    ),
))


class ClaimInput(MutatingInput):
    task_id: str = TASK_ID
    claimed_by: Caller | None = Field(default=None, description="Alias of actor (who claims).")
    expected_files: list[Text] | None = Field(default=None, max_length=1000, description="Files you will change "
                                                                                         "(default: likely files).")
    lease_duration_seconds: int = Field(default=900, ge=1, le=7 * 86400, description="Lease length.")
    git_mode: GitMode | None = Field(default=None, description="Default: the project's.")
    worktree_path: str | None = Field(default=None, max_length=4096, description="Worktree location.")
    git_plan: str | None = Field(default=None, max_length=16384, description="Set by the CLI; omit.")
    shared_tree: bool = Field(default=False, description="Work in the shared tree, never a worktree.")
    expected_revision: str | None = Field(default=None, max_length=64, description="The task's revision as "
                                                                                     "read; refused if it changed.")


register(Operation(
    name="claim_task", description="Lease a ready task exclusively. Returns the claim id, generation (the "
                                   "fencing token) and lease end.",
    input_model=ClaimInput, output_model=ClaimOutput, handler=f"{CLAIMING}:claim_task", surface="execution",
    effect="mutating", cli_path=("claim",), positional=("task_id",), needs_caller=True,
    cli_names={"expected_files": "--file", "lease_duration_seconds": "--lease"},
    cli_help="Takes an exclusive lease on a ready task. In a git checkout, --branch switches the checkout to the "
             "claim branch agent/<task>-<slug> (refused over uncommitted tracked changes, or while another claim "
             "works in that checkout) and --worktree[=PATH] adds a worktree for it beside the main checkout; "
             "without either, the project's git mode decides (`anvil config --git-mode`, default off). If the "
             "git step fails, the claim is released and only what this call created is removed.",
    examples=(
        Example("claims a ready task", {"task_id": "T001", "actor": "agent-1"}, scenario="ready"),
        Example("refuses a task another agent holds", {"task_id": "T001", "actor": "agent-2"}, scenario="claimed",
                error="already_claimed"),
        Example("refuses a task waiting on dependencies", {"task_id": "T003", "actor": "agent-1"},
                scenario="ready", error="dependencies_pending"),
        Example("refuses while the PRD is not approved", {"task_id": "T001", "actor": "agent-1"},
                scenario="unapproved", error="prd_not_approved"),
        Example("refuses a look-alike name", {"task_id": "T001", "actor": "\u0430gent-1"}, scenario="ready",
                error="invalid_actor"),
        Example("refuses two names for one claimant", {"task_id": "T001", "actor": "agent-1",
                                                       "claimed_by": "agent-2"}, scenario="ready",
                error="caller_conflict"),
        Example("claims with git left alone for this claim", {"task_id": "T001", "actor": "agent-1",
                                                              "git_mode": "off"}, scenario="ready"),
        Example("claims in the shared tree", {"task_id": "T001", "actor": "agent-1", "shared_tree": True},
                scenario="ready"),
    ),
))


class ClaimNextInput(MutatingInput):
    prd_id: str | None = PRD_ID
    max_blast: int | None = Field(default=None, ge=1, le=5, description="Highest confirmed blast_radius to take.")
    max_review_risk: int | None = Field(default=None, ge=1, le=5, description="Highest confirmed review_risk to "
                                                                            "take.")
    lease_duration_seconds: int = Field(default=900, ge=1, le=7 * 86400, description="Lease length.")
    wait_seconds: int = WAIT
    git_mode: GitMode | None = Field(default=None, description="Default: the project's.")
    worktree_path: str | None = Field(default=None, max_length=4096, description="Worktree location.")
    git_plan: str | None = Field(default=None, max_length=16384, description="Set by the CLI; omit.")


class ClaimNextOutput(MutatingOutput):
    claim: Claim | None
    reason: str | None


register(Operation(
    name="claim_next_task", description="Find the best task and claim it atomically, so swarm agents never race "
                                        "for it. Null claim with a reason when none.",
    input_model=ClaimNextInput, output_model=ClaimNextOutput, handler=f"{CLAIMING}:claim_next_task",
    surface="execution",
    effect="mutating", cli_path=("claim-next",), cli_names={"prd_id": "--prd", "lease_duration_seconds": "--lease",
                                                            "wait_seconds": "--wait"},
    needs_caller=True,
    quiet_field="claim", wait_field="claim",
    examples=(
        Example("claims the top ready task", {"actor": "agent-1"}, scenario="ready"),
        Example("waits up to a minute for a claimable task (here one is ready)", {"actor": "agent-1",
                                                                                 "wait_seconds": 60},
                scenario="ready"),
        Example("claims the next free task while another is held", {"actor": "agent-2"}, scenario="claimed"),
        Example("answers null when nothing is claimable", {"actor": "agent-1"}, scenario="initialized"),
    ),
))


class RenewInput(MutatingInput):
    task_id: str = TASK_ID
    target_kind: TargetKind = Field(default="task", description=TARGET_KIND_HELP)
    generation: int | None = GENERATION
    claim_id: str | None = CLAIM_ID
    extend_seconds: int = Field(default=900, ge=1, le=7 * 86400, description="New lease length from now.")


class RenewOutput(MutatingOutput):
    renewed: bool
    claim_id: str
    generation: int
    lease_expires_at: str
    progress: dict[str, Any] | None  # the accepted attestation this renewal consumed (each is consumed once)


register(Operation(
    name="renew_claim", description="Extend your lease (heartbeat). Call every few minutes while working; a "
                                    "stale generation is refused.",
    input_model=RenewInput, output_model=RenewOutput, handler=f"{CLAIMING}:renew_claim", surface="execution",
    effect="mutating", cli_path=("renew",), positional=("task_id",), cli_names={"extend_seconds": "--extend"},
    needs_caller=True,
    examples=(
        Example("renews a live claim", {"task_id": "T001", "actor": "agent-1", "generation": 1}, scenario="claimed"),
        Example("fences out an old generation", {"task_id": "T001", "actor": "agent-1", "generation": 7},
                scenario="claimed", error="stale_generation"),
        Example("refuses another actor", {"task_id": "T001", "actor": "agent-2"}, scenario="claimed",
                error="not_owner"),
        Example("renews whatever the name's case", {"task_id": "T001", "actor": "Agent-1", "generation": 1},
                scenario="claimed"),
        Example("renews a bundle's coordinator claim", {"task_id": "B1", "target_kind": "bundle", "actor": "agent-1",
                                                        "generation": 1}, scenario="bundle_claimed"),
    ),
))


class ReleaseInput(DestructiveInput):
    task_id: str = TASK_ID
    target_kind: TargetKind = Field(default="task", description=TARGET_KIND_HELP)
    generation: int | None = GENERATION
    claim_id: str | None = CLAIM_ID
    reason: str | None = Field(default=None, max_length=2000, description="Why the task goes back.")


class ReleaseOutput(MutatingOutput):
    released: bool
    claim_id: str
    generation: int


register(Operation(
    name="release_task", description="Give a claimed task back to the ready pool. Releasing another actor's "
                                     "claim needs confirm.",
    input_model=ReleaseInput, output_model=ReleaseOutput, handler=f"{CLAIMING}:release_task", surface="execution",
    effect="destructive", cli_path=("release",), positional=("task_id",), needs_caller=True,
    examples=(
        Example("releases your claim", {"task_id": "T001", "actor": "agent-1", "reason": "blocked upstream"},
                scenario="claimed"),
        Example("needs confirmation to release another's claim", {"task_id": "T001", "actor": "lead"},
                scenario="claimed", error="confirmation_required"),
        Example("takes over with confirmation", {"task_id": "T001", "actor": "lead", "confirm": True},
                scenario="claimed"),
        Example("fails without a claim", {"task_id": "T002", "actor": "agent-1"}, scenario="ready",
                error="no_active_claim"),
        Example("releases a bundle's coordinator claim", {"task_id": "B1", "target_kind": "bundle",
                                                          "actor": "agent-1"}, scenario="bundle_claimed"),
        Example("never releases a task named like the bundle", {"task_id": "B1", "actor": "agent-1"},
                scenario="bundle_claimed", error="task_not_found"),
    ),
))


class ProgressInput(MutatingInput):
    task_id: str = TASK_ID
    notes: str | None = Field(default=None, min_length=1, max_length=8000,
                              description="What happened (needed unless an attestation is sent).")
    phase: str | None = Field(default=None, max_length=100, description="Label such as build, tests.")
    detail: str | None = Field(default=None, max_length=8000, description="More about the phase.")
    generation: int | None = GENERATION
    claim_id: str | None = CLAIM_ID
    attestation_file: str | None = Field(default=None, max_length=4096, description="`anvil attest` output file.")
    attestation_base64: str | None = Field(default=None, max_length=90000, description="Attestation, base64.")


class ProgressOutput(MutatingOutput):
    recorded: bool
    task_id: str
    seq: int
    generation: int | None
    event_action: str  # progress.noted, or progress.attested for a verified attestation
    attestation: dict[str, Any] | None  # digest, generation, kind, trust_mode, issuer_id, changed_paths, commit


register(Operation(
    name="submit_progress", description="Add a note to the task's history (status unchanged). On a claimed task "
                                        "only the holder may write.",
    input_model=ProgressInput, output_model=ProgressOutput, handler=f"{REPORTING}:submit_progress", surface="execution",
    effect="mutating", cli_path=("progress",), positional=("task_id",), needs_caller=True,
    base64_files={"attestation_file": "attestation_base64"},
    examples=(
        Example("records a note on a held task", {"task_id": "T001", "actor": "agent-1", "notes": "schema done",
                                                   "phase": "build", "generation": 1}, scenario="claimed"),
        Example("refuses a stale generation", {"task_id": "T001", "actor": "agent-1", "notes": "late",
                                                "generation": 9}, scenario="claimed", error="stale_generation"),
        Example("refuses an attestation on a claim without git", {"task_id": "T001", "actor": "agent-1",
                                                                  "generation": 1, "attestation_base64": "e30="},
                scenario="claimed", error="proof_invalid"),
    ),
))


class EvidenceInput(MutatingInput):
    task_id: str = TASK_ID
    commands_run: list[Text] = Field(default_factory=list, max_length=200,
                                     description="Commands you ran (proofs add theirs).")
    files_changed: list[Text] = Field(default_factory=list, max_length=5000, description="Files you changed.")
    output_excerpt: str | None = Field(default=None, max_length=20000, description="Tail of the output.")
    pr_url: str | None = Field(default=None, max_length=2000, description="The pull request.")
    commit_sha: str | None = Field(default=None, max_length=64, description="The commit (git modes: the CLI reads "
                                                                          "it).")
    tree_sha: str | None = Field(default=None, max_length=64, description="Its tree.")
    category: EvidenceCategory | None = Field(
        default="completion", description="completion hands in; the others keep the claim.")
    generation: int | None = GENERATION
    claim_id: str | None = CLAIM_ID
    proof_files: list[Text] | None = Field(default=None, max_length=50, description="`anvil proof run` files.")
    command_proof_artifacts_base64: list[Annotated[str, StringConstraints(max_length=90000)]] | None = Field(
        default=None, max_length=50, description="Proof artifacts, base64.")


class EvidenceOutput(MutatingOutput):
    evidence_id: str
    task_id: str
    task_status: str
    claim_id: str
    generation: int
    claim_ended: bool  # completion evidence ends the claim; a note (diagnostic, blocked, advisory) keeps it
    commands_run: list[str]
    claim_bound_command_proofs: list[dict[str, Any]]  # accepted proofs: digest, trust_mode, issuer_id, command...
    hook_command_proofs: list[dict[str, Any]]  # always empty: anvil runs no hooks
    missing_claim_bound_proofs: list[str]  # contract commands without a passing proof here (advisory gate only)
    missing_legacy_evidence: list[str]  # contract commands not even listed in commands_run
    commit_sha: str | None  # the commit handed in (a git-bound claim: the claim branch's head)
    next_ready: TaskBrief | None


register(Operation(
    name="submit_completion_evidence", description="Hand in work for review with proof_files (prove_command): "
                                                   "ends your claim, returns the next task.",
    remote_description="Hand in work. No command runs here: `anvil proof run T --mcp URL -- CMD`, submit "
                       "--proof F.",
    input_model=EvidenceInput, output_model=EvidenceOutput, handler=f"{REPORTING}:submit_completion_evidence",
    surface="execution", effect="mutating", cli_path=("submit",), positional=("task_id",), needs_caller=True,
    cli_help="Hands in the work for review with the proofs of its verification commands (--proof FILE from `anvil "
             "proof run`; the claim's continuation names each command and file). Under the enforcing evidence gate "
             "(the default) completion evidence without a passing proof of every contract command is refused and the "
             "claim stays live; an advisory gate accepts it and reports the gap (missing_claim_bound_proofs). On a "
             "claim with --branch or --worktree the CLI binds the claim branch's head commit and tree (what "
             "the review decides on and a verifier re-proves): commit your work there first; tracked "
             "changes that are not committed are refused, and so is a head still at the claim-start commit under "
             "the enforcing gate. The claim ends; a --category other than completion only records a note.",
    cli_names={"commands_run": "--command", "files_changed": "--file", "output_excerpt": "--excerpt",
               "pr_url": "--pr", "commit_sha": "--commit", "tree_sha": "--tree", "proof_files": "--proof"},
    base64_files={"proof_files": "command_proof_artifacts_base64"},
    examples=(
        Example("submits the proofs of the verification commands (after `anvil proof run`)", {
            "task_id": "T001", "actor": "agent-1", "generation": 1, "files_changed": ["shortlink/store.py"],
            "proof_files": [proof_file("T001", 1, VERIFY_COMMAND)]}, scenario="proved"),
        Example("refuses completion evidence without a passing proof (enforcing gate; the claim stays live)", {
            "task_id": "T001", "actor": "agent-1", "commands_run": ["pytest -q"], "generation": 1},
                scenario="claimed", error="submission_unproven"),
        Example("hands in commands without proofs under an advisory gate (the gap is reported)", {
            "task_id": "T001", "actor": "agent-1", "commands_run": ["pytest -q"],
            "files_changed": ["shortlink/store.py"], "generation": 1}, scenario="claimed_advisory"),
        Example("records a diagnostic note and keeps the claim", {
            "task_id": "T001", "actor": "agent-1", "commands_run": ["pytest -q -x"], "category": "diagnostic",
            "output_excerpt": "1 failed: the schema lacks an index", "generation": 1}, scenario="claimed"),
        Example("refuses without a claim", {"task_id": "T002", "actor": "agent-1", "commands_run": ["pytest"]},
                scenario="ready", error="no_active_claim"),
        Example("refuses an artifact that is not a proof", {"task_id": "T001", "actor": "agent-1", "generation": 1,
                                                            "command_proof_artifacts_base64": ["bm90IGEgcHJvb2Y="]},
                scenario="claimed", error="proof_invalid"),
    ),
))


class ProveInput(MutatingInput):
    task_id: str = TASK_ID
    command: str = Field(min_length=1, max_length=4096)  # one of the contract's: the description says so
    generation: int | None = GENERATION


class ProveOutput(MutatingOutput):
    task_id: str
    generation: int
    command: str
    exit_code: int | None  # null: a dry run, nothing ran (a run stops after an hour: killed, exit -9)
    passed: bool
    duration_ms: int
    output_excerpt: str  # a failed run: the output's last 1,000 characters; a passing run: its last line
    path: str | None  # the proof file (its digest and signer are inside), relative to the call's directory: pass it
    # in proof_files


register(Operation(
    name="prove_command", description="Run a command of your claim's evidence contract in its tree as a proof "
                                      "(local server only); pass the returned path in submit's proof_files.",
    input_model=ProveInput, output_model=ProveOutput, handler="anvil.ops.handlers.proving:prove_command",
    prepare="anvil.ops.handlers.proving:prepare_proof", surface="execution", effect="mutating",
    cli_path=("prove",), positional=("task_id", "command"), needs_caller=True, local_only=True,
    failure_field="!passed", failure_exit=5,
    cli_help="The MCP tool an agent of a local (stdio) server proves with: runs one command of the task's evidence "
             "contract in the claim's tree with the runner of `anvil proof run` (argv, its own process group, "
             "a one-hour timeout, bounded output, the signing key kept out) and writes the proof where the claim's "
             "continuation names it. An HTTP server never runs commands and refuses (proof_needs_local_run): "
             "there, `anvil proof run ... --mcp URL` proves and `anvil submit --proof FILE --mcp URL` sends it. "
             "Exits 5 when the command failed.",
    examples=(
        Example("proves the verification command in the claim's tree", {
            "task_id": "T001", "actor": "agent-1", "generation": 1, "command": VERIFY_COMMAND}, scenario="worked"),
        Example("refuses a command that is not in the task's contract", {
            "task_id": "T001", "actor": "agent-1", "command": "rm -rf /"}, scenario="claimed",
                error="proof_command_not_in_contract"),
        Example("refuses without a claim", {"task_id": "T002", "actor": "agent-1", "command": "pytest -q"},
                scenario="ready", error="no_active_claim"),
    ),
))


class StatusInput(MutatingInput):
    task_id: str = TASK_ID
    to_status: ManualStatus  # positional: its choices say it all
    reason: str | None = Field(default=None, max_length=2000, description="Why.")
    generation: int | None = GENERATION
    claim_id: str | None = CLAIM_ID


class StatusOutput(MutatingOutput):
    task_id: str
    from_status: str
    to_status: str


register(Operation(
    name="update_task_status", description="Manual changes: drafted<->ready, or block/unblock a task you "
                                           "hold. Else: claim, submit.",
    input_model=StatusInput, output_model=StatusOutput, handler=f"{REPORTING}:update_task_status", surface="execution",
    effect="mutating", cli_path=("task-status",), positional=("task_id", "to_status"), needs_caller=True,
    examples=(
        Example("blocks a claimed task", {"task_id": "T001", "to_status": "blocked", "actor": "agent-1",
                                          "reason": "waiting on a key", "generation": 1}, scenario="claimed"),
        Example("fences out an old generation", {"task_id": "T001", "to_status": "blocked", "actor": "agent-1",
                                                 "generation": 7}, scenario="claimed", error="stale_generation"),
        Example("sends a ready task back to drafted", {"task_id": "T002", "to_status": "drafted", "actor": "lead"},
                scenario="ready"),
        Example("refuses other transitions", {"task_id": "T001", "to_status": "in_progress", "actor": "lead"},
                scenario="ready", error="transition_not_allowed"),
    ),
))


class ReviewInput(MutatingInput):
    task_id: str = TASK_ID
    approve: bool = Field(description="Approve (done) or reject (back to drafted).")
    # reason_code, quality_findings and strict are described once, in the server instructions (SHARED_FIELDS).
    reviewer: Caller | None = Field(default=None, description="Alias of actor (who decides).")
    reason: str | None = Field(default=None, max_length=4000, description="Required when rejecting.")
    reason_code: RejectionReason | None = Field(
        default=None, description="Rejection kind; only quality counts against the accept rate (evidence needs a "
                                  "proof gap, process a change outside the claim's files).")
    quality_findings: list[Text] | None = Field(
        default=None, max_length=8, description="What is wrong with the work, for a rejection (which then counts as "
                                                "quality): " + ", ".join(QUALITY_FINDINGS) + ".")
    strict: bool | None = Field(default=None, description="true: approval needs a passing proof of every "
                                                          "verification command even under an advisory evidence "
                                                          "gate; null or false: the project's gate.")


class Rejection(OpOutput):
    category: str  # quality, evidence or process; only quality counts against the author's accept rate
    counting: bool
    reason: str | None
    evidence_id: str | None
    author: str | None
    reviewed_at: str
    basis: list[str]  # the recorded facts an evidence or process category rests on (an unproven gap, a change
    # outside the claim's files); an assertion none holds for is quality
    next_step: str  # what happens to the task now (back in drafted until a lead returns it to the queue)


class ReviewOutput(MutatingOutput):
    task_id: str
    decision: str
    from_status: str
    to_status: str
    reviewer: str
    evidence_id: str
    rejection: Rejection | None
    rejection_metrics: dict[str, Any] | None  # the author's accept-rate governor as of the decision
    reason_code: str | None  # the recorded rejection kind (evidence/process that no recorded fact backs: quality)
    evidence_gaps: list[str]  # what the evidence contract still lacks (recorded by an advisory gate)
    quality_findings: list[str]  # the findings a rejection recorded
    commit_sha: str | None  # the commit decided on (what a lander merges)
    trust_level: EvidenceTrust  # what the proofs amounted to: verified, client_reported or unproven
    next_ready: TaskBrief | None


register(Operation(
    name="apply_review_decision", description="Approve submitted work (done) or reject it with a reason (back to "
                                              "drafted); never your own evidence.",
    input_model=ReviewInput, output_model=ReviewOutput, handler=f"{REPORTING}:apply_review_decision",
    surface="execution",  # a reviewer's loop (get_task, the review_submission prompt, this) needs no planning tools
    effect="mutating", cli_path=("apply",), positional=("task_id",), cli_names={"approve": "--approve/--reject"},
    role="reviewer", needs_caller=True,
    examples=(
        Example("approves submitted work", {"task_id": "T001", "approve": True, "actor": "lead"},
                scenario="submitted"),
        Example("rejects with a reason", {"task_id": "T001", "approve": False, "actor": "lead",
                                          "reason": "tests missing", "reason_code": "quality"}, scenario="submitted"),
        Example("refuses self-review", {"task_id": "T001", "approve": True, "actor": "agent-1"},
                scenario="submitted", error="self_review_forbidden"),
        Example("refuses self-review spelled differently", {"task_id": "T001", "approve": True, "actor": "AGENT-1"},
                scenario="submitted", error="self_review_forbidden"),
        Example("refuses a reviewer other than the caller", {"task_id": "T001", "approve": True, "actor": "lead",
                                                             "reviewer": "agent-7"},
                scenario="submitted", error="reviewer_not_caller"),
        Example("refuses a task not in review", {"task_id": "T002", "approve": True, "actor": "lead"},
                scenario="ready", error="not_in_review"),
        Example("refuses work whose verification commands have no passing proof",
                {"task_id": "T001", "approve": True, "actor": "lead"}, scenario="unproven", error="claim_unproven"),
        Example("rejects with typed findings (a quality rejection)",
                {"task_id": "T001", "approve": False, "actor": "lead", "reason": "no test of a taken code",
                 "quality_findings": ["tests", "correctness"]}, scenario="submitted"),
        Example("holds an advisory project to the proofs when strict",
                {"task_id": "T001", "approve": True, "actor": "lead", "strict": True}, scenario="unproven_advisory",
                error="claim_unproven"),
        Example("counts an evidence rejection of unproven work as evidence",
                {"task_id": "T001", "approve": False, "actor": "lead", "reason": "no proof",
                 "reason_code": "evidence"}, scenario="unproven"),
    ),
))


class BatchReviewInput(MutatingInput):
    task_ids: list[Text] = Field(min_length=1, max_length=100, description="The tasks to decide, in order.")
    approve: bool = Field(description="Approve them all (done) or reject them all (back to drafted).")
    reason: str | None = Field(default=None, max_length=4000, description="Required when rejecting.")
    reason_code: RejectionReason | None = Field(default=None, description="Rejection kind, for every rejection.")
    quality_findings: list[Text] | None = Field(default=None, max_length=8, description="What is wrong, for a "
                                                                                         "rejection.")
    strict: bool | None = Field(default=None, description="true: approval needs a passing proof of every "
                                                          "verification command whatever the gate.")


class BatchDecision(OpOutput):
    task_id: str
    decision: str
    from_status: str
    to_status: str
    reviewer: str
    evidence_id: str
    rejection: Rejection | None
    rejection_metrics: dict[str, Any] | None
    reason_code: str | None
    evidence_gaps: list[str]
    quality_findings: list[str]
    commit_sha: str | None
    trust_level: EvidenceTrust


class BatchRefusal(OpOutput):
    task_id: str
    code: str  # the error code the single decision would have raised
    message: str


class BatchReviewOutput(MutatingOutput):
    decided: list[BatchDecision]  # one per task decided, in order (as apply returns it); each its own event
    refused: list[BatchRefusal]  # tasks left as they were: nothing was written for them
    decided_count: int
    refused_count: int
    next_ready: TaskBrief | None


register(Operation(
    name="apply_review_decisions", description="Approve or reject several submitted tasks in one call: each "
                                               "decision its own event, a task refused leaves nothing written.",
    input_model=BatchReviewInput, output_model=BatchReviewOutput, handler=f"{REPORTING}:apply_review_decisions",
    surface="planning", effect="mutating", cli_path=("apply-batch",), positional=("task_ids",),
    cli_names={"approve": "--approve/--reject"}, role="reviewer", needs_caller=True,
    cli_help="Decides a batch of tasks waiting for review the way `anvil apply` decides one, in one transaction "
             "(one writer lock): each decision is its own event with the same checks; a task that would be refused "
             "(not in review, self-review, unproven) is listed under refused with its code and nothing is written "
             "for it, while the others are decided.",
    examples=(
        Example("approves a batch and reports the task it refused", {"task_ids": ["T001", "T002"], "approve": True,
                                                                     "actor": "lead"}, scenario="submitted"),
        Example("rejects a batch with one reason", {"task_ids": ["T001"], "approve": False, "actor": "lead",
                                                    "reason": "tests missing", "reason_code": "quality"},
                scenario="submitted"),
    ),
))
