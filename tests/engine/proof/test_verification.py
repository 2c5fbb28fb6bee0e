"""Recording verified proofs (``verify_task``): what the server refuses, what the event holds, how the
latest verified outcome of each command counts, and the approved commit a lander reads."""

from __future__ import annotations

import base64
import json

import pytest

from anvil.engine.errors import AnvilError
from anvil.engine.identity import Identity, authenticated, role_allows
from anvil.engine.proof.verification import approved_commit
from anvil.engine.storage.canonical import canonical_json, sha256_hex
from anvil.ops.scenarios import EXAMPLE_COMMIT, EXAMPLE_TREE, verification_result
from tests.ops.support import assert_replays, op, refused, scenario, store_of


def _verify(env: dict[str, str], actor: str, *results: str, **extra: object) -> dict:
    return op(env, "verify_task", task_id="T001", actor=actor, commit_sha=EXAMPLE_COMMIT, tree_sha=EXAMPLE_TREE,
              result_artifacts_base64=list(results), **extra)


def _edited(result: str, **changes: object) -> str:
    document = json.loads(base64.b64decode(result))
    document["body"].update(changes)
    document["digest"] = sha256_hex(canonical_json(document["body"]))
    return base64.b64encode(canonical_json(document).encode()).decode()


def test_a_verifier_records_verified_proofs_bound_to_the_task_commit_tree_and_itself(anvil_env) -> None:
    scenario(anvil_env, "submitted_commit")
    out = _verify(anvil_env, "runner-1", verification_result("runner-1", "a"))
    assert out["passed"] and out["verifier"] == "runner-1" and out["trust_level"] == "verified"
    assert out["commit_sha"] == EXAMPLE_COMMIT and out["tree_sha"] == EXAMPLE_TREE and out["unverified_commands"] == []
    with store_of(anvil_env) as store:
        rows = store.conn.execute("SELECT trust_mode, commit_sha, tree_sha, proved_by, proved_by_key FROM "
                                  "command_proofs ORDER BY seq").fetchall()
    assert rows == [("client_reported", None, None, "agent-1", "agent-1"),
                    ("verified", EXAMPLE_COMMIT, EXAMPLE_TREE, "runner-1", "runner-1")]
    assert_replays(anvil_env)


@pytest.mark.parametrize(("actor", "result", "extra", "code"), [
    ("AGENT-1", verification_result("AGENT-1", "b"), {}, "verifier_is_implementer"),
    ("runner-1", verification_result("runner-1", "c"), {"evidence_id": "EV00000001"}, "verification_stale"),
    ("runner-1", verification_result("runner-1", "d"), {"tree_sha": "1" * 40}, "verification_tree_mismatch"),
    ("runner-1", _edited(verification_result("runner-1", "e"), tree="2" * 40), {}, "proof_mismatch"),
    ("runner-1", _edited(verification_result("runner-1", "f"), task_id="T002"), {}, "proof_mismatch"),
    ("runner-1", _edited(verification_result("runner-1", "g"), command="python -c pass", argv=["python", "-c", "pass"]),
     {}, "verification_not_in_contract"),
    ("runner-1", _edited(verification_result("runner-1", "h"), argv=["true"]), {}, "proof_tampered"),
    ("runner-1", verification_result("runner-1", "i")[:-8] + "AAAAAAA=", {}, "proof_invalid"),
    ("runner-1", "", {"commit_sha": "c0ffee"}, "invalid_commit"),
])
def test_a_verification_that_does_not_fit_the_submission_is_refused_and_records_nothing(
        anvil_env, actor: str, result: str, extra: dict, code: str) -> None:
    scenario(anvil_env, "submitted_commit")
    args = {"task_id": "T001", "actor": actor, "commit_sha": EXAMPLE_COMMIT, "tree_sha": EXAMPLE_TREE,
            "result_artifacts_base64": [result], **extra}
    assert refused(anvil_env, "verify_task", **args).code == code
    with store_of(anvil_env) as store:
        count = store.conn.execute("SELECT COUNT(*) FROM command_proofs WHERE trust_mode = 'verified'").fetchone()
    assert count == (0,)


def test_each_result_counts_once(anvil_env) -> None:
    scenario(anvil_env, "submitted_commit")
    once = verification_result("runner-1", "once")
    assert refused(anvil_env, "verify_task", task_id="T001", actor="runner-1", commit_sha=EXAMPLE_COMMIT,
                   tree_sha=EXAMPLE_TREE, result_artifacts_base64=[once, once]).code == "proof_duplicate"
    _verify(anvil_env, "runner-1", once)
    with pytest.raises(AnvilError) as again:
        _verify(anvil_env, "rita", once)
    assert again.value.code == "proof_duplicate"


def test_the_latest_verified_outcome_of_a_command_counts(anvil_env) -> None:
    scenario(anvil_env, "verification_required")
    failed = _verify(anvil_env, "runner-1", verification_result("runner-1", "f1", exit_code=1))
    assert not failed["passed"] and failed["failed_commands"] == ["python -m unittest -q tests/test_store.py"]
    assert failed["trust_level"] == "client_reported"
    assert refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead").code == \
        "claim_unproven"
    passed = _verify(anvil_env, "rita", verification_result("rita", "p1"))  # a re-run (a flaky test) passes
    assert passed["trust_level"] == "verified"
    decided = op(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")
    assert decided["trust_level"] == "verified" and decided["commit_sha"] == EXAMPLE_COMMIT
    assert_replays(anvil_env)


def test_only_a_task_in_review_with_a_committed_submission_can_be_verified(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    assert refused(anvil_env, "verify_task", task_id="T001", actor="runner-1", commit_sha=EXAMPLE_COMMIT,
                   tree_sha=EXAMPLE_TREE, result_artifacts_base64=[verification_result("r", "x")]).code == \
        "not_in_review"


def test_the_approved_commit_is_what_a_lander_reads(anvil_env) -> None:
    scenario(anvil_env, "verified")
    with store_of(anvil_env) as store:
        assert approved_commit(store.conn, "T001") is None  # not approved yet
    op(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")
    with store_of(anvil_env) as store:
        approved = approved_commit(store.conn, "T001")
    assert approved is not None and approved["commit"] == EXAMPLE_COMMIT and approved["tree"] == EXAMPLE_TREE
    assert approved["branch"] is None and approved["reviewer"] == "lead"  # no git binding in the scenario
    assert approved["verified_commands"] == ["python -m unittest -q tests/test_store.py"]


def test_client_reported_proofs_satisfy_the_gate_only_while_verification_is_not_required(anvil_env) -> None:
    scenario(anvil_env, "submitted_commit")
    config = op(anvil_env, "configure_project", actor="lead")["config"]
    assert config["require_verified"] == "auto" and config["require_verified_effective"] is False
    on = op(anvil_env, "configure_project", git_mode="worktree", actor="lead")["config"]
    assert on["require_verified_effective"] is True
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")
    assert error.code == "claim_unproven" and error.details["required_trust"] == "verified"
    op(anvil_env, "configure_project", require_verified="off", actor="lead")
    decided = op(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")
    assert decided["trust_level"] == "client_reported" and decided["decision"] == "accepted"


def test_a_runner_is_outside_the_role_ranks() -> None:
    runner = authenticated("ci", "runner")
    assert not runner.may("agent") and not runner.may("reviewer") and not runner.may("lead")
    assert runner.may("reviewer", runner=True) and runner.may("lead", runner=True)
    assert role_allows("lead", "reviewer") and not role_allows("agent", "reviewer", runner=True)
    assert Identity("someone").may("lead")  # not authenticated: a local caller owns the machine
