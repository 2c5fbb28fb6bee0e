"""Forged proofs, as an implementer that wants its work marked done without doing it would make them.

Every variant from issue 19 starts from a real artifact of ``anvil proof run``: a failing run edited to
pass with its digest recomputed, a rewritten argv, generation, task binding or nonce, and a signed proof
with its signature removed (or kept over an edited body). Each one is refused, or is accepted as what it
is (the implementer's ``client_reported`` word), and none can satisfy the enforcing gate that requires
``verified`` proofs (on by default in a git mode): that needs a verifier who is not the implementer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.storage.canonical import canonical_json, sha256_hex
from tests.gitrepo import git, make_repo, plan_in_repo
from tests.ops.support import op

VERIFY = ["python", "-m", "unittest", "-q", "tests/test_store.py"]
Edit = Callable[[dict[str, Any]], None]


@pytest.fixture
def failing(anvil_env, cli, tmp_path):  # type: ignore[no-untyped-def]
    """T001 claimed on a branch in a git mode (require_verified: on), a commit that does not do the work,
    and the real, failing proof of its verification command."""
    root = make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env)
    cli("config", "--git-mode", "branch", "--actor", "lead", "--json")
    assert cli("claim", "T001", "--actor", "agent-1", "--json").code == 0
    (root / "notes.txt").write_text("not the work\n")
    git(root, "add", "notes.txt")
    git(root, "commit", "-q", "-m", "looks busy")
    out = cli("proof", "run", "T001", "--actor", "agent-1", "--json", "--", *VERIFY)
    assert out.code == 5 and out.json()["exit_code"] != 0
    return root, Path(out.json()["path"])


def _forge(path: Path, edit: Edit, *, signature: Any = "keep") -> None:
    """Edit the artifact's body, recompute its digest and write it back in canonical form."""
    document = json.loads(path.read_bytes())
    edit(document["body"])
    document["digest"] = sha256_hex(canonical_json(document["body"]))
    if signature != "keep":
        document["signature"] = signature
    path.write_bytes(canonical_json(document).encode("utf-8"))


def _passing(body: dict[str, Any]) -> None:
    body["exit_code"] = 0
    body["output_excerpt"] = "OK"


def _rewritten_argv(body: dict[str, Any]) -> None:
    """A passing run of a trivial command, rewritten to claim the verification command."""
    body["argv"] = list(VERIFY)
    body["command"] = " ".join(VERIFY)


TRIVIAL = ["python", "-c", "pass"]
VARIANTS: dict[str, tuple[list[str] | None, Edit, str | None]] = {
    # name: (the command proved instead of the failing verification command, the edit, the refusal)
    "exit code edited, digest recomputed": (None, _passing, None),
    "argv rewritten": (TRIVIAL, _rewritten_argv, None),
    "argv rewritten but not its command": (TRIVIAL, lambda b: b.update(argv=list(VERIFY)), "proof_tampered"),
    "generation rewritten": (None, lambda b: (_passing(b), b.update(generation=b["generation"] + 1)), "proof_stale"),
    "task binding rewritten": (None, lambda b: (_passing(b), b.update(task_id="T002")), "proof_mismatch"),
    "nonce rewritten": (None, lambda b: (_passing(b), b.update(nonce="0" * 32)), None),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_forged_proof_is_refused_or_stays_client_reported_and_never_satisfies_the_verified_gate(
        failing, cli, variant: str) -> None:
    _, path = failing
    instead, edit, refusal = VARIANTS[variant]
    if instead is not None:
        path = Path(cli("proof", "run", "T001", "--actor", "agent-1", "--json", "--", *instead).json()["path"])
    _forge(path, edit)
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", str(path), "--json")
    if refusal is not None:
        assert out.code == 5 and out.json()["error"]["code"] == refusal, out.stdout
        assert op(dict(os.environ), "get_task", task_id="T001")["status"] == "claimed"
        return
    assert out.code == 0, out.stdout
    receipt = out.json()["claim_bound_command_proofs"][0]
    assert receipt["trust_mode"] == "client_reported"
    _never_approved(cli)


def _never_approved(cli) -> None:  # type: ignore[no-untyped-def]
    refused = cli("apply", "T001", "--approve", "--actor", "lead", "--json")
    error = refused.json()["error"]
    assert refused.code == 5 and error["code"] == "claim_unproven" and error["details"]["required_trust"] == "verified"
    assert "anvil verify-task T001" in error["message"]
    assert op(dict(os.environ), "get_task", task_id="T001")["status"] == "needs_review"


@pytest.fixture
def signed(failing, cli, tmp_path):  # type: ignore[no-untyped-def]
    """The failing proof made again, signed with a key on the trust list."""
    key = cli("keys", "generate", "--out", str(tmp_path / "k.pem"), "--json").json()
    cli("trust", "add", key["public_key"], "--actor", "lead", "--json")
    out = cli("proof", "run", "T001", "--actor", "agent-1", "--key-file", str(tmp_path / "k.pem"), "--json", "--",
              *VERIFY)
    assert out.json()["signed_by"] == key["key_id"]
    return Path(out.json()["path"]), key


def test_a_signed_proof_with_its_signature_removed_is_refused_never_read_as_unsigned(signed, cli) -> None:
    path, _ = signed
    _forge(path, _passing, signature=None)
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", str(path), "--json")
    error = out.json()["error"]
    assert out.code == 5 and error["code"] == "proof_tampered" and "signature" in error["message"]


def test_a_signed_proof_whose_body_was_edited_fails_its_signature(signed, cli) -> None:
    path, _ = signed
    _forge(path, _passing)
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", str(path), "--json")
    assert out.code == 5 and out.json()["error"]["code"] == "proof_tampered"


def test_a_signature_pasted_onto_an_unsigned_body_is_refused(signed, failing, cli) -> None:
    path, _ = signed
    signature = json.loads(path.read_bytes())["signature"]
    unsigned = cli("proof", "run", "T001", "--actor", "agent-1", "--json", "--", "python", "-c", "pass")
    target = Path(unsigned.json()["path"])
    _forge(target, lambda body: None, signature=signature)
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", str(target), "--json")
    assert out.code == 5 and out.json()["error"]["code"] == "proof_tampered"


def test_stripping_signature_and_signer_and_recomputing_the_digest_leaves_a_client_reported_proof(signed,
                                                                                                   cli) -> None:
    path, _ = signed
    _forge(path, lambda body: (_passing(body), body.update(signer=None)), signature=None)
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", str(path), "--json")
    assert out.code == 0 and out.json()["claim_bound_command_proofs"][0]["trust_mode"] == "client_reported"
    _never_approved(cli)


def test_a_genuinely_signed_passing_proof_is_client_reported_too(failing, cli, tmp_path) -> None:
    root, _ = failing
    from anvil.ops.scenarios import STORE_PY, TEST_STORE_PY

    for name, text in (("shortlink/__init__.py", ""), ("shortlink/store.py", STORE_PY),
                       ("tests/test_store.py", TEST_STORE_PY)):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "shortlink", "tests")
    git(root, "commit", "-q", "-m", "the work")
    key = cli("keys", "generate", "--out", str(tmp_path / "k.pem"), "--json").json()
    cli("trust", "add", key["public_key"], "--actor", "lead", "--json")
    proof = cli("proof", "run", "T001", "--actor", "agent-1", "--key-file", str(tmp_path / "k.pem"), "--json", "--",
                *VERIFY).json()
    assert proof["passed"] and proof["trust_mode"] == "client_reported"
    out = cli("submit", "T001", "--actor", "agent-1", "--proof", proof["path"], "--json").json()
    assert out["claim_bound_command_proofs"][0]["issuer_id"] == key["key_id"]  # who asserted it, recorded
    _never_approved(cli)
