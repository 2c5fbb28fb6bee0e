"""Accepted artifacts in the log: a signature is re-checked whenever its event is applied, so a log whose
trust list does not back a signature (edited, or replayed without the key) fails closed."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.engine.errors import StateIncompatible
from anvil.engine.proof.artifacts import CLIENT_REPORTED, PROOF, envelope, load
from anvil.engine.proof.runner import run_proof
from anvil.engine.proof.signing import generate, sign_body
from tests.ops.support import op, scenario, store_of


def _signed_record(env: dict[str, str], pem: str) -> dict:
    claim = op(env, "get_task", task_id="T001")["claim"]
    body = run_proof(claim, ["python", "-c", "pass"], Path(env["ANVIL_ROOT"]))
    artifact = load(envelope(PROOF, *sign_body(pem, PROOF, body)), PROOF, "proof")
    assert artifact.signature is not None
    return {"digest": artifact.digest, "body": artifact.body, "signature": artifact.signature,
            "trust_mode": CLIENT_REPORTED, "issuer_id": artifact.signature["key_id"]}


def test_a_signed_proof_whose_key_is_not_trusted_at_that_point_of_the_log_fails_closed(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    pem, public = generate()
    record = _signed_record(anvil_env, pem)
    payload = {"evidence_id": "EVX", "task_id": "T001", "claim_id": record["body"]["claim_id"], "generation": 1,
               "actor": "agent-1", "category": "completion", "commands_run": ["python -c pass"], "files_changed": [],
               "output_excerpt": None, "pr_url": None, "commit_sha": None, "command_proofs": [record]}
    with store_of(anvil_env) as store, pytest.raises(StateIncompatible) as info, store.write("agent-1") as tx:
        tx.append("evidence.submitted", payload)  # nobody trusted the key
    assert info.value.code == "proof_replay_failed"
    op(anvil_env, "add_trusted_key", public_key=public, actor="lead")
    forged = {**record, "body": {**record["body"], "output_excerpt": "edited"}}
    with store_of(anvil_env) as store, pytest.raises(StateIncompatible), store.write("agent-1") as tx:
        tx.append("evidence.submitted", {**payload, "command_proofs": [forged]})
    with store_of(anvil_env) as store, store.write("agent-1") as tx:
        tx.append("evidence.submitted", payload)  # trusted now: it applies
    assert op(anvil_env, "verify_state")["ok"]
