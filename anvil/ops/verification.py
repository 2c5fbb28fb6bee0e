"""Verification: recording an independent re-run of a task's contract on its submitted commit.

``anvil verify-task TASK`` (``anvil/cli/verifier.py``) is the verifier's side: it checks the
submitted commit out in a scratch worktree of the verifier's own clone, runs the contract's
commands there and calls ``verify_task`` with their outcomes. The operation only records them: a
server never runs a command for a caller.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from anvil.engine.vocab import EvidenceTrust
from anvil.ops.registry import Example, MutatingInput, MutatingOutput, Operation, register
from anvil.ops.scenarios import EXAMPLE_COMMIT, EXAMPLE_TREE, verification_result

H = "anvil.ops.handlers.verification"
OTHER_COMMIT = "badc0de" + "0" * 33


class VerifyTaskInput(MutatingInput):
    task_id: str = Field(min_length=1, max_length=64, description="Task id, e.g. T001.")
    commit_sha: str = Field(min_length=1, max_length=64, description="The submitted commit.")
    tree_sha: str = Field(min_length=1, max_length=64, description="Its tree.")
    evidence_id: str | None = Field(default=None, max_length=64, description="The submission verified.")
    result_artifacts_base64: list[Annotated[str, StringConstraints(max_length=90000)]] | None = Field(
        default=None, max_length=50, description="Results, base64 (made by anvil verify-task).")


class VerifyTaskOutput(MutatingOutput):
    task_id: str
    evidence_id: str
    commit_sha: str
    tree_sha: str
    verifier: str
    # Each command's outcome, recorded as a verified proof: command, exit_code, digest, duration_ms,
    # output_sha256, issuer_id (the key that signed the result, if any).
    results: list[dict[str, Any]]
    passed: bool  # every command passed (a failing run is recorded too: it refutes the implementer's pass)
    failed_commands: list[str]
    unverified_commands: list[str]  # contract commands without a verified pass on this commit yet
    trust_level: EvidenceTrust  # what the submission's proofs amount to now


def _example(verifier: str, nonce: str, **extra: Any) -> dict[str, Any]:
    return {"task_id": "T001", "actor": verifier, "commit_sha": EXAMPLE_COMMIT, "tree_sha": EXAMPLE_TREE,
            "result_artifacts_base64": [verification_result(verifier, nonce)], **extra}


register(Operation(
    name="verify_task", description="Record a verifier's re-run of a task's contract on its submitted commit as "
                                    "verified proofs (`anvil verify-task` runs it). Never by the implementer.",
    # The planning surface, like apply_review_decision: verifying is a reviewer's (or a runner's) act, so
    # the default tool list, an implementer's, leaves it out; tokens of those roles list it.
    input_model=VerifyTaskInput, output_model=VerifyTaskOutput, handler=f"{H}:verify_task", surface="planning",
    effect="mutating", cli_path=("record-verification",), positional=("task_id",), needs_caller=True,
    role="reviewer", runner=True, failure_field="!passed", failure_exit=5,
    cli_names={"commit_sha": "--commit", "tree_sha": "--tree", "evidence_id": "--evidence",
               "result_artifacts_base64": "--result"},
    cli_help="Records the outcomes `anvil verify-task TASK` produced (it calls this itself: run that instead). The "
             "caller is the verifier and must not be the task's implementer; the commit must be the one submitted. "
             "Exits 5 when a command failed (the failure is recorded: it refutes the implementer's pass).",
    examples=(
        Example("records a verifier's passing run on the submitted commit", _example("runner-1", "example-pass"),
                scenario="submitted_commit"),
        Example("refuses the implementer verifying its own work", _example("agent-1", "example-self"),
                scenario="submitted_commit", error="verifier_is_implementer"),
        Example("refuses results for another commit than the submitted one",
                {**_example("runner-1", "example-other"), "commit_sha": OTHER_COMMIT}, scenario="submitted_commit",
                error="verification_commit_mismatch"),
        Example("refuses a call without results (`anvil verify-task` runs the commands)",
                {**_example("runner-1", "example-none"), "result_artifacts_base64": None},
                scenario="submitted_commit", error="verification_results_required"),
        Example("refuses a submission that names no commit", _example("runner-1", "example-nocommit"),
                scenario="submitted", error="verification_needs_commit"),
    ),
))
