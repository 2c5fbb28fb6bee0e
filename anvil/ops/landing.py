"""Landing: recording a lander's steps on approved work, and reading the landing queue.

``anvil land [TASK_ID|--all]`` (``anvil/cli/lander.py``) is the lander's side: in a scratch
worktree of its own clone it builds the merge of each approved commit onto the landing target,
re-runs the contract's commands on the merged tree and moves the target by fast-forward only. The
operations only record what it did (``land_task``) and tell it what to land (``get_landing_queue``):
a server never runs a command or touches a repository for a caller.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from anvil.engine.vocab import BounceReason, LandingMethod, LandingOutcome
from anvil.ops.registry import Example, MutatingInput, MutatingOutput, Operation, OpInput, OpOutput, Text, register
from anvil.ops.scenarios import EXAMPLE_COMMIT, LANDED_COMMIT, TARGET_COMMIT, verification_result

H = "anvil.ops.handlers.landing"
Id = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class LandTaskInput(MutatingInput):
    task_ids: list[Id] = Field(min_length=1, max_length=50, description="The unit: a task, or an approved "
                                                                        "bundle's members.")
    outcome: LandingOutcome = Field(description="started (verifying the merged tree), landed or bounced.")
    approved_commits: list[Id] = Field(min_length=1, max_length=50, description="Each task's approved commit, "
                                                                                "in the order of task_ids.")
    target: str = Field(min_length=1, max_length=200, description="The landing target branch.")
    remote: str | None = Field(default=None, max_length=200, description="The remote it lives on.")
    method: LandingMethod = Field(default="merge", description="How the unit was put onto the target.")
    target_commit: str | None = Field(default=None, max_length=64, description="The target tip it was built on.")
    landed_commit: str | None = Field(default=None, max_length=64, description="The commit the target now holds.")
    changed_paths: list[Text] = Field(default_factory=list, max_length=500, description="Paths the landing changed.")
    result_artifacts_base64: list[Annotated[str, StringConstraints(max_length=90000)]] | None = Field(
        default=None, max_length=200, description="Re-proofs of the merged tree, base64 (made by anvil land).")
    reason: BounceReason | None = Field(default=None, description="Why it bounced: conflict, proof_failed, stale.")
    conflict_paths: list[Text] = Field(default_factory=list, max_length=500, description="The conflicting paths.")
    failed_command: str | None = Field(default=None, max_length=4096, description="The command that failed.")
    excerpt: str | None = Field(default=None, max_length=8000, description="Its output's end, or why it is stale.")


class LandTaskOutput(MutatingOutput):
    task_ids: list[str]
    unit: str  # the task, or the bundle whose members landed together
    outcome: LandingOutcome
    target: str
    remote: str | None
    approved_commits: list[str]
    landed_commit: str | None
    # The verified re-proofs of the merged tree: task_id, command, exit_code, digest, duration_ms.
    proofs: list[dict[str, Any]]
    # A bounce: reason, and conflict_paths with touched_by (path -> landed tasks), or failed_command and excerpt.
    bounce: dict[str, Any] | None
    to_status: str  # done (started, landed), ready (bounced: back to its implementer)
    lease_expires_at: str | None  # a start holds the unit against other landers until then


class LandingQueueInput(OpInput):
    pass


class LandingQueueOutput(OpOutput):
    enabled: bool
    target: str | None
    remote: str | None
    method: LandingMethod
    delete_branch: bool
    # Units in landing order (dependency order, then approval order): unit, bundle_id, review_seq and
    # tasks, each with task_id, title, state (approved, verifying, unlandable), approved_commit, tree,
    # branch, claim_worktree, commands, dependencies, review_seq, lander, lease_expires_at.
    units: list[dict[str, Any]]
    counts: dict[str, int]  # approved, verifying, unlandable, landed, bounced
    landed: list[dict[str, Any]]  # the latest landings: task_id, landed_commit, approved_commit, lander, recorded_at
    bounced: list[dict[str, Any]]  # tasks back with their implementer: reason, conflict_paths, touched_by, ...


def _landing(outcome: str, **extra: Any) -> dict[str, Any]:
    return {"task_ids": ["T001"], "actor": "runner-1", "outcome": outcome, "approved_commits": [EXAMPLE_COMMIT],
            "target": "main", "remote": "origin", "target_commit": TARGET_COMMIT, **extra}


register(Operation(
    name="land_task", description="Record a lander's step on approved work (`anvil land` runs it): started, "
                                  "landed on the target with the merged tree's re-proofs, or bounced back to its "
                                  "implementer.",
    # The planning surface, like verify_task: landing is the lead's or a runner's act.
    input_model=LandTaskInput, output_model=LandTaskOutput, handler=f"{H}:land_task", surface="planning",
    effect="mutating", cli_path=("record-landing",), needs_caller=True, role="lead", runner=True,
    cli_names={"task_ids": "--task", "approved_commits": "--approved-commit", "target_commit": "--target-commit",
               "landed_commit": "--landed-commit", "changed_paths": "--changed-path",
               "result_artifacts_base64": "--result", "conflict_paths": "--conflict-path",
               "failed_command": "--failed-command"},
    cli_help="Records what `anvil land` did (it calls this itself: run that instead). Only approved work at its "
             "approved commit lands, once; a bounce sends the task back to ready with the conflicting paths or the "
             "failing command.",
    examples=(
        Example("records that a lander is verifying a task's merge", _landing("started"), scenario="landing"),
        Example("records a landing with the merged tree's re-proof",
                _landing("landed", landed_commit=LANDED_COMMIT, changed_paths=["shortlink/store.py"],
                         result_artifacts_base64=[verification_result("runner-1", "land", commit=LANDED_COMMIT)]),
                scenario="landing"),
        Example("bounces a conflicting task back to its implementer",
                _landing("bounced", reason="conflict", conflict_paths=["shortlink/store.py"]), scenario="landing"),
        Example("refuses another commit than the approved one",
                _landing("started", approved_commits=[LANDED_COMMIT]), scenario="landing",
                error="landing_stale_approval"),
        Example("refuses a landing without a passing re-proof", _landing("landed", landed_commit=LANDED_COMMIT),
                scenario="landing", error="landing_unproven"),
        Example("refuses when the project does not land work", _landing("started"), scenario="approved_verified",
                error="landing_not_enabled"),
    ),
))

register(Operation(
    name="get_landing_queue", description="The landing queue: approved units in landing order (dependency order, "
                                          "then approval order), what is being verified, recent landings and "
                                          "bounces.",
    # The planning surface keeps it out of an implementer's default tool list; every role may read it.
    input_model=LandingQueueInput, output_model=LandingQueueOutput, handler=f"{H}:get_landing_queue",
    surface="planning", effect="read", cli_path=("landing",), role="agent",
    examples=(
        Example("shows the approved task waiting to land", {}, scenario="landing"),
        Example("shows an empty queue when landing is off", {}, scenario="ready"),
    ),
))
