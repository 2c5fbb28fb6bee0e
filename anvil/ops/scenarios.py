"""Named project states that examples start from (used by the loopback suite and the docs).

Each scenario is a list of operation calls run directly, in order, on a fresh state.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

SAMPLE_PRD = str(Path(__file__).resolve().parents[1] / "engine" / "prd" / "sample.md")

Step = tuple[str, dict[str, Any]]

SAMPLE_AT = "docs/prd.md"
WRITE_SAMPLE = "@write_sample"  # not an operation: puts the sample PRD at SAMPLE_AT in the project

_INIT: list[Step] = [("init_project", {"name": "Demo"}), (WRITE_SAMPLE, {})]
_PARSED: list[Step] = [*_INIT, ("parse_prd", {"file": SAMPLE_AT})]
_APPROVED: list[Step] = [*_PARSED, ("review_prd", {"actor": "lead"}),
                         ("review_prd", {"actor": "lead", "approve": True})]
_PLANNED: list[Step] = [*_APPROVED, ("plan_tasks", {"use_llm": False})]
_SCORED: list[Step] = [*_PLANNED, ("score_tasks", {})]
_READY: list[Step] = [*_SCORED, ("review_tasks", {})]
_CLAIMED: list[Step] = [*_READY, ("claim_task", {"task_id": "T001", "actor": "agent-1"})]
PROVE_AND_SUBMIT = "@prove_and_submit"  # not an operation: does T001's work, proves it, submits the proofs
WORK = "@work"  # not an operation: writes T001's files (the work done, nothing proved yet)
PROVE = "@prove"  # not an operation: does T001's work and writes its proofs where `anvil proof run` would
_PROVED: list[Step] = [*_CLAIMED, (PROVE, {"task_id": "T001"})]
_SUBMITTED: list[Step] = [*_CLAIMED, (PROVE_AND_SUBMIT, {"task_id": "T001", "actor": "agent-1",
                                                         "files_changed": ["shortlink/store.py"]})]

EXAMPLE_COMMIT = "c0ffee" + "0" * 34
EXAMPLE_TREE = "7ee" + "0" * 37
"""The commit (and its tree) a scenario's submission names: the scenarios' projects are not repositories,
so the ids stand for the commit an implementer's CLI would read from the claim branch."""
_SUBMITTED_COMMIT: list[Step] = [*_CLAIMED, (PROVE_AND_SUBMIT, {
    "task_id": "T001", "actor": "agent-1", "files_changed": ["shortlink/store.py"], "commit_sha": EXAMPLE_COMMIT,
    "tree_sha": EXAMPLE_TREE})]
VERIFY_COMMAND = "python -m unittest -q tests/test_store.py"  # T001's verification command


def verification_result(verifier: str, nonce: str, *, commit: str = EXAMPLE_COMMIT, exit_code: int = 0) -> str:
    """A base64 ``anvil.verification`` artifact of T001's command on ``commit``, as ``anvil verify-task``
    run by ``verifier`` sends it (for examples and scenarios: nothing runs)."""
    import base64
    import shlex

    from anvil.engine.proof.artifacts import VERIFICATION, envelope

    body = {"task_id": "T001", "commit": commit, "tree": EXAMPLE_TREE, "nonce": f"{verifier}-{nonce}",
            "timeout_seconds": 3600, "signer": None, "cwd": "/tmp/anvil-verify-t001/tree",
            "argv": shlex.split(VERIFY_COMMAND), "command": VERIFY_COMMAND, "exit_code": exit_code,
            "duration_ms": 840, "started_at": "2026-01-05T10:00:00Z", "output_sha256": "0" * 64, "output_bytes": 2,
            "output_excerpt": "OK"}
    return base64.b64encode(envelope(VERIFICATION, body, None)).decode("ascii")


_REQUIRE_VERIFIED: list[Step] = [*_SUBMITTED_COMMIT, ("configure_project", {"require_verified": "on", "actor": "lead"})]
_VERIFIED: list[Step] = [*_REQUIRE_VERIFIED, ("verify_task", {
    "task_id": "T001", "actor": "runner-1", "commit_sha": EXAMPLE_COMMIT, "tree_sha": EXAMPLE_TREE,
    "result_artifacts_base64": [verification_result("runner-1", "scenario-run")]})]

_APPROVED_VERIFIED: list[Step] = [*_VERIFIED, ("apply_review_decision", {"task_id": "T001", "actor": "lead",
                                                                        "approve": True})]
LANDED_COMMIT = "1a4d" + "0" * 36
TARGET_COMMIT = "7a5" + "0" * 37
"""The target tip a scenario's landing was built on, and the commit the target holds after it."""
_LANDING: list[Step] = [*_APPROVED_VERIFIED, ("configure_project", {"land_target": "main", "land_remote": "origin",
                                                                    "actor": "lead"})]

_ADVISORY: Step = ("configure_project", {"evidence_gate": "advisory", "actor": "lead"})
_ENFORCING: Step = ("configure_project", {"evidence_gate": "enforcing", "actor": "lead"})
# Work handed in without proofs: the enforcing gate refuses such a submission, so it went in while the
# gate was advisory (a project that tightened its gate since has it waiting in review).
_UNPROVEN: list[Step] = [*_CLAIMED, _ADVISORY, ("submit_completion_evidence", {
    "task_id": "T001", "actor": "agent-1", "commands_run": ["python -m unittest -q tests/test_store.py"],
    "files_changed": ["shortlink/store.py"]}), _ENFORCING]

_BUNDLED: list[Step] = [*_READY, ("create_bundle", {"bundle_id": "B1", "task_ids": ["T001", "T002", "T003"],
                                                    "coordinator": "agent-1", "actor": "lead"})]
_BUNDLE_CLAIMED: list[Step] = [*_BUNDLED, ("claim_bundle", {"bundle_id": "B1", "actor": "agent-1"})]
MEMBER_FILES = (("T001", ["shortlink/store.py"]), ("T002", ["shortlink/validate.py"]), ("T003", ["shortlink/api.py"]))
_BUNDLE_BUILT: list[Step] = [*_BUNDLE_CLAIMED, *[
    step for task_id, files in MEMBER_FILES
    for step in (("claim_task", {"task_id": task_id, "actor": "agent-1"}),
                 (PROVE_AND_SUBMIT, {"task_id": task_id, "actor": "agent-1", "files_changed": files}))]]
_BUNDLE_UNPROVEN: list[Step] = [*_BUNDLE_CLAIMED, _ADVISORY, *[
    step for task_id, files in MEMBER_FILES
    for step in (("claim_task", {"task_id": task_id, "actor": "agent-1"}),
                 ("submit_completion_evidence", {"task_id": task_id, "actor": "agent-1", "commands_run": ["pytest -q"],
                                                 "files_changed": files}))], _ENFORCING,
    ("submit_bundle_progress", {"bundle_id": "B1", "actor": "agent-1", "phase": "done", "complete": True}), *[
    ("record_bundle_review", {"bundle_id": "B1", "actor": reviewer, "review_round": 1, "angle": angle,
                              "decision": "approve"})
    for reviewer, angle in (("reviewer-1", "correctness"), ("reviewer-2", "integration"))]]
_BUNDLE_IN_REVIEW: list[Step] = [*_BUNDLE_BUILT, ("submit_bundle_progress", {
    "bundle_id": "B1", "actor": "agent-1", "phase": "done", "complete": True})]
_BUNDLE_REVIEWED: list[Step] = [*_BUNDLE_IN_REVIEW, *[
    ("record_bundle_review", {"bundle_id": "B1", "actor": reviewer, "review_round": 1, "angle": angle,
                              "decision": "approve"})
    for reviewer, angle in (("reviewer-1", "correctness"), ("reviewer-2", "integration"))]]
_BUNDLE_APPROVED: list[Step] = [*_BUNDLE_REVIEWED, ("finalize_bundle_review", {"bundle_id": "B1", "actor": "lead"})]
_BUNDLE_REPLACED: list[Step] = [*_BUNDLE_IN_REVIEW, ("record_bundle_review", {
    "bundle_id": "B1", "actor": "reviewer-1", "review_round": 1, "angle": "correctness", "decision": "reject"}),
    ("create_bundle", {"bundle_id": "B2", "task_ids": ["T001", "T002", "T003"], "coordinator": "agent-2",
                       "actor": "lead"})]

_UNAPPROVED: list[Step] = [*_PARSED, ("plan_tasks", {"use_llm": False}), ("score_tasks", {}), ("review_tasks", {})]

SCENARIOS: dict[str, list[Step]] = {
    "empty": [],
    "sample_only": [(WRITE_SAMPLE, {})],  # the sample PRD in a directory that is no project yet
    "initialized": _INIT,
    "parsed": _PARSED,
    "approved": _APPROVED,
    "planned": _PLANNED,
    "scored": _SCORED,
    "ready": _READY,
    "unapproved": _UNAPPROVED,
    "claimed": _CLAIMED,
    "claimed_advisory": [*_CLAIMED, _ADVISORY],
    "proved": _PROVED,
    "worked": [*_CLAIMED, (WORK, {"task_id": "T001"})],
    "submitted": _SUBMITTED,
    "bundled": _BUNDLED,
    "bundle_claimed": _BUNDLE_CLAIMED,
    "bundle_built": _BUNDLE_BUILT,
    "bundle_in_review": _BUNDLE_IN_REVIEW,
    "bundle_reviewed": _BUNDLE_REVIEWED,
    "bundle_approved": _BUNDLE_APPROVED,
    "bundle_replaced": _BUNDLE_REPLACED,
    "unproven": _UNPROVEN,
    "submitted_commit": _SUBMITTED_COMMIT,
    "verification_required": _REQUIRE_VERIFIED,
    "verified": _VERIFIED,
    "approved_verified": _APPROVED_VERIFIED,
    "landing": _LANDING,
    "unproven_advisory": [*_UNPROVEN, _ADVISORY],
    "bundle_unproven": _BUNDLE_UNPROVEN,
    "trusted": [*_INIT, ("add_trusted_key", {"public_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                                             "label": "ci", "actor": "lead"})],
}


def build_scenario(name: str, env: Mapping[str, str], cwd: str) -> None:
    """Run the steps of scenario ``name`` directly against the state ``env`` and ``cwd`` select.

    Raises:
        KeyError: no such scenario.
        AnvilError: a step failed (the scenario no longer fits the operations).
    """
    from anvil.engine.storage.paths import project_root
    from anvil.ops.invoke import invoke

    for op_name, arguments in SCENARIOS[name]:
        if op_name == WRITE_SAMPLE:
            target = project_root(env, cwd) / SAMPLE_AT
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(Path(SAMPLE_PRD).read_bytes())
        elif op_name == PROVE_AND_SUBMIT:
            prove_and_submit(env, cwd, **arguments)
        elif op_name == PROVE:
            prove(env, cwd, **arguments)
        elif op_name == WORK:
            do_work(project_root(env, cwd), arguments["task_id"])
        else:
            invoke(op_name, arguments, env=env, cwd=cwd)


SAMPLE_WORK = Path(__file__).resolve().parents[1] / "engine" / "prd" / "sample_work"
"""Tasks T001-T003 of the sample done for real: a module and its test each (``*.py.txt``)."""


def _sample(name: str) -> str:
    return (SAMPLE_WORK / f"{name}.txt").read_text(encoding="utf-8")


STORE_PY = _sample("store.py")
TEST_STORE_PY = _sample("test_store.py")
TASK_WORK: dict[str, dict[str, str]] = {
    "T001": {"shortlink/__init__.py": "", "shortlink/store.py": STORE_PY, "tests/test_store.py": TEST_STORE_PY},
    "T002": {"shortlink/__init__.py": "", "shortlink/validate.py": _sample("validate.py"),
             "tests/test_validate.py": _sample("test_validate.py")},
    "T003": {"shortlink/api.py": _sample("api.py"), "tests/test_api_create.py": _sample("test_api_create.py")},
}
"""The files each of tasks T001-T003 writes; each task's verification commands pass on them (T003's
after T001's and T002's)."""
QUIET_PYTEST = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": "-p no:cacheprovider"}
"""Environment for running the sample's verification commands: pytest without plugins or a cache."""


def do_work(root: Path, task_id: str) -> list[str]:
    """Write task ``task_id``'s files under ``root``; returns their paths."""
    for name, text in TASK_WORK[task_id].items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return list(TASK_WORK[task_id])


def proof_environment() -> dict[str, str]:
    """This process's environment for proving the sample's commands: ``python`` is this interpreter."""
    import os
    import sys

    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**os.environ, **QUIET_PYTEST, "PATH": path}


def prove(env: Mapping[str, str], cwd: str, *, task_id: str) -> list[bytes]:
    """Do task ``task_id`` of the sample for real (:data:`TASK_WORK`) and prove each verification
    command with a claim-bound proof, written where ``anvil proof run`` writes it
    (:func:`anvil.engine.work.continuation.proof_file`); returns the artifacts."""
    from anvil.engine.proof.artifacts import PROOF, envelope
    from anvil.engine.proof.runner import run_proof
    from anvil.engine.storage.paths import project_root
    from anvil.engine.work.continuation import PROOF_DIR, command_argv, proof_file
    from anvil.ops.invoke import invoke

    root = project_root(env, cwd)
    do_work(root, task_id)
    task = invoke("get_task", {"task_id": task_id}, env=env, cwd=cwd)
    claim = task["claim"]
    out = []
    for command in task["verification"]:
        data = envelope(PROOF, run_proof(claim, command_argv(command), root, env=proof_environment()), None)
        path = root / proof_file(task_id, claim["generation"], command)
        path.parent.mkdir(parents=True, exist_ok=True)
        (root / PROOF_DIR / ".gitignore").write_text("*\n")
        path.write_bytes(data)
        out.append(data)
    return out


def prove_and_submit(env: Mapping[str, str], cwd: str, *, task_id: str, actor: str, files_changed: list[str],
                     commit_sha: str | None = None, tree_sha: str | None = None) -> None:
    """Do task ``task_id`` of the sample for real, prove each verification command (:func:`prove`)
    and submit the proofs: the path a newcomer runs."""
    import base64

    from anvil.ops.invoke import invoke

    proofs = [base64.b64encode(data).decode() for data in prove(env, cwd, task_id=task_id)]
    task = invoke("get_task", {"task_id": task_id}, env=env, cwd=cwd)
    invoke("submit_completion_evidence", {"task_id": task_id, "actor": actor, "files_changed": files_changed,
                                          "generation": task["claim"]["generation"], "commit_sha": commit_sha,
                                          "tree_sha": tree_sha, "command_proof_artifacts_base64": proofs},
           env=env, cwd=cwd)
