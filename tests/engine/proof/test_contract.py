"""A task's evidence contract at approval, in a real repository: verification commands, named claims
and artifact assertions of the PRD, under the enforcing and advisory evidence gates."""

from __future__ import annotations

from pathlib import Path

from tests.gitrepo import git, make_repo, plan_in_repo
from tests.ops.support import mini_prd

TASK = ("### T001: Task T001\n\n**Feature:** F001\n**Priority:** high\n**Type:** feature\n**Likely files:** out.txt\n"
        "**Dependencies:** none\n**Acceptance criteria:**\n- It works.\n**Verification:**\n- `python -c pass`\n"
        "**Claims:**\n- runs-python: `python -V`\n**Artifacts:**\n- `out.txt`\n")


def _claim(cli) -> int:  # type: ignore[no-untyped-def]
    out = cli("claim", "T001", "--branch", "--actor", "agent-1", "--json")
    assert out.code == 0, out.stdout
    return int(out.json()["generation"])


def _prove(cli, *command: str) -> str:  # type: ignore[no-untyped-def]
    out = cli("proof", "run", "T001", "--actor", "agent-1", "--json", "--", *command)
    assert out.code == 0, out.stdout
    return str(out.json()["path"])


def test_named_claims_and_artifacts_hold_approval_back_whatever_the_gate(anvil_env, cli) -> None:
    root = make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env, mini_prd(TASK))
    _claim(cli)
    (root / "other.txt").write_text("work, but not the artifact\n")
    git(root, "add", "other.txt")
    git(root, "commit", "-q", "-m", "work")
    cli("submit", "T001", "--actor", "agent-1", "--command", "python -c pass", "--command", "python -V", "--json")
    refused = cli("apply", "T001", "--approve", "--actor", "lead", "--json")
    message = refused.json()["error"]["message"]
    assert refused.code == 5 and refused.json()["error"]["code"] == "claim_unproven"
    assert "`python -c pass`" in message and "runs-python" in message and "out.txt" in message
    cli("config", "--evidence-gate", "advisory", "--actor", "lead", "--json")
    still = cli("apply", "T001", "--approve", "--actor", "lead", "--json").json()["error"]
    assert still["code"] == "claim_unproven" and "runs-python" in still["message"] and "out.txt" in still["message"]
    assert cli("apply", "T001", "--reject", "--reason", "unproven", "--reason-code", "evidence", "--actor", "lead",
               "--json").json()["reason_code"] == "evidence"  # incomplete proofs: the reason stands
    cli("task-status", "T001", "ready", "--actor", "lead", "--json")
    generation = _claim(cli)
    (root / "out.txt").write_text("made\n")
    made = cli("attest", "T001", "--actor", "agent-1", "--json").json()
    cli("progress", "T001", "--actor", "agent-1", "--attestation-file", made["path"], "--json")
    proof = _prove(cli, "python", "-V")
    out = cli("submit", "T001", "--actor", "agent-1", "--generation", str(generation), "--proof", proof, "--json")
    assert out.json()["missing_claim_bound_proofs"] == ["python -c pass"]
    decided = cli("apply", "T001", "--approve", "--actor", "lead", "--json").json()
    assert decided["decision"] == "accepted" and decided["evidence_gaps"] == ["no passing proof of `python -c pass`"]
