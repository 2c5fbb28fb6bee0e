"""Bootstrap, status and introspection operations."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from anvil.engine.vocab import BoardColumn, EvidenceGate, GitMode, LandingMethod, OnOff, RequireVerified
from anvil.ops.contract import MAX_WAIT_SECONDS
from anvil.ops.registry import (
    DestructiveInput,
    Example,
    MutatingInput,
    MutatingOutput,
    Operation,
    OpInput,
    OpOutput,
    register,
)

H = "anvil.ops.handlers.project"


TaskCounts = dict[str, int]  # every task status, zero when empty


class InitInput(DestructiveInput):
    name: str | None = Field(default=None, max_length=200, description="Project name (default: root folder name).")
    description: str = Field(default="", max_length=2000, description="One-line project description.")
    force: bool = Field(default=False, description="Start over when state exists (needs confirm; old state kept).")


class InitOutput(MutatingOutput):
    project_id: str
    project_name: str
    state_dir: str
    created: bool


register(Operation(
    name="init_project",
    description="Create the state for the current project. Call once, before any other tool.",
    input_model=InitInput, output_model=InitOutput, handler=f"{H}:init_project",
    surface="planning", effect="destructive", cli_path=("init",), bootstrap=True,
    cli_help="Creates the project state (event log and database) for the project at the current "
             "directory, or at ANVIL_ROOT. With --force --yes an existing state is set aside as a backup.",
    examples=(
        Example("initializes a fresh project", {"name": "Demo"}, scenario="empty"),
        Example("refuses a second initialization", {"name": "Demo"}, error="already_initialized"),
        Example("asks for confirmation before starting over", {"force": True}, error="confirmation_required"),
        Example("previews an initialization without writing", {"name": "Demo", "dry_run": True}, scenario="empty"),
    ),
))


class StatusInput(OpInput):
    prd_id: str | None = Field(default=None, max_length=100, description="Scope counts to one PRD.")


class StatusOutput(OpOutput):
    initialized: bool
    project_id: str | None
    project_name: str | None
    state_dir: str
    prd_status: str | None
    task_counts: TaskCounts
    total_tasks: int
    ready_queue_depth: int
    waiting_task_count: int  # ready, but waiting on unfinished dependencies
    active_claim_count: int
    review_trust: dict[str, Any]  # tasks waiting for review by trust level: verified, client_reported, unproven
    # The landing queue when the project lands work (else null): target, remote, and how many approved
    # tasks wait (approved), are being verified, landed, or bounced back to their implementers.
    landing: dict[str, Any] | None


register(Operation(
    name="get_project_status",
    description="Is the project initialized, and what state are its PRD and tasks in? A safe first call.",
    input_model=StatusInput, output_model=StatusOutput, handler=f"{H}:get_project_status",
    surface="execution", effect="read", cli_path=("status",), cli_names={"prd_id": "--prd"},
    examples=(
        Example("reports an uninitialized project without failing", {}, scenario="empty"),
        Example("reports counts of an initialized project", {}),
        Example("reports the project a directory selects", {"cwd": "."}),
    ),
))


class SummaryInput(OpInput):
    pass


class SummaryOutput(OpOutput):
    project_id: str
    project_name: str
    project_description: str
    prd_status: str | None
    task_counts: TaskCounts
    active_claim_count: int
    blocked_task_count: int
    ready_task_count: int
    waiting_task_count: int  # ready, but waiting on unfinished dependencies


register(Operation(
    name="get_project_summary",
    description="Project health: tasks by status, active claims, blocked and claimable counts. Call before "
                "planning a wave.",
    input_model=SummaryInput, output_model=SummaryOutput, handler=f"{H}:get_project_summary",
    surface="execution", effect="read", cli_path=("summary",), reaps=True,
    examples=(
        Example("summarizes an initialized project", {}),
        Example("fails before initialization", {}, scenario="empty", error="not_initialized"),
    ),
))


class BoardInput(OpInput):
    after_seq: int | None = Field(default=None, ge=0, description="The head event sequence you last showed: with "
                                                                  "wait_seconds, answer once the state moved past it.")
    wait_seconds: int = Field(default=0, ge=0, le=MAX_WAIT_SECONDS,
                              description="Wait up to this many seconds for a change after after_seq (woken by the "
                                          "write that makes it, not by polling).")
    column: BoardColumn | None = Field(default=None, description="Only this column's page (a state, or review for "
                                                                 "the review queue); with cursor, its next page.")
    cursor: str | None = Field(default=None, max_length=200, description="A column's next_cursor from the previous "
                                                                         "board (with column).")
    page_size: int = Field(default=50, ge=1, le=500, description="The most tasks shown per column.")


class BoardColumnPage(OpOutput):
    state: str  # a task status, or waiting (ready, dependencies not done)
    count: int  # tasks in this column in all
    shown: int  # tasks of this column in tasks
    next_cursor: str | None  # pass with column=state for the next page; null: nothing more


class BoardOutput(OpOutput):
    head: int  # the newest event sequence the board reflects
    now: str
    project: str
    tasks: list[dict[str, Any]]  # id, title, status, priority, feature_id, dependencies, claimed_by, blocked_by,
    # trust_level (of a submitted task's proofs: verified, client_reported, unproven; null before a submission)
    claims: list[dict[str, Any]]  # task_id, actor, generation, claimed_at, lease_expires_at, expired
    review_queue: list[dict[str, Any]]  # task_id, title, priority, submitted_by, submitted_at, commit_sha, trust_level
    # task_id, title, state (approved, verifying, unlandable, bounced, landed), approved_commit, landed_commit, detail
    landing_queue: list[dict[str, Any]]
    events: list[dict[str, Any]]  # newest first: seq, ts, actor, type, task_id (never payloads)
    counts: dict[str, int]
    columns: list[BoardColumnPage]  # every non-empty column with its count and where its page ends
    review_count: int  # tasks waiting for review in all (review_queue is the first page)
    review_next_cursor: str | None  # pass with column=review for the next page of the review queue
    paging: dict[str, Any]  # page_size, column, how (how to ask for the next page)


register(Operation(
    name="get_board", description="The team board in one read: tasks by status, live claims with their leases, the "
                                  "review queue, waiting tasks and recent events; can wait for the next change.",
    input_model=BoardInput, output_model=BoardOutput, handler=f"{H}:get_board", surface="planning", effect="read",
    cli_path=("board",), role="agent",
    cli_help="Shows the board: a column per status, live claims with their holder and lease countdown, the review "
             "queue, the tasks waiting on dependencies and the latest events. With --watch on a terminal it stays "
             "on screen and redraws on every change (woken by the write, not by polling); piped it prints once. Each "
             "column shows its count and first page (--page-size); --column STATE --cursor CURSOR pages one column.",
    examples=(
        Example("shows the board", {}, scenario="claimed"),
        Example("answers at once when the state is past after_seq", {"after_seq": 1, "wait_seconds": 30},
                scenario="claimed"),
        Example("shows the next page of one column", {"column": "ready", "page_size": 2}, scenario="ready"),
    ),
))


class DescribeInput(OpInput):
    pass


class CliContract(OpOutput):
    path: list[str]
    kind: str  # group or command
    flags: list[str]  # the long options this node owns


class CliSurface(OpOutput):
    commands: list[str]
    count: int
    options: dict[str, list[str]]  # command -> its long options
    contracts: list[CliContract]
    contract_count: int


class McpSurface(OpOutput):
    tools: list[str]
    execution_tools: list[str]
    count: int


class CatalogTransport(OpOutput):
    mcp: dict[str, str]  # {tool}
    cli: dict[str, str]  # {command, json_flag}


class CatalogEntry(OpOutput):
    operation_id: str
    operation_version: str  # changes exactly when this operation's contract changes
    effect: str
    surface: str
    role: str
    transport: CatalogTransport
    inputs: list[str]
    outputs: list[str]


class OperationCatalog(OpOutput):
    catalog_version: int
    operations: list[CatalogEntry]


class DescribeOutput(OpOutput):
    api_version: str  # changes exactly when the contract (operations, inputs, outputs, envelopes) changes
    engine_version: str
    # The running build (anvil.ops.buildinfo): each field found, None when unknown, never invented.
    version: str
    display_version: str
    build_kind: str  # source_checkout, package_build or unknown
    commit: str | None
    tag: str | None
    tag_distance: int | None
    dirty: bool | None
    built_at: str | None
    schema_version: int
    envelope: str
    cli: CliSurface
    mcp: McpSurface
    operation_catalog: OperationCatalog


register(Operation(
    name="describe_surface",
    description="Manifest of anvil's CLI commands and MCP tools, an operation catalogue, the build's identity, "
                "and api_version: a contract digest (c + 12 hex) to pin exactly. Needs no project.",
    input_model=DescribeInput, output_model=DescribeOutput, handler=f"{H}:describe_surface",
    surface="planning", effect="read", cli_path=("describe",),
    examples=(Example("lists the whole surface", {}, scenario="empty"),),
))


class VerifyInput(OpInput):
    pass


class VerifyOutput(OpOutput):
    ok: bool
    event_count: int
    mirror_lines: int
    chain_ok: bool
    mirror_ok: bool
    replay_ok: bool
    schema_version: int
    problems: list[str]
    problems_omitted: int


register(Operation(
    name="verify_state",
    description="Check the event log's hash chain, its events.jsonl mirror, and that replaying the log "
                "reproduces the database. Call after incidents or before backups.",
    input_model=VerifyInput, output_model=VerifyOutput, handler=f"{H}:verify_state",
    surface="planning", effect="read", cli_path=("verify",), failure_field="!ok", failure_exit=8,
    cli_help="Checks the hash chain of the event log, that events.jsonl mirrors it, and that replaying it from "
             "empty reproduces the database. Exits 8 when a problem is found.",
    examples=(
        Example("verifies a fresh project", {}),
        Example("fails before initialization", {}, scenario="empty", error="not_initialized"),
    ),
))


class RebuildInput(DestructiveInput):
    pass


class RebuildOutput(MutatingOutput):
    rebuilt: bool
    event_count: int
    partial_line_dropped: bool
    backup: str | None
    verified: bool
    problems: list[str]


register(Operation(
    name="rebuild_state",
    description="Rebuild the database from the events.jsonl log after checking its hash chain (a broken chain "
                "is refused, naming the first bad event). Call when state.db is lost or damaged.",
    input_model=RebuildInput, output_model=RebuildOutput, handler=f"{H}:rebuild_state",
    surface="planning", effect="destructive", cli_path=("rebuild",), bootstrap=True,
    failure_field="problems", failure_exit=8,
    cli_help="Rebuilds state.db by replaying events.jsonl, after checking the log's hash chain (a broken chain "
             "is refused and nothing changes). An existing database is kept beside it as a backup and needs "
             "--yes. Runs verify on the result and exits 8 if it finds a problem.",
    examples=(
        Example("rebuilds the database from the log", {"confirm": True}),
        Example("asks before replacing an existing database", {}, error="confirmation_required"),
        Example("checks the log without changing anything", {"dry_run": True, "confirm": True}),
        Example("fails without a log", {"confirm": True}, scenario="empty", error="not_initialized"),
    ),
))


class ConfigInput(MutatingInput):
    self_review: bool | None = Field(default=None, description="Let reviewers decide on their own evidence.")
    accept_rate_floor: float | None = Field(default=None, ge=0, le=1, description="Withhold offers below this "
                                                                                  "accept rate (0 disables).")
    accept_rate_window_days: int | None = Field(default=None, ge=1, le=365, description="Days of reviews the "
                                                                                        "accept rate counts.")
    review_queue_cap: int | None = Field(default=None, ge=0, description="Withhold offers while this many tasks "
                                                                         "await review (0: no cap).")
    require_fencing: bool | None = Field(default=None, description="Refuse renew, progress, submit, release and "
                                                                   "status changes of a claimed task that do not "
                                                                   "name the claim generation.")
    git_mode: GitMode | None = Field(default=None, description="What claims do in git by default: off, branch or "
                                                               "worktree.")
    evidence_gate: EvidenceGate | None = Field(default=None, description="enforcing: approval refuses unproven "
                                                                         "work; advisory: it records the gap.")
    require_verified: RequireVerified | None = Field(
        default=None, description="on: the enforcing gate accepts only verified proofs (anvil verify-task by "
                                  "someone other than the implementer); off: client_reported proofs count; auto "
                                  "(default): on when the git mode is branch or worktree.")
    land_target: str | None = Field(
        default=None, max_length=200, description="Land approved work on this branch (`anvil land`); `off` "
                                                  "stops landing. Dependencies then wait until they landed.")
    land_remote: str | None = Field(default=None, max_length=200, description="Fetch the target from and push it "
                                                                              "to this remote; `off`: the clone's "
                                                                              "own branch.")
    land_method: LandingMethod | None = Field(default=None, description="merge (default), rebase or squash.")
    land_delete_branch: OnOff | None = Field(default=None, description="on (default): landing and release delete "
                                                                       "the claim branch; off: keep it.")


class ConfigOutput(MutatingOutput):
    config: dict[str, Any]
    changed: list[str]


register(Operation(
    name="configure_project", description="Show or change the project's policy: self-review, required fencing, "
                                          "the accept-rate floor and window, the review-queue cap, the git mode of "
                                          "claims, the evidence gate and whether it requires verified proofs, the "
                                          "landing target.",
    input_model=ConfigInput, output_model=ConfigOutput, handler=f"{H}:configure_project", surface="planning",
    effect="mutating", cli_path=("config",), cli_names={"self_review": "--self-review/--no-self-review",
                                                         "require_fencing": "--require-fencing/--no-require-fencing"},
    examples=(
        Example("shows the configuration", {}),
        Example("allows self-review", {"self_review": True}),
        Example("sets an accept-rate floor and a review cap", {"accept_rate_floor": 0.5, "review_queue_cap": 20}),
        Example("rejects a floor above 1", {"accept_rate_floor": 1.5}, error="invalid_input"),
        Example("makes every claim take a worktree", {"git_mode": "worktree"}),
        Example("relaxes the evidence gate to advisory", {"evidence_gate": "advisory"}),
        Example("requires verified proofs for approval", {"require_verified": "on"}),
        Example("lands approved work on main through the origin remote",
                {"land_target": "main", "land_remote": "origin", "land_method": "merge"}),
        Example("refuses an unknown landing method", {"land_method": "octopus"}, error="invalid_input"),
    ),
))
