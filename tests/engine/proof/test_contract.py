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
    cli("config", "--evidence-gate", "advisory", "--actor", "lead", "--json")  # the enforcing gate refuses this
    cli("submit", "T001", "--actor", "agent-1", "--command", "python -c pass", "--command", "python -V", "--json")
    cli("config", "--evidence-gate", "enforcing", "--actor", "lead", "--json")
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


def test_an_enforcing_gate_refuses_a_submission_without_proofs_and_names_the_commands_that_prove_it(
        anvil_env, cli) -> None:
    """Issue 20 item 3: nothing is written, the claim stays live, and pasting the commands the
    refusal names (each proof run, then the submit) hands the work in, named claims included."""
    import shlex

    root = make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env, mini_prd(TASK))
    generation = _claim(cli)
    (root / "out.txt").write_text("made\n")
    git(root, "add", "out.txt")
    git(root, "commit", "-q", "-m", "work")
    before = cli("show", "T001", "--json").json()
    refused = cli("submit", "T001", "--actor", "agent-1", "--command", "python -c pass", "--file", "out.txt",
                  "--json")
    error = refused.json()["error"]
    assert refused.code == 5 and error["code"] == "submission_unproven"
    assert error["details"]["missing"] == ["python -c pass", "python -V"]  # the named claim's command too
    after = cli("show", "T001", "--json").json()
    assert after["status"] == "claimed" and after["claim"]["generation"] == generation
    assert after["history"] == before["history"], "a refused submission writes nothing"
    human = cli("submit", "T001", "--actor", "agent-1", "--command", "python -c pass")
    assert human.code == 5 and "anvil proof run T001" in human.stderr and "the claim stays live" in human.stderr
    *proofs, submit = error["details"]["next_commands"]
    assert [argv[:3] for argv in proofs] == [["anvil", "proof", "run"]] * 2 and submit[:2] == ["anvil", "submit"]
    for argv in proofs:
        assert cli(*argv[1:]).code == 0, shlex.join(argv)  # pasted as given
    done = cli(*submit[1:], "--file", "out.txt", "--json")
    assert done.code == 0 and done.json()["missing_claim_bound_proofs"] == [], done.stdout
    assert cli("apply", "T001", "--approve", "--actor", "lead", "--json").json()["decision"] == "accepted"


def test_an_advisory_gate_accepts_a_submission_without_proofs_with_a_warning_and_the_gap_in_json(
        anvil_env, cli) -> None:
    root = make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env, mini_prd(TASK))
    cli("config", "--evidence-gate", "advisory", "--actor", "lead", "--json")
    _claim(cli)
    (root / "out.txt").write_text("made\n")
    git(root, "add", "out.txt")
    git(root, "commit", "-q", "-m", "work")
    human = cli("submit", "T001", "--actor", "agent-1", "--command", "python -c pass", "--file", "out.txt")
    assert human.code == 0 and "warning: no passing proof of python -c pass, python -V" in " ".join(
        human.stdout.split()), human.stdout
    evidence = cli("show", "T001", "--json").json()["history"]["evidence"][0]
    assert evidence["trust"]["trust_level"] == "unproven"
    rejected = cli("apply", "T001", "--reject", "--reason", "prove it", "--reason-code", "evidence", "--actor", "lead",
                   "--json")
    assert rejected.code == 0
    cli("task-status", "T001", "ready", "--actor", "lead", "--json")
    _claim(cli)
    (root / "out.txt").write_text("made again\n")
    git(root, "commit", "-q", "-am", "again")
    out = cli("submit", "T001", "--actor", "agent-1", "--command", "python -c pass", "--file", "out.txt", "--json")
    assert out.code == 0 and out.json()["missing_claim_bound_proofs"] == ["python -c pass", "python -V"]
