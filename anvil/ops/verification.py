"""Verification: recording an independent re-run of a task's contract on its submitted commit.

``anvil verify-task TASK`` (``anvil/cli/verifier.py``) is the verifier's side: it checks the
submitted commit out in a scratch worktree of the verifier's own clone, runs the contract's
commands there and calls ``verify_task`` with their outcomes. The operation only records them: a
server never runs a command for a caller.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from anvil.engine.vocab import EvidenceTrust, TrustMode
from anvil.ops.registry import Example, MutatingInput, MutatingOutput, Operation, OpOutput, Text, register
from anvil.ops.scenarios import EXAMPLE_COMMIT, EXAMPLE_TREE, verification_result

H = "anvil.ops.handlers.verification"
OTHER_COMMIT = "badc0de" + "0" * 33


class VerifyTaskInput(MutatingInput):
    task_id: str = Field(min_length=1, max_length=64, description="Task id, e.g. T001.")
    commit_sha: str = Field(min_length=40, max_length=64, description="The submitted commit the results ran on.")
    tree_sha: str = Field(min_length=40, max_length=64, description="That commit's tree, as the verifier's clone "
                                                                   "has it.")
    evidence_id: str | None = Field(default=None, max_length=64, description="The submission verified (refused "
                                                                            "once a newer one arrived).")
    result_files: list[Text] | None = Field(default=None, max_length=50, description="Result artifacts (`anvil "
                                                                                     "verify-task` makes them).")
    result_artifacts_base64: list[Annotated[str, StringConstraints(max_length=90000)]] | None = Field(
        default=None, max_length=50, description="Result artifacts, base64.")


class VerificationOutcome(OpOutput):
    command: str
    exit_code: int
    digest: str
    duration_ms: int
    output_sha256: str
    issuer_id: str | None


class VerifyTaskOutput(MutatingOutput):
    task_id: str
    evidence_id: str
    commit_sha: str
    tree_sha: str
    verifier: str
    seq: int
    trust_mode: TrustMode  # always verified: recorded by an identity other than the implementer
    results: list[VerificationOutcome]
    passed: bool  # every command passed (a failing run is recorded too: it refutes the implementer's pass)
    failed_commands: list[str]
    unverified_commands: list[str]  # contract commands without a verified pass on this commit yet
    trust_level: EvidenceTrust  # what the submission's proofs amount to now


def _example(verifier: str, nonce: str, **extra: Any) -> dict[str, Any]:
    return {"task_id": "T001", "actor": verifier, "commit_sha": EXAMPLE_COMMIT, "tree_sha": EXAMPLE_TREE,
            "result_artifacts_base64": [verification_result(verifier, nonce)], **extra}


register(Operation(
    name="verify_task", description="Record a verifier's re-run of a task's contract commands on its submitted "
                                    "commit as verified proofs. Run by `anvil verify-task`, which runs them; never "
                                    "the implementer.",
    input_model=VerifyTaskInput, output_model=VerifyTaskOutput, handler=f"{H}:verify_task", surface="execution",
    effect="mutating", cli_path=("record-verification",), positional=("task_id",), needs_caller=True,
    role="reviewer", runner=True, failure_field="!passed", failure_exit=5,
    cli_names={"commit_sha": "--commit", "tree_sha": "--tree", "evidence_id": "--evidence",
               "result_files": "--result"},
    base64_files={"result_files": "result_artifacts_base64"},
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
