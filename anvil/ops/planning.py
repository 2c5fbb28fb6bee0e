"""PRD lifecycle and planning operations."""

from __future__ import annotations

from pydantic import Field

from anvil.engine.prd.source import DEFAULT_MAX_BYTES
from anvil.engine.vocab import DecisionKind, DocTopic, Severity
from anvil.ops.registry import (
    Caller,
    DestructiveInput,
    Example,
    MutatingInput,
    MutatingOutput,
    Operation,
    OpInput,
    OpOutput,
    register,
)

H = "anvil.ops.handlers.planning"
PRD_ID = Field(default=None, max_length=64, description="PRD id (default: ANVIL_PRD, then the default PRD).")
FILE = Field(default=None, max_length=4096, description="Read this file instead of the managed PRD source (the CLI "
                                                       "reads it and sends its text; a server reads only files "
                                                       "inside its project).")
SOURCE = Field(default=None, max_length=DEFAULT_MAX_BYTES, description="The PRD markdown itself, instead of a file "
                                                                       "(what the CLI sends for --file).")
LOCAL_FILES = {"file": "source"}


class Diagnostic(OpOutput):
    severity: Severity
    line: int
    code: str
    message: str


class ParseInput(MutatingInput):
    file: str | None = FILE
    source: str | None = SOURCE
    source_path: str | None = Field(default=None, max_length=4096,
                                    description="Where the source text was read from (the CLI fills it in for "
                                                "--file): remembered, so a parse without a file re-reads it.")
    prd_id: str | None = PRD_ID


class ParseReport(OpOutput):
    """What a parse found: counts, and at most 20 located diagnostics in all (errors first)."""

    requirement_count: int
    feature_count: int
    task_count: int
    errors: list[Diagnostic]
    error_count: int
    errors_shown: int
    errors_omitted: int
    errors_truncated: bool
    error_messages_truncated: int
    warnings: list[Diagnostic]
    warning_count: int
    warnings_shown: int
    warnings_omitted: int
    warnings_truncated: bool
    warning_messages_truncated: int


class ParseOutput(MutatingOutput, ParseReport):
    prd_id: str
    prd_status: str | None
    revision: int
    recorded: bool
    demoted: bool
    project_renamed: str | None  # the PRD's "# Project:" name, taken because init was given no name
    prd_path: str  # the source's identity: the PRD id for its managed source, "custom" for a file or text
    source_file: str | None  # the project file the text came from, re-read by the next parse without a file
    source_notice: str | None  # a parse without a file: which file it re-read, and whether the managed copy differed


register(Operation(
    name="parse_prd", description="Parse the PRD markdown into requirements, features and tasks and record the "
                                  "revision. Call after writing or editing the PRD; errors come back, not raised.",
    input_model=ParseInput, output_model=ParseOutput, handler=f"{H}:parse_prd", surface="planning",
    effect="mutating", cli_path=("prd", "parse"), cli_names={"prd_id": "--prd"}, local_files=LOCAL_FILES,
    failure_field="error_count", failure_exit=2,
    cli_help="Parses --file (which is then copied to the managed source in the state directory), or without "
             "--file the file the PRD was last parsed from (saying when the managed copy differs from it), else "
             "the managed source. A clean first parse records revision 1; a changed source records a new "
             "revision, and a material change demotes an approved PRD to draft. Parse errors are reported "
             "(exit 2) and nothing is recorded.",
    examples=(
        Example("parses the sample PRD", {"file": "docs/prd.md"}),
        Example("reparsing an unchanged source records nothing", {"file": "docs/prd.md"}, scenario="parsed"),
        Example("fails when there is no PRD source", {}, error="prd_source_missing"),
        Example("fails before initialization", {}, scenario="empty", error="not_initialized"),
        Example("refuses a file the CLI cannot read", {"file": "missing.md"}, error="local_file_missing"),
    ),
))


class AssessInput(OpInput):
    file: str | None = FILE
    source: str | None = SOURCE
    prd_id: str | None = PRD_ID


class Finding(OpOutput):
    id: str
    category: str
    severity: str
    location: str
    message: str
    challenge_question: str


class AssessOutput(OpOutput):
    prd_id: str
    prd_source: str  # the PRD id for its managed source, "custom" for a file or text
    advisory: bool
    count: int
    findings: list[Finding]  # empty while the PRD has parse errors: fix those first
    errors: list[Diagnostic]  # the parse errors (at most 20 shown), as parse_prd reports them
    error_count: int


register(Operation(
    name="assess_prd", description="Advisory review of the PRD: ambiguities, untestable criteria and gaps, each "
                                   "with a question to ask (its parse errors instead, while it has any). Read-only.",
    input_model=AssessInput, output_model=AssessOutput, handler=f"{H}:assess_prd", surface="planning",
    effect="read", cli_path=("prd", "assess"), cli_names={"prd_id": "--prd"}, local_files=LOCAL_FILES,
    examples=(
        Example("assesses the sample PRD", {"file": "docs/prd.md"}),
        Example("assesses the managed source", {}, scenario="parsed"),
        Example("fails when there is no PRD source", {}, error="prd_source_missing"),
    ),
))


class CheckInput(OpInput):
    file: str | None = Field(default=None, max_length=4096, description="The PRD file to check (the CLI reads it "
                                                                         "and sends its text).")
    source: str | None = SOURCE


class CheckOutput(ParseReport):
    ok: bool  # no errors: `anvil prd parse` would record it
    prd_source: str  # "custom": the file or text the call named
    project_name: str
    foreign_format: str | None  # the one message for a PRD in another tool's format (Task Master, spec-kit)


register(Operation(
    name="check_prd", description="Lint a PRD file: the tasks it holds and every located error and warning, "
                                  "recording nothing. Needs no project; call before parse_prd.",
    input_model=CheckInput, output_model=CheckOutput, handler=f"{H}:check_prd", surface="planning", effect="read",
    cli_path=("prd", "check"), positional=("file",), local_files=LOCAL_FILES, role="agent",
    failure_field="error_count", failure_exit=2,
    cli_help="Reads FILE as `anvil prd parse` would and reports what it found, with at most 20 diagnostics "
             "(errors first), without recording anything. A PRD in another tool's format (Task Master, spec-kit) "
             "gets one message saying so. Exits 2 when there are errors.",
    examples=(
        Example("checks the sample PRD", {"file": "docs/prd.md"}),
        Example("checks a file outside any project", {"file": "docs/prd.md"}, scenario="sample_only"),
        Example("fails without a file", {}, error="prd_file_required"),
        Example("refuses a file the CLI cannot read", {"file": "missing.md"}, error="local_file_missing"),
    ),
))


class TemplateInput(OpInput):
    write: str | None = Field(default=None, max_length=4096, description="Also write the template to this file "
                                                                          "(refused when it exists, unless --yes).")
    overwrite: bool = Field(default=False, description="Replace the --write file when it exists.")


class TemplateOutput(OpOutput):
    template: str  # a starting PRD in anvil's format
    written: str | None  # the file written, as given
    format_doc: str  # where the format is described


register(Operation(
    name="prd_template", description="A starting PRD in anvil's format, printed or written to a new file. Needs "
                                     "no project; call when a project has no PRD yet.",
    input_model=TemplateInput, output_model=TemplateOutput, handler=f"{H}:prd_template", surface="planning",
    effect="read", cli_path=("prd", "template"), cli_names={"write": "--write", "overwrite": "--yes"}, role="agent",
    cli_help="Prints a PRD skeleton with every section and task field, each explained. With --write FILE it is "
             "written there (relative to the working directory; a server writes only inside its project), "
             "refusing to replace an existing file unless --yes is given. Check it with `anvil prd check FILE`.",
    examples=(
        Example("prints the template", {}, scenario="empty"),
        Example("writes it to a new file", {"write": "docs/new-prd.md"}),
        Example("refuses to replace a file", {"write": "docs/prd.md"}, error="confirmation_required"),
        Example("replaces a file with --yes", {"write": "docs/prd.md", "overwrite": True}),
    ),
))


class DocsInput(OpInput):
    topic: DocTopic = Field(default="prd-format", description="The document to show.")


class DocsOutput(OpOutput):
    topic: str
    title: str
    text: str  # the document's markdown
    topics: list[str]  # every topic there is


register(Operation(
    name="get_docs", description="Documentation that ships with anvil, such as the PRD format. Needs no project; "
                                 "call to learn how to write a PRD anvil can read.",
    input_model=DocsInput, output_model=DocsOutput, handler=f"{H}:get_docs", surface="planning", effect="read",
    cli_path=("docs",), positional=("topic",), role="agent",
    examples=(Example("shows the PRD format", {"topic": "prd-format"}, scenario="empty"),),
))


class ReviewPrdInput(MutatingInput):
    approve: bool = Field(default=False, description="Approve a reviewed PRD instead of marking a draft reviewed.")
    reviewer: Caller | None = Field(default=None, description="Old name of actor, accepted when it names the "
                                                                "caller (the reviewer is whoever reviews).")
    notes: str | None = Field(default=None, max_length=4000, description="Review notes.")
    prd_id: str | None = PRD_ID
    expected_revision: int | None = Field(default=None, ge=1, description="Refuse unless the PRD is still at "
                                                                           "this revision.")


class ReviewPrdOutput(MutatingOutput):
    prd_id: str
    from_status: str
    to_status: str
    reviewer: str
    revision: int
    open_decisions: int  # NEEDS DECISION markers and open questions left (see find_decisions)
    warnings: list[str]  # an approval with open decisions says so


register(Operation(
    name="review_prd", description="Move the PRD from draft to reviewed, or with approve from reviewed to "
                                   "approved (binding its exact revision). Claims need an approved PRD.",
    input_model=ReviewPrdInput, output_model=ReviewPrdOutput, handler=f"{H}:review_prd", surface="planning",
    effect="mutating", cli_path=("prd", "review"), cli_names={"prd_id": "--prd"}, needs_caller=True,
    examples=(
        Example("marks a parsed PRD reviewed", {"actor": "lead"}, scenario="parsed"),
        Example("refuses to approve an unreviewed PRD", {"approve": True}, scenario="parsed", error="wrong_status"),
        Example("refuses a stale revision", {"expected_revision": 7}, scenario="parsed", error="stale_revision"),
        Example("fails when nothing was parsed", {}, error="prd_not_found"),
    ),
))


class DecisionsInput(OpInput):
    file: str | None = FILE
    source: str | None = SOURCE
    prd_id: str | None = PRD_ID


class Decision(OpOutput):
    id: str
    kind: DecisionKind
    location: str
    text: str
    context_paragraph: str
    suggested_resolution_field: str


class DecisionCounts(OpOutput):
    needs_decision: int
    open_question: int
    missing_field: int


class DecisionsOutput(OpOutput):
    prd_id: str
    prd_source: str  # the PRD id for its managed source, "custom" for a file or text
    decisions: list[Decision]
    counts_by_kind: DecisionCounts
    total: int


register(Operation(
    name="find_decisions", description="List what still needs a human decision: NEEDS DECISION markers, open "
                                       "questions, tasks missing criteria or verification. Call before approving.",
    input_model=DecisionsInput, output_model=DecisionsOutput, handler=f"{H}:find_decisions", surface="planning",
    effect="read", cli_path=("prd", "find-decisions"), cli_names={"prd_id": "--prd"}, local_files=LOCAL_FILES,
    examples=(
        Example("lists the sample PRD's open questions", {}, scenario="planned"),
        Example("reads a file directly", {"file": "docs/prd.md"}),
        Example("fails when there is no PRD source", {}, error="prd_source_missing"),
    ),
))


class PlanInput(DestructiveInput):
    prd_id: str | None = PRD_ID
    use_llm: bool = Field(default=True, description="When the PRD has features but no tasks, ask the MCP "
                                                    "client's model to draft them (sampling, on any protocol "
                                                    "revision); refused (no_tasks) when the client cannot sample.")
    prune_force: bool = Field(default=False, description="Remove tasks dropped from the PRD even if work was "
                                                         "recorded on them (needs confirm).")


class PlanOutput(MutatingOutput):
    prd_id: str
    revision: int
    feature_count: int
    task_count: int
    conflict_group_count: int
    startable_width: int  # the most tasks claimable at once in one round when agents drain the plan
    drain_rounds: int  # rounds of parallel work that finish every task that can start
    warnings: list[str]
    warning_count: int
    warnings_shown: int
    warnings_omitted: int
    warnings_truncated: bool
    warning_messages_truncated: int
    added: list[str]
    changed: list[str]
    removed: list[str]
    pruned_task_ids: list[str]
    pruned_feature_ids: list[str]
    llm_generated: bool
    llm_provider: str | None  # who drafted the tasks when llm_generated: the MCP client's model (sampling)


register(Operation(
    name="plan_tasks", description="Turn the parsed PRD into planned features and tasks with inferred "
                                   "dependencies and conflict groups, as one event. Call after parsing.",
    input_model=PlanInput, output_model=PlanOutput, handler=f"{H}:plan_tasks", surface="planning",
    effect="destructive", cli_path=("plan",), cli_names={"prd_id": "--prd", "use_llm": "--llm/--no-llm"},
    prepare="anvil.ops.handlers.drafting:prepare_plan",
    cli_help="Plans the PRD's current revision: new tasks start drafted, changed ones go back to drafted, and "
             "tasks no longer in the PRD are removed (refused for tasks with recorded work unless --prune-force "
             "--yes). Reports added, changed and removed task ids.",
    examples=(
        Example("plans the approved sample PRD", {}, scenario="approved"),
        Example("re-planning an unchanged PRD changes nothing", {}, scenario="ready"),
        Example("fails when nothing was parsed", {}, error="prd_not_found"),
    ),
))


class ScoreInput(MutatingInput):
    task_id: str | None = Field(default=None, max_length=64, description="Score only this task (re-scores it).")
    prd_id: str | None = PRD_ID
    all_prds: bool = Field(default=False, description="Score unscored tasks of every PRD.")


class TaskScore(OpOutput):
    task_id: str
    complexity: int
    parallelizability: int
    context_load: int
    blast_radius: int
    review_risk: int
    agent_suitability: int


class ScoreOutput(MutatingOutput):
    prd_id: str | None
    all_prds: bool
    scored: list[TaskScore]
    scored_count: int
    skipped_already_scored: int


register(Operation(
    name="score_tasks", description="Score tasks 1-5 on complexity, parallelizability, context load, blast "
                                    "radius, review risk and agent suitability. Call after planning.",
    input_model=ScoreInput, output_model=ScoreOutput, handler=f"{H}:score_tasks", surface="planning",
    effect="mutating", cli_path=("score",), positional=("task_id",), cli_names={"prd_id": "--prd"},
    examples=(
        Example("scores every unscored task", {}, scenario="planned"),
        Example("re-scores one task", {"task_id": "T002"}, scenario="scored"),
        Example("fails for an unknown task", {"task_id": "T999"}, scenario="planned", error="task_not_found"),
    ),
))


class ReviewTasksInput(MutatingInput):
    prd_id: str | None = PRD_ID
    all_prds: bool = Field(default=False, description="Review the tasks of every PRD.")


class BlockedTask(OpOutput):
    task_id: str
    problems: list[str]


class ReviewTasksOutput(MutatingOutput):
    prd_id: str | None
    all_prds: bool
    promoted_to_reviewed: list[str]
    promoted_to_ready: list[str]
    blocked: list[BlockedTask]
    confirmed_scores: list[str]  # tasks whose scores this review confirmed (risk ceilings offer only those)


register(Operation(
    name="review_tasks", description="Promote drafted tasks that have acceptance criteria and verification "
                                     "commands to ready (list the rest as blocked) and confirm their scores. "
                                     "Call after scoring.",
    input_model=ReviewTasksInput, output_model=ReviewTasksOutput, handler=f"{H}:review_tasks",
    surface="planning", effect="mutating", cli_path=("review", "tasks"), cli_names={"prd_id": "--prd"},
    examples=(
        Example("promotes the scored tasks to ready", {}, scenario="scored"),
        Example("has nothing left to promote", {}, scenario="ready"),
    ),
))


class DepsInput(MutatingInput):
    add: list[list[str]] | None = Field(default=None, description="[source, target] pairs: source depends on "
                                                                  "target.")
    remove: list[list[str]] | None = Field(default=None, description="[source, target] pairs to remove.")
    prd_id: str | None = PRD_ID


class DepsOutput(MutatingOutput):
    prd_id: str | None
    changed: list[str]
    added: list[list[str]]
    removed: list[list[str]]


register(Operation(
    name="edit_dependencies", description="Add or remove task dependencies as one validated batch; cycles, "
                                          "unknown tasks and self-edges reject the whole batch.",
    input_model=DepsInput, output_model=DepsOutput, handler=f"{H}:edit_dependencies", surface="planning",
    effect="mutating", cli_path=("deps",), cli_names={"prd_id": "--prd"}, needs_caller=True,
    examples=(
        Example("adds a dependency", {"actor": "lead", "add": [["T002", "T001"]]}, scenario="planned"),
        Example("rejects a cycle", {"actor": "lead", "add": [["T001", "T003"]]}, scenario="planned",
                error="dependency_cycle"),
        Example("rejects an unknown task", {"actor": "lead", "add": [["T001", "T999"]]}, scenario="planned",
                error="unknown_task"),
        Example("needs at least one edge", {"actor": "lead"}, scenario="planned", error="no_edges"),
    ),
))
